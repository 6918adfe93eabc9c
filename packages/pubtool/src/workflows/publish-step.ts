/** How a step runs `pubtool publish`. */
export type StepKind = "run" | "action";

// `pubtool publish`, also through npx / npm exec / pnpm / yarn / bunx, with an optional @version.
const RUN_PATTERN =
  /(?:^|[\s;&|(`])(?:npx\s+(?:(?:-y|--yes)\s+)?|npm\s+exec\s+(?:--\s+)?|pnpm\s+(?:exec\s+|dlx\s+)?|yarn\s+(?:dlx\s+)?|bunx\s+)?pubtool(?:@\S+)?\s+publish\b/;

// `uses: <owner>/pubtool@<ref>` or a path inside such a repository.
const ACTION_PATTERN = /^[A-Za-z0-9_.-]+\/pubtool(?:\/[^@\s]*)?@\S+$/;

/** True when one line of shell runs `pubtool publish`. */
export function lineRunsPublish(line: string): boolean {
  return RUN_PATTERN.test(line);
}

/** True when `uses` names the tool's own workflow action. */
export function isPubtoolAction(uses: unknown): boolean {
  return typeof uses === "string" && ACTION_PATTERN.test(uses.trim());
}

/**
 * Classifies a step: "active" when it publishes, "commented" when its `run` script has the
 * publish command only on shell-comment lines, `null` otherwise.
 */
export function classifyStep(
  step: unknown,
): { kind: StepKind; state: "active" | "commented" } | null {
  if (step === null || typeof step !== "object") return null;
  const record = step as Record<string, unknown>;
  if (isPubtoolAction(record.uses)) {
    const inputs = record.with as Record<string, unknown> | undefined;
    if (inputs && typeof inputs === "object" && String(inputs.command).trim() === "publish") {
      return { kind: "action", state: "active" };
    }
    return null;
  }
  if (typeof record.run !== "string") return null;
  let commented = false;
  for (const line of record.run.split("\n")) {
    const trimmed = line.trim();
    if (trimmed.startsWith("#")) {
      if (lineRunsPublish(trimmed.replace(/^#+/, ""))) commented = true;
      continue;
    }
    if (lineRunsPublish(line)) return { kind: "run", state: "active" };
  }
  return commented ? { kind: "run", state: "commented" } : null;
}

/**
 * Finds YAML-commented publishing steps in raw workflow text: a commented line that runs
 * `pubtool publish`, or a commented `uses: <owner>/pubtool@...` followed by a commented
 * `command: publish`. Returns 1-based line numbers.
 */
export function findCommentedSteps(text: string): number[] {
  const lines = text.split(/\r?\n/);
  const found: number[] = [];
  const commentBody = (line: string): string | null => {
    const match = /^\s*#+(.*)$/.exec(line);
    return match ? (match[1] ?? "") : null;
  };
  for (let i = 0; i < lines.length; i++) {
    const body = commentBody(lines[i] ?? "");
    if (body === null) continue;
    if (lineRunsPublish(body)) {
      found.push(i + 1);
      continue;
    }
    const uses = /^\s*-?\s*uses:\s*(\S+)/.exec(body);
    if (uses && isPubtoolAction(uses[1])) {
      for (let j = i + 1; j < Math.min(lines.length, i + 8); j++) {
        const next = commentBody(lines[j] ?? "");
        if (next === null) break;
        if (/^\s*command:\s*["']?publish["']?\s*$/.test(next)) {
          found.push(i + 1);
          break;
        }
      }
    }
  }
  return found;
}
