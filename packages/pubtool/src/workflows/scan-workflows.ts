import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { isMap, isScalar, LineCounter, parseDocument, type Node } from "yaml";
import { classifyStep, findCommentedSteps, type StepKind } from "./publish-step.js";
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
  /** The caller's job id, for a job inside a reusable workflow. */
  callerJob: string | null;
  /** The file that holds the publishing job. */
  file: string;
  job: string;
  stepKind: StepKind;
  line: number;
  permissions: EffectivePermissions;
  /** The job's `environment` name, `null` when it has none. */
  environment: string | null;
}

/** A publishing step that is commented out, with the job it sits in when known. */
export interface CommentedStep {
  file: string;
  job: string | null;
  line: number;
}

/** Everything phase 1 and 2 need from `.github/workflows`. */
export interface WorkflowScan {
  dirExists: boolean;
  files: string[];
  errors: { file: string; message: string }[];
  jobs: PublishingJob[];
  commented: CommentedStep[];
}

function asRecord(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
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

function parseWorkflow(dir: string, file: string): Workflow {
  const text = readFileSync(join(dir, file), "utf8");
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, merge: true, uniqueKeys: false });
  if (doc.errors.length > 0) {
    const first = doc.errors[0];
    throw new Error(first ? first.message.split("\n")[0] : "invalid YAML");
  }
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

/** The workflow file a job's `uses: ./.github/workflows/x.yml` calls, if local. */
function calledFile(uses: unknown): string | null {
  if (typeof uses !== "string") return null;
  const match = /^\.\/\.github\/workflows\/([^/@\s]+\.ya?ml)$/.exec(uses.trim());
  return match ? (match[1] ?? null) : null;
}

function isReusable(workflow: Workflow): boolean {
  const on = workflow.data.on;
  if (on === "workflow_call") return true;
  if (Array.isArray(on)) return on.includes("workflow_call");
  return asRecord(on)?.workflow_call !== undefined;
}

/**
 * Reads `.github/workflows/*.yml` and `*.yaml` under `root` and finds every job that publishes,
 * following local reusable workflows from their callers.
 */
export function scanWorkflows(root: string): WorkflowScan {
  const dir = join(root, WORKFLOWS_DIR);
  const scan: WorkflowScan = { dirExists: false, files: [], errors: [], jobs: [], commented: [] };
  if (!existsSync(dir)) return scan;
  scan.dirExists = true;
  scan.files = readdirSync(dir)
    .filter((name) => /\.ya?ml$/.test(name))
    .sort();
  const workflows = new Map<string, Workflow>();
  for (const file of scan.files) {
    try {
      workflows.set(file, parseWorkflow(dir, file));
    } catch (error) {
      scan.errors.push({
        file,
        message: `invalid YAML: ${error instanceof Error ? error.message : String(error)}`,
      });
    }
  }

  // Publishing jobs per file, before callers are considered.
  interface LocalJob {
    job: string;
    record: Record<string, unknown>;
    stepKind: StepKind;
    line: number;
  }
  const local = new Map<string, LocalJob[]>();
  for (const workflow of workflows.values()) {
    const jobs = asRecord(workflow.data.jobs) ?? {};
    const found: LocalJob[] = [];
    const lines = new Set<number>(workflow.commentedLines);
    for (const [job, value] of Object.entries(jobs)) {
      const record = asRecord(value);
      if (!record || !Array.isArray(record.steps)) continue;
      let active: LocalJob | null = null;
      record.steps.forEach((step, index) => {
        const kind = classifyStep(step);
        const line = workflow.stepLines.get(job)?.[index] ?? workflow.jobLines.get(job) ?? 0;
        if (kind?.state === "active" && active === null) {
          active = { job, record, stepKind: kind.kind, line };
        } else if (kind?.state === "commented") {
          lines.add(line);
        }
      });
      if (active) found.push(active);
    }
    local.set(workflow.file, found);
    for (const line of [...lines].sort((a, b) => a - b)) {
      scan.commented.push({ file: workflow.file, job: jobAtLine(workflow, line), line });
    }
  }

  // Resolve each publishing job from the workflows that trigger it.
  const called = new Set<string>();
  for (const workflow of workflows.values()) {
    const jobs = asRecord(workflow.data.jobs) ?? {};
    for (const [callerJob, value] of Object.entries(jobs)) {
      const record = asRecord(value);
      const target = record ? calledFile(record.uses) : null;
      if (!record || !target) continue;
      const callee = workflows.get(target);
      if (!callee) continue;
      called.add(target);
      const callerPermissions = resolvePermissions(
        workflow.data.permissions,
        record.permissions,
        "caller's ",
      );
      for (const job of local.get(target) ?? []) {
        scan.jobs.push({
          entryFile: workflow.file,
          callerJob,
          file: target,
          job: job.job,
          stepKind: job.stepKind,
          line: job.line,
          permissions: resolveCalledPermissions(
            callerPermissions,
            callee.data.permissions,
            job.record.permissions,
          ),
          environment: environmentOf(job.record),
        });
      }
    }
  }
  for (const workflow of workflows.values()) {
    // A reusable workflow is judged through its callers; alone only when nothing calls it.
    if (called.has(workflow.file) && isReusable(workflow)) continue;
    for (const job of local.get(workflow.file) ?? []) {
      scan.jobs.push({
        entryFile: workflow.file,
        callerJob: null,
        file: workflow.file,
        job: job.job,
        stepKind: job.stepKind,
        line: job.line,
        permissions: resolvePermissions(workflow.data.permissions, job.record.permissions),
        environment: environmentOf(job.record),
      });
    }
  }
  return scan;
}

/** `release.yml: job publish` or `release.yml: job release → publish.yml: job publish`. */
export function describeJob(job: PublishingJob): string {
  if (job.callerJob === null) return `${job.entryFile}: job ${job.job}`;
  return `${job.entryFile}: job ${job.callerJob} (calls ${job.file}: job ${job.job})`;
}
