import { RUSTREG_TOKEN_VARIABLES } from "../publish/auth-mode.js";

/** The registry's authentication action (`rust-lang/crates-io-auth-action@v1`). */
const AUTH_ACTION = /^rust-lang\/crates-io-auth-action@\S+$/;

/** A step of a job, where it is, and whether it is the registry's auth action. */
export interface StepAt {
  index: number;
  line: number;
  id: string | null;
  uses: string | null;
  isAuth: boolean;
}

/**
 * Why the token a publishing step reads cannot be there when it runs: the step it names does
 * not exist, runs later, or belongs to another job (a step's outputs reach only later steps of
 * its own job, and the host drops a masked token from job outputs).
 */
export type TokenSourceProblem =
  | { kind: "missing"; reference: string; variable: string }
  | { kind: "later"; reference: string; variable: string; source: StepAt }
  | { kind: "other-job"; reference: string; variable: string; job: string; source: StepAt };

/** How the auth action's `token` output reaches a publishing step. */
export interface RustregTokenWiring {
  /** The auth step's `id`, `null` when it has none (its output cannot be referenced then). */
  authStepId: string | null;
  /** The auth step before the publishing step, `null` when there is none. */
  authStep: StepAt | null;
  /** 1-based line of the publishing step. */
  publishLine: number;
  /** Variables of the publishing step that hold the auth action's token output. */
  wiredAs: string[];
  /** The variables pubtool reads, in its order of precedence, and what the step sets them to. */
  read: { name: string; value: string }[];
  /** Set when the token the step reads comes from no step that has run before it. */
  problem: TokenSourceProblem | null;
}

/** The steps of one job as the scan sees them. */
export interface JobSteps {
  steps: readonly unknown[];
  lines: readonly number[];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function stepsAt({ steps, lines }: JobSteps): StepAt[] {
  return steps.map((step, index) => {
    const record =
      step !== null && typeof step === "object" ? (step as Record<string, unknown>) : {};
    const id = typeof record.id === "string" && record.id.trim() !== "" ? record.id.trim() : null;
    const uses = typeof record.uses === "string" ? record.uses.trim() : null;
    return {
      index,
      line: lines[index] ?? 0,
      id,
      uses,
      isAuth: uses !== null && AUTH_ACTION.test(uses),
    };
  });
}

/** `steps.auth.outputs.token` or `needs.auth.outputs.token` in an expression, parsed. */
const REFERENCE =
  /\b(steps|needs)\s*(?:\.\s*([A-Za-z_][\w-]*)|\[\s*['"]([^'"]+)['"]\s*\])\s*\.\s*outputs\s*\.\s*([\w-]+)/;

/** Where the rustreg token variables of the publishing step come from, when from an output. */
function outputReferences(
  variables: Readonly<Record<string, string>>,
): { variable: string; scope: "steps" | "needs"; name: string; text: string }[] {
  const found = [];
  for (const variable of RUSTREG_TOKEN_VARIABLES) {
    const match = REFERENCE.exec(variables[variable] ?? "");
    if (match === null) continue;
    found.push({
      variable,
      scope: match[1] as "steps" | "needs",
      name: match[2] ?? match[3] ?? "",
      text: match[0].replace(/\s+/g, ""),
    });
  }
  return found;
}

/**
 * Follows the rustreg token of the publishing step at `index` of a job to the step that makes
 * it. `others` are the other jobs of the same workflow file, by id. `null` when the job neither
 * runs the auth action nor reads a token from a step's or job's output.
 */
export function rustregTokenWiring(
  job: JobSteps,
  index: number,
  variables: Readonly<Record<string, string>>,
  others: ReadonlyMap<string, JobSteps>,
): RustregTokenWiring | null {
  const all = stepsAt(job);
  const before = all.slice(0, index);
  const auth = [...before].reverse().find((step) => step.isAuth) ?? null;
  const references = outputReferences(variables);
  const laterAuth = all.slice(index + 1).find((step) => step.isAuth) ?? null;
  if (auth === null && references.length === 0 && laterAuth === null) return null;
  const id = auth?.id ?? null;
  const output =
    id === null
      ? null
      : new RegExp(
          `steps\\s*(?:\\.\\s*${escapeRegExp(id)}|\\[\\s*['"]${escapeRegExp(id)}['"]\\s*\\])\\s*\\.\\s*outputs\\s*\\.\\s*token\\b`,
        );
  const wiredAs =
    output === null
      ? []
      : Object.entries(variables)
          .filter(([, value]) => output.test(value))
          .map(([name]) => name);
  const read = RUSTREG_TOKEN_VARIABLES.filter((name) => (variables[name] ?? "") !== "").map(
    (name) => ({ name, value: variables[name] ?? "" }),
  );
  // An auth step after this one serves a later publishing step when one reads its token.
  const servesLater =
    laterAuth?.id != null &&
    job.steps
      .slice(laterAuth.index + 1)
      .some((step) => JSON.stringify(step).includes(`steps.${laterAuth.id ?? ""}.outputs`));
  const problem = sourceProblem(all, index, references, others, servesLater ? null : laterAuth);
  // Only a later auth step that serves a later publishing step: nothing to judge here.
  if (auth === null && references.length === 0 && problem === null) return null;
  const publishLine = all[index]?.line ?? 0;
  return { authStepId: id, authStep: auth, publishLine, wiredAs, read, problem };
}

/** The first variable pubtool reads whose token no earlier step of this job makes. */
function sourceProblem(
  all: readonly StepAt[],
  index: number,
  references: ReturnType<typeof outputReferences>,
  others: ReadonlyMap<string, JobSteps>,
  laterAuth: StepAt | null,
): TokenSourceProblem | null {
  for (const { variable, scope, name, text } of references) {
    if (scope === "needs") {
      const other = others.get(name);
      const source = other === undefined ? undefined : stepsAt(other).find((step) => step.isAuth);
      if (source !== undefined) {
        return { kind: "other-job", reference: text, variable, job: name, source };
      }
      continue;
    }
    const own = all.find((step) => step.id === name);
    if (own !== undefined && own.index < index) continue;
    if (own !== undefined) return { kind: "later", reference: text, variable, source: own };
    for (const [jobName, other] of others) {
      const source = stepsAt(other).find((step) => step.id === name);
      if (source !== undefined) {
        return { kind: "other-job", reference: text, variable, job: jobName, source };
      }
    }
    return { kind: "missing", reference: text, variable };
  }
  if (references.length === 0 && laterAuth !== null && !all.slice(0, index).some((s) => s.isAuth)) {
    return { kind: "later", reference: "", variable: "", source: laterAuth };
  }
  return null;
}
