import type { RegistryKind } from "../config/schema.js";
import { describeStep } from "./package-steps.js";

/** The outcome of one check or phase: pass, fail, or neutral (skipped, not applicable). */
export type Status = "pass" | "fail" | "neutral";

/** One check: a mark, a label, and indented `trust-policy: ...` messages. */
export interface Check {
  id: string;
  label: string;
  status: Status;
  messages: string[];
}

/** A check that passes until one of its conditions says otherwise. */
export function passingCheck(id: string, label: string): Check {
  return { id, label, status: "pass", messages: [] };
}

/** One phase of doctor, printed under its heading line. */
export interface Phase {
  id: "local" | "declared" | "registry";
  heading: string;
  status: Status;
  checks: Check[];
}

/** One publishing step, as doctor lists it under the packages it publishes. */
export interface PublishingStepRef {
  /** The workflow file the host runs (the caller of a reusable workflow). */
  workflow: string;
  /** The file that holds the step. */
  file: string;
  job: string;
  /** `release.yml: job publish`, with the chain of calls for a reusable workflow. */
  via: string;
  /** 1-based line of the step in `file`. */
  line: number;
  /** The config the step reads, relative to the repository root; `null` when it finds none. */
  config: string | null;
}

/** A package of doctor's config (its registry and name) and the steps that publish it. */
export interface PackageSteps {
  name: string;
  kind: RegistryKind;
  /** The registry judged: `null` for the public one, else the variable that names another. */
  registry: string | null;
  steps: PublishingStepRef[];
  /** Steps that may publish it, but whose target cannot be known locally. */
  undetermined: (PublishingStepRef & { why: string })[];
}

/** The whole doctor run, as printed by `--json`. */
export interface DoctorReport {
  ok: boolean;
  phases: Phase[];
  packages: PackageSteps[];
  note: string;
}

/** The closing note: pyreg and jsreg registrations cannot be read back. */
export const CLOSING_NOTE =
  "note: workflow and environment names are not diffed against pyreg or jsreg registrations " +
  "(those registries expose no usable read endpoint); compare them on the registry's website.";

/** Fail when any status fails, neutral when all are neutral (or there are none), else pass. */
export function combinedStatus(statuses: readonly Status[]): Status {
  if (statuses.includes("fail")) return "fail";
  if (statuses.every((status) => status === "neutral")) return "neutral";
  return "pass";
}

/** A phase is failed when any check fails, neutral when every check is neutral. */
export function phaseStatus(checks: readonly Check[]): Status {
  return combinedStatus(checks.map((check) => check.status));
}

/** A phase with nothing to judge: one neutral check, under the phase's id, that says why. */
export function neutralPhase(id: Phase["id"], heading: string, label: string): Phase {
  const check: Check = { id, label, status: "neutral", messages: [] };
  return { id, heading, status: "neutral", checks: [check] };
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
  if (report.packages.length > 0) {
    lines.push("published by:");
    for (const entry of report.packages) {
      const registry = entry.registry === null ? "" : `, ${entry.registry}`;
      const none = entry.steps.length + entry.undetermined.length === 0;
      lines.push(`  ${entry.name} (${entry.kind}${registry})${none ? ": no publishing step" : ""}`);
      for (const step of entry.steps) lines.push(`      ${describeStep(step)}`);
      for (const step of entry.undetermined) {
        lines.push(`      maybe: ${describeStep(step)} (${step.why})`);
      }
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
