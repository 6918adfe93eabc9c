import { existsSync } from "node:fs";
import { join, normalize, relative, sep } from "node:path";
import type { PackageEntry, RegistryKind } from "../config/schema.js";
import { type PublishInvocation, showExpression } from "./publish-step.js";

/** The config file name a publishing step finds by default. */
const CONFIG_FILE = "pubtool.toml";

/** The variables that point a kind at another registry (a test index, a mirror). */
export const REGISTRY_VARIABLES: Record<RegistryKind, readonly string[]> = {
  // cargo publishes to the index; PUBTOOL_RUSTREG_URL only changes where pubtool reads.
  rustreg: ["PUBTOOL_RUSTREG_INDEX"],
  pyreg: ["PUBTOOL_PYREG_UPLOAD_URL", "PUBTOOL_PYREG_URL"],
  jsreg: ["PUBTOOL_JSREG_URL"],
};

/** What one publishing step publishes, as far as the workflow file tells. */
export interface StepTarget {
  /** The config the step reads, relative to the repository root (`/`-separated); `null` if none. */
  config: string | null;
  /** `--package` selectors; empty for every package of the config. */
  packages: string[];
  /** The variables set for the step: workflow, job and step `env`, then inline assignments. */
  variables: Record<string, string>;
  /** Why the target cannot be known locally (an expression or shell variable), else `null`. */
  unknown: string | null;
  /** 1-based line of the publishing step in its workflow file. */
  line: number;
}

/** The packages of a config a publishing step reads, or why they cannot be read. */
export type StepConfig = { packages: readonly PackageEntry[] } | { problem: string };

/** The configs publishing steps read, by path relative to the repository root. */
export type StepConfigs = ReadonlyMap<string, StepConfig>;

function asRecord(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

/** True for a value only the host or the shell can evaluate (`${{ ... }}`, `$VAR`, `~`). */
function isDynamic(value: string): boolean {
  return value.includes("$") || value.startsWith("~") || value.includes("`");
}

function envOf(record: Record<string, unknown> | null): Record<string, string> {
  const env = asRecord(record?.env) ?? {};
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== null && value !== undefined) result[name] = String(value);
  }
  return result;
}

function workingDirectoryOf(record: Record<string, unknown> | null): string | undefined {
  const value = asRecord(asRecord(record?.defaults)?.run)?.["working-directory"];
  return typeof value === "string" ? value : undefined;
}

/** `dir` relative to the repository root, or `null` when it leaves the repository. */
function insideRoot(root: string, dir: string): string | null {
  const path = relative(root, normalize(join(root, dir)));
  if (path.startsWith("..")) return null;
  return path.split(sep).join("/");
}

/**
 * Works out which config, packages and registry a publishing step publishes: the step's
 * `--config` (relative to its working directory) or the nearest `pubtool.toml` from that folder
 * up to the root, as pubtool itself looks it up; its `--package` values; and the variables it
 * runs with. A part that needs an expression or a shell variable makes the target unknown.
 */
export function resolveStepTarget(options: {
  root: string;
  workflow: Record<string, unknown>;
  job: Record<string, unknown>;
  step: Record<string, unknown>;
  invocation: PublishInvocation | null;
  line: number;
}): StepTarget {
  const { root, workflow, job, step, invocation, line } = options;
  const variables = {
    ...envOf(workflow),
    ...envOf(job),
    ...envOf(step),
    ...(invocation?.assignments ?? {}),
  };
  const packages = invocation?.packages ?? [];
  const unknown = (why: string): StepTarget => ({
    config: null,
    packages,
    variables,
    unknown: showExpression(why),
    line,
  });
  // The working directory: `run:` steps honour `working-directory` and `defaults.run`;
  // actions run in the workspace root.
  const isRun = typeof step.run === "string";
  const stepDir =
    typeof step["working-directory"] === "string" ? step["working-directory"] : undefined;
  const base = isRun
    ? (stepDir ?? workingDirectoryOf(job) ?? workingDirectoryOf(workflow) ?? ".")
    : ".";
  const dirs = [base, ...(invocation?.cd ?? [])];
  const dynamicDir = dirs.find(isDynamic);
  if (dynamicDir !== undefined) return unknown(`its working directory comes from ${dynamicDir}`);
  const dynamicPackage = packages.find(isDynamic);
  if (dynamicPackage !== undefined) return unknown(`its --package is ${dynamicPackage}`);
  if (
    invocation?.config !== null &&
    invocation?.config !== undefined &&
    isDynamic(invocation.config)
  ) {
    return unknown(`its --config is ${invocation.config}`);
  }
  let dir = ".";
  for (const next of dirs) {
    const joined = insideRoot(root, next.startsWith("/") ? next : join(dir, next));
    if (joined === null) return unknown(`its working directory ${next} is outside the repository`);
    dir = joined === "" ? "." : joined;
  }
  if (invocation?.config !== null && invocation?.config !== undefined) {
    const config = insideRoot(root, join(dir, invocation.config));
    if (config === null)
      return unknown(`its --config ${invocation.config} is outside the repository`);
    return { config, packages, variables, unknown: null, line };
  }
  // The nearest pubtool.toml from the working directory up to the root.
  for (let current = dir; ;) {
    const candidate = current === "." ? CONFIG_FILE : `${current}/${CONFIG_FILE}`;
    if (existsSync(join(root, candidate)))
      return { config: candidate, packages, variables, unknown: null, line };
    if (current === ".") break;
    const parent = current.split("/").slice(0, -1).join("/");
    current = parent === "" ? "." : parent;
  }
  return { config: null, packages, variables, unknown: null, line };
}

/** True when `selector` (`name` or `kind:name`) names `entry`. */
function selects(selector: string, entry: PackageEntry): boolean {
  return selector === entry.name || selector === `${entry.kind}:${entry.name}`;
}

/** The registry a kind publishes to under `variables`: the first override set, else `null`. */
export function registryOverride(
  kind: RegistryKind,
  variables: Record<string, string | undefined>,
): string | null {
  for (const name of REGISTRY_VARIABLES[kind]) {
    const value = variables[name];
    if (value !== undefined && value !== "") return `${name}=${value}`;
  }
  return null;
}

/** Whether a step publishes a package: yes, no (with why), or unknown (with why). */
export type Publishes =
  { answer: "yes" } | { answer: "no"; why: string } | { answer: "unknown"; why: string };

/**
 * The registry doctor judges, per kind: the public one (`null`), unless doctor runs with the
 * same registry variable a publishing step sets (`PUBTOOL_PYREG_UPLOAD_URL=https://test.pypi.org/legacy/`),
 * which judges those steps instead. A variable no step sets (a mirror, a test double) does not
 * change which steps are judged.
 */
export function judgedRegistries(
  targets: readonly StepTarget[],
  doctorEnv: NodeJS.ProcessEnv,
): Record<RegistryKind, string | null> {
  const judged = { rustreg: null, pyreg: null, jsreg: null } as Record<RegistryKind, string | null>;
  for (const kind of Object.keys(judged) as RegistryKind[]) {
    const own = registryOverride(kind, doctorEnv);
    if (
      own !== null &&
      targets.some((target) => registryOverride(kind, target.variables) === own)
    ) {
      judged[kind] = own;
    }
  }
  return judged;
}

/**
 * Does the step with `target` publish `entry` to the registry doctor judges (`judged`, see
 * `judgedRegistries`)? A package is its registry and its name: the step publishes the packages
 * of the config it reads (`configs`, whichever file that is), narrowed by `--package`. A step
 * that points the kind at another registry (a `PUBTOOL_*_URL` variable, as a TestPyPI job does)
 * publishes to another index, which the declaration is not about.
 */
export function publishesPackage(
  target: StepTarget,
  entry: PackageEntry,
  configs: StepConfigs,
  judged: Readonly<Record<RegistryKind, string | null>>,
): Publishes {
  if (target.unknown !== null) return { answer: "unknown", why: target.unknown };
  if (target.config === null) return { answer: "no", why: "it finds no pubtool.toml" };
  const config = configs.get(target.config) ?? { problem: "could not be read" };
  if ("problem" in config) {
    return { answer: "no", why: `it reads ${target.config}, which ${config.problem}` };
  }
  const same = (other: PackageEntry) => other.kind === entry.kind && other.name === entry.name;
  if (!config.packages.some(same)) {
    return {
      answer: "no",
      why: `it reads ${target.config}, which has no ${entry.kind} package ${entry.name}`,
    };
  }
  // pubtool refuses a --package that names nothing in its config, so such a step publishes nothing.
  const stray = target.packages.filter(
    (selector) => !config.packages.some((other) => selects(selector, other)),
  );
  if (stray.length > 0) {
    return {
      answer: "no",
      why: `its --package ${stray.join(", ")} names no package of ${target.config}, so pubtool refuses to publish`,
    };
  }
  const selected = config.packages.filter(
    (other) =>
      target.packages.length === 0 || target.packages.some((selector) => selects(selector, other)),
  );
  if (!selected.some(same)) {
    return { answer: "no", why: `it publishes only --package ${target.packages.join(", ")}` };
  }
  const override = registryOverride(entry.kind, target.variables);
  if (override !== null && isDynamic(override)) {
    return { answer: "unknown", why: `it sets ${override}` };
  }
  if (override !== judged[entry.kind]) {
    return {
      answer: "no",
      why:
        override === null
          ? `it publishes to the public ${entry.kind} registry, not ${judged[entry.kind] ?? ""}`
          : `it publishes to another registry (${override})`,
    };
  }
  return { answer: "yes" };
}

/** A short description of what a step publishes, for doctor's messages. */
export function describeTarget(
  target: StepTarget,
  kinds: readonly RegistryKind[] = ["rustreg", "pyreg", "jsreg"],
): string {
  if (target.unknown !== null)
    return `what it publishes cannot be known locally: ${target.unknown}`;
  const what =
    target.packages.length > 0 ? `--package ${target.packages.join(", ")}` : "every package";
  const where =
    target.config === null
      ? "no pubtool.toml found from its working directory"
      : `of ${target.config}`;
  const overrides = kinds
    .map((kind) => registryOverride(kind, target.variables))
    .filter((value): value is string => value !== null);
  const to = overrides.length > 0 ? `, to ${overrides.join(", ")}` : "";
  return target.config === null ? where : `${what} ${where}${to}`;
}
