import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { isMap, isScalar, LineCounter, parseDocument, type Node } from "yaml";
import {
  classifyStep,
  findCommentedSteps,
  isLiterallyFalse,
  publishInvocation,
  type Scripts,
  type StepKind,
} from "./publish-step.js";
import { type JobSteps, type RustregTokenWiring, rustregTokenWiring } from "./rustreg-token.js";
import { resolveStepTarget, type StepTarget } from "./step-target.js";
import {
  type EffectivePermissions,
  resolveCalledPermissions,
  resolvePermissions,
} from "./permissions.js";

/** The folder the workflow host reads workflows from, relative to the repository root. */
export const WORKFLOWS_DIR = ".github/workflows";

/** One parsed workflow file. */
export interface Workflow {
  file: string;
  data: Record<string, unknown>;
  /** 1-based line where each job's key starts. */
  jobLines: Map<string, number>;
  /** Line counts for step lookups: `steps[i]` start lines per job. */
  stepLines: Map<string, number[]>;
  commentedLines: number[];
}

/** A job whose steps publish, seen from the workflow that triggers it. */
export interface PublishingJob {
  /** The workflow file the host runs (the caller for a reusable workflow). */
  entryFile: string;
  /** The top-level caller's job id, for a job inside a reusable workflow. */
  callerJob: string | null;
  /** The calling jobs from the entry workflow down, empty for a job the host runs directly. */
  chain: CallLink[];
  /** The file that holds the publishing job. */
  file: string;
  job: string;
  stepKind: StepKind;
  line: number;
  permissions: EffectivePermissions;
  /** The job's `environment` name (maybe an expression, see `isExpression`), `null` when none. */
  environment: string | null;
  /** Which config, packages and registry each publishing step of the job publishes. */
  targets: StepTarget[];
  /** How the registry's auth action's token reaches the first publishing step after it. */
  rustregToken: RustregTokenWiring | null;
  /** The events the entry workflow runs on. */
  triggers: string[];
}

/** A publishing step that is commented out, with the job it sits in when known. */
export interface CommentedStep {
  file: string;
  job: string | null;
  line: number;
}

/** A job that calls a reusable workflow in another repository, which doctor cannot read. */
export interface ExternalCall {
  /** The workflow the host runs (the top-level caller). */
  entryFile: string;
  file: string;
  job: string;
  uses: string;
  /** The most the called workflow's jobs can have: what this job grants. */
  grant: EffectivePermissions;
}

/** Everything phase 1 and 2 need from `.github/workflows`. */
export interface WorkflowScan {
  dirExists: boolean;
  files: string[];
  errors: { file: string; message: string }[];
  jobs: PublishingJob[];
  commented: CommentedStep[];
  /** Jobs calling a reusable workflow doctor cannot read (another repository). */
  external: ExternalCall[];
}

function asRecord(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

/** True for a value with a `${{ ... }}` expression, which only the host can evaluate. */
export function isExpression(value: string): boolean {
  return value.includes("${{");
}

/** The environment name of a job: a string or `{ name: ... }`. */
export function environmentOf(job: Record<string, unknown>): string | null {
  const env = job.environment;
  if (typeof env === "string" && env.trim() !== "") return env.trim();
  const record = asRecord(env);
  if (record && typeof record.name === "string" && record.name.trim() !== "") {
    return record.name.trim();
  }
  return null;
}

/**
 * One line for a YAML error: where, then what. The parser's own first line reads
 * "<what> at line L, column C:" and ends where it would show the source excerpt.
 */
export function describeYamlError(error: {
  message: string;
  linePos?: readonly { line: number; col: number }[];
}): string {
  const what = (error.message.split("\n")[0] ?? "")
    .replace(/\s+at line \d+, column \d+:?\s*$/, "")
    .replace(/[:\s]+$/, "");
  const position = error.linePos?.[0];
  const where = position === undefined ? "" : ` at line ${position.line}, column ${position.col}`;
  return `invalid YAML${where}: ${what || "the parser gave no reason"}`;
}

function parseWorkflow(dir: string, file: string): Workflow {
  let text: string;
  try {
    text = readFileSync(join(dir, file), "utf8");
  } catch (error) {
    const code = (error as { code?: string }).code;
    throw new Error(`cannot be read (${code ?? String(error)})`);
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, merge: true, uniqueKeys: false });
  const first = doc.errors[0];
  if (first !== undefined) throw new Error(describeYamlError(first));
  const data = asRecord(doc.toJS({ maxAliasCount: 1000 })) ?? {};
  const jobLines = new Map<string, number>();
  const stepLines = new Map<string, number[]>();
  const lineOf = (node: Node | null | undefined): number =>
    node?.range ? lineCounter.linePos(node.range[0]).line : 0;
  const jobsNode = doc.get("jobs", true);
  if (isMap(jobsNode)) {
    for (const pair of jobsNode.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      jobLines.set(key, lineOf(pair.key as Node));
      const steps = doc.getIn(["jobs", key, "steps"], true) as { items?: Node[] } | undefined;
      stepLines.set(
        key,
        (steps?.items ?? []).map((item) => lineOf(item)),
      );
    }
  }
  return { file, data, jobLines, stepLines, commentedLines: findCommentedSteps(text) };
}

/** The job whose block holds `line`: the last job key starting at or before it. */
function jobAtLine(workflow: Workflow, line: number): string | null {
  let best: string | null = null;
  let bestLine = 0;
  for (const [job, start] of workflow.jobLines) {
    if (start <= line && start >= bestLine) {
      best = job;
      bestLine = start;
    }
  }
  return best;
}

/**
 * The workflow file a job's `uses:` calls when it is in this repository, in every spelling the
 * host accepts: `./.github/workflows/x.yml`, `$/.github/workflows/x.yml[@ref]` and
 * `<this owner>/<this repo>/.github/workflows/x.yml@ref`.
 */
export function calledFile(uses: unknown, repository: string | null): string | null {
  if (typeof uses !== "string") return null;
  const value = uses.trim();
  const local = /^(?:\.|\$)\/\.github\/workflows\/([^/@\s]+\.ya?ml)(?:@\S+)?$/.exec(value);
  if (local) return local[1] ?? null;
  const remote = /^([^/\s]+\/[^/\s]+)\/\.github\/workflows\/([^/@\s]+\.ya?ml)@\S+$/.exec(value);
  if (remote && repository !== null && remote[1]?.toLowerCase() === repository.toLowerCase()) {
    return remote[2] ?? null;
  }
  return null;
}

/** The events a workflow runs on. */
export function triggers(workflow: Workflow | null): string[] {
  if (workflow === null) return [];
  const on = workflow.data.on ?? workflow.data.true;
  if (typeof on === "string") return [on];
  if (Array.isArray(on)) return on.map(String);
  const record = asRecord(on);
  return record ? Object.keys(record) : [];
}

/** The scripts of the root `package.json` (`npm run release` may run pubtool publish). */
function rootScripts(root: string): Scripts {
  try {
    const data = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      scripts?: unknown;
    };
    const scripts = asRecord(data.scripts) ?? {};
    return Object.fromEntries(
      Object.entries(scripts).filter(
        (entry): entry is [string, string] => typeof entry[1] === "string",
      ),
    );
  } catch {
    return {};
  }
}

/** One step of a chain of calls: the job in `file` that calls the next workflow. */
export interface CallLink {
  file: string;
  job: string;
}

/** A publishing job as its own file has it, before callers are considered. */
interface LocalJob {
  job: string;
  record: Record<string, unknown>;
  stepKind: StepKind;
  line: number;
  targets: StepTarget[];
  rustregToken: RustregTokenWiring | null;
}

/** A job that calls a reusable workflow: `target` is the called file, or the `uses:` value. */
interface LocalCall {
  job: string;
  record: Record<string, unknown>;
  target: string;
}

/** The jobs of one workflow file that publish or call, before callers are considered. */
interface FileJobs {
  publishing: LocalJob[];
  /** Calls of reusable workflows of this repository. */
  calls: LocalCall[];
  /** Calls of reusable workflows of another repository. */
  external: LocalCall[];
}

/** One job of a parsed workflow: its id and its mapping. */
interface JobInFile {
  workflow: Workflow;
  job: string;
  record: Record<string, unknown>;
}

/** What reading a file's jobs needs besides the file. */
interface ScanContext {
  root: string;
  /** `owner/repo` when known, to recognise this repository's workflows called by full name. */
  repository: string | null;
  scripts: Scripts;
  workflows: ReadonlyMap<string, Workflow>;
}

/** What following the calls from the workflows the host runs needs, and where it reports. */
interface CallWalk {
  workflows: ReadonlyMap<string, Workflow>;
  jobsByFile: ReadonlyMap<string, FileJobs>;
  scan: WorkflowScan;
  /** Cycles reported already: each is reported once, whichever caller reaches it. */
  cycles: Set<string>;
}

/**
 * Reads `.github/workflows/*.yml` and `*.yaml` under `root` and finds every job that publishes,
 * following reusable workflows of this repository (`repository` is `owner/repo` when known) from
 * each workflow the host triggers directly, to any depth; cycles are reported, not followed.
 */
export function scanWorkflows(root: string, repository: string | null = null): WorkflowScan {
  const dir = join(root, WORKFLOWS_DIR);
  const scan: WorkflowScan = {
    dirExists: false,
    files: [],
    errors: [],
    jobs: [],
    commented: [],
    external: [],
  };
  if (!existsSync(dir)) return scan;
  scan.dirExists = true;
  scan.files = readdirSync(dir)
    .filter((name) => /\.ya?ml$/.test(name))
    .sort();
  const context: ScanContext = {
    root,
    repository,
    scripts: rootScripts(root),
    workflows: parseWorkflows(dir, scan),
  };
  const jobsByFile = new Map<string, FileJobs>();
  for (const workflow of context.workflows.values()) {
    jobsByFile.set(workflow.file, fileJobs(workflow, context, scan));
  }
  const walk: CallWalk = { workflows: context.workflows, jobsByFile, scan, cycles: new Set() };
  for (const workflow of entryWorkflows(context.workflows, jobsByFile)) {
    walkCalls(walk, workflow.file, workflow.file, [], null);
  }
  return scan;
}

/** Parses each file of `scan.files`; one that cannot be read or parsed is an error of the scan. */
function parseWorkflows(dir: string, scan: WorkflowScan): Map<string, Workflow> {
  const workflows = new Map<string, Workflow>();
  for (const file of scan.files) {
    try {
      workflows.set(file, parseWorkflow(dir, file));
    } catch (error) {
      scan.errors.push({
        file,
        message: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return workflows;
}

/**
 * The jobs of `workflow` that publish or call another workflow. Calls of missing files become
 * errors of the scan, and the file's commented-out publishing steps go to `scan.commented`.
 */
function fileJobs(workflow: Workflow, context: ScanContext, scan: WorkflowScan): FileJobs {
  const found: FileJobs = { publishing: [], calls: [], external: [] };
  const commentedLines = new Set<number>(workflow.commentedLines);
  for (const [job, value] of Object.entries(asRecord(workflow.data.jobs) ?? {})) {
    const record = asRecord(value);
    if (!record) continue;
    // `if: false` (literally): the job never runs, so it neither publishes nor calls.
    if (isLiterallyFalse(record.if)) continue;
    recordCall(found, { workflow, job, record }, context, scan);
    const publishing = publishingJob({ workflow, job, record }, context, commentedLines);
    if (publishing !== null) found.publishing.push(publishing);
  }
  for (const line of [...commentedLines].sort((a, b) => a - b)) {
    scan.commented.push({ file: workflow.file, job: jobAtLine(workflow, line), line });
  }
  return found;
}

/** Files the job's `uses:` as a call here, a call of another repository, or a missing file. */
function recordCall(
  found: FileJobs,
  { workflow, job, record }: JobInFile,
  context: ScanContext,
  scan: WorkflowScan,
): void {
  const target = calledFile(record.uses, context.repository);
  if (target !== null && context.workflows.has(target)) {
    found.calls.push({ job, record, target });
  } else if (target !== null) {
    scan.errors.push({
      file: workflow.file,
      message: `job ${job} calls ${String(record.uses).trim()}, but ${WORKFLOWS_DIR}/${target} does not exist`,
    });
  } else if (typeof record.uses === "string" && /\.ya?ml@/.test(record.uses)) {
    found.external.push({ job, record, target: record.uses.trim() });
  }
}

/** The other jobs of `workflow` and their steps, where a token might be made instead. */
function otherJobs(workflow: Workflow, job: string): Map<string, JobSteps> {
  const others = new Map<string, JobSteps>();
  for (const [name, value] of Object.entries(asRecord(workflow.data.jobs) ?? {})) {
    const steps = asRecord(value)?.steps;
    if (name === job || !Array.isArray(steps)) continue;
    others.set(name, { steps, lines: workflow.stepLines.get(name) ?? [] });
  }
  return others;
}

/**
 * The job as a publishing job, `null` when none of its steps publishes. The lines of its
 * commented-out publishing steps are added to `commentedLines`.
 */
function publishingJob(
  { workflow, job, record }: JobInFile,
  context: ScanContext,
  commentedLines: Set<number>,
): LocalJob | null {
  if (!Array.isArray(record.steps)) return null;
  const steps: unknown[] = record.steps;
  let active: LocalJob | null = null;
  for (const [index, step] of steps.entries()) {
    const kind = classifyStep(step, context.scripts);
    const line = workflow.stepLines.get(job)?.[index] ?? workflow.jobLines.get(job) ?? 0;
    if (kind?.state === "commented") commentedLines.add(line);
    if (kind?.state !== "active") continue;
    const target = resolveStepTarget({
      root: context.root,
      workflow: workflow.data,
      job: record,
      step: asRecord(step) ?? {},
      invocation: publishInvocation(step, context.scripts),
      line,
    });
    const rustregToken = rustregTokenWiring(
      { steps, lines: workflow.stepLines.get(job) ?? [] },
      index,
      target.variables,
      otherJobs(workflow, job),
    );
    // The job is reported at its first publishing step; every step's target counts
    // (dspy publishes two packages from one job, one step each).
    if (active === null) {
      active = { job, record, stepKind: kind.kind, line, targets: [target], rustregToken };
    } else {
      active.targets.push(target);
      // A broken source outweighs a working one: it is the step that would publish nothing.
      if (active.rustregToken === null || rustregToken?.problem) active.rustregToken = rustregToken;
    }
  }
  return active;
}

/**
 * The workflows to walk from. A workflow only called by others is judged through its callers;
 * one that nothing here calls (perhaps called from another repository) is judged on its own.
 */
function entryWorkflows(
  workflows: ReadonlyMap<string, Workflow>,
  jobsByFile: ReadonlyMap<string, FileJobs>,
): Workflow[] {
  const called = new Set(
    [...jobsByFile.values()].flatMap((found) => found.calls.map((call) => call.target)),
  );
  return [...workflows.values()].filter((workflow) => {
    const events = triggers(workflow);
    const direct = events.some((event) => event !== "workflow_call");
    return direct || events.length === 0 || !called.has(workflow.file);
  });
}

/** Walks from `file` with the permissions its caller grants (`null` at the top level). */
function walkCalls(
  walk: CallWalk,
  entryFile: string,
  file: string,
  chain: CallLink[],
  grant: EffectivePermissions | null,
): void {
  const workflow = walk.workflows.get(file);
  const found = walk.jobsByFile.get(file);
  if (!workflow || !found) return;
  for (const job of found.publishing) {
    walk.scan.jobs.push({
      entryFile,
      callerJob: chain[0]?.job ?? null,
      chain,
      file,
      job: job.job,
      stepKind: job.stepKind,
      line: job.line,
      permissions: permissionsWithin(grant, workflow, job.record),
      environment: environmentOf(job.record),
      targets: job.targets,
      rustregToken: job.rustregToken,
      triggers: triggers(walk.workflows.get(entryFile) ?? null),
    });
  }
  for (const call of found.external) {
    walk.scan.external.push({
      entryFile,
      file,
      job: call.job,
      uses: call.target,
      grant: permissionsWithin(grant, workflow, call.record, "caller's "),
    });
  }
  for (const call of found.calls) {
    const cycle = callCycle(chain, file, call.target);
    if (cycle !== null) {
      reportCycle(walk, file, call.job, cycle);
      continue;
    }
    const granted = permissionsWithin(grant, workflow, call.record, "caller's ");
    walkCalls(walk, entryFile, call.target, [...chain, { file, job: call.job }], granted);
  }
}

/**
 * The permissions of a job of `workflow`, within what its caller grants (`null` at the top
 * level, where `prefix` starts the description: "caller's " for what a calling job grants).
 */
function permissionsWithin(
  grant: EffectivePermissions | null,
  workflow: Workflow,
  record: Record<string, unknown>,
  prefix = "",
): EffectivePermissions {
  return grant === null
    ? resolvePermissions(workflow.data.permissions, record.permissions, prefix)
    : resolveCalledPermissions(grant, workflow.data.permissions, record.permissions);
}

/** `a.yml → b.yml → a.yml` when `file` calling `target` closes a cycle of calls, else `null`. */
function callCycle(chain: readonly CallLink[], file: string, target: string): string | null {
  const path = [...chain.map((link) => link.file), file];
  if (!path.includes(target)) return null;
  return [...path.slice(path.indexOf(target)), target].join(" → ");
}

function reportCycle(walk: CallWalk, file: string, job: string, cycle: string): void {
  if (walk.cycles.has(cycle)) return;
  walk.cycles.add(cycle);
  walk.scan.errors.push({
    file,
    message: `job ${job}: reusable workflows call each other in a cycle (${cycle}); the host rejects it, and doctor does not follow it`,
  });
}

/**
 * `release.yml: job publish`, `release.yml: job release (calls publish.yml: job publish)`, and
 * for deeper chains `a.yml: job x (calls b.yml: job y → c.yml: job publish)`.
 */
export function describeJob(job: PublishingJob): string {
  const [first, ...rest] = job.chain;
  if (first === undefined) return `${job.entryFile}: job ${job.job}`;
  const path = [
    ...rest.map((link) => `${link.file}: job ${link.job}`),
    `${job.file}: job ${job.job}`,
  ];
  return `${first.file}: job ${first.job} (calls ${path.join(" → ")})`;
}
