/** The outcome of one check or phase: pass, fail, or neutral (skipped, not applicable). */
export type Status = "pass" | "fail" | "neutral";

/** One check: a mark, a label, and indented `trust-policy: ...` messages. */
export interface Check {
  id: string;
  label: string;
  status: Status;
  messages: string[];
}

/** One phase of doctor, printed under its heading line. */
export interface Phase {
  id: "local" | "declared" | "registry";
  heading: string;
  status: Status;
  checks: Check[];
}

/** The whole doctor run, as printed by `--json`. */
export interface DoctorReport {
  ok: boolean;
  phases: Phase[];
  note: string;
}

/** The closing note: pyreg and jsreg registrations cannot be read back. */
export const CLOSING_NOTE =
  "note: workflow and environment names are not diffed against pyreg or jsreg registrations " +
  "(those registries expose no usable read endpoint); compare them on the registry's website.";

/** A phase is failed when any check fails, neutral when every check is neutral. */
export function phaseStatus(checks: readonly Check[]): Status {
  if (checks.some((check) => check.status === "fail")) return "fail";
  if (checks.every((check) => check.status === "neutral")) return "neutral";
  return "pass";
}

const MARKS: Record<Status, string> = { pass: "✓", fail: "✗", neutral: "-" };

/** Renders the report for people. */
export function renderReport(report: DoctorReport): string {
  const lines: string[] = [];
  for (const phase of report.phases) {
    lines.push(`${phase.heading}:`);
    for (const check of phase.checks) {
      lines.push(`  ${MARKS[check.status]} ${check.label}`);
      for (const message of check.messages) lines.push(`      ${message}`);
    }
  }
  lines.push(report.note);
  const failed = report.phases.flatMap((phase) =>
    phase.checks.filter((check) => check.status === "fail"),
  ).length;
  lines.push(
    failed === 0 ? "doctor: ok" : `doctor: ${failed} check${failed === 1 ? "" : "s"} failed`,
  );
  return `${lines.join("\n")}\n`;
}
