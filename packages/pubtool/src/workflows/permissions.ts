/** A permission level of one GITHUB_TOKEN scope. */
export type Level = "none" | "read" | "write";

/** The scopes doctor cares about. */
export const REQUIRED_SCOPES = ["id-token", "contents"] as const;
export type Scope = (typeof REQUIRED_SCOPES)[number];

const RANK: Record<Level, number> = { none: 0, read: 1, write: 2 };

/** What a job ends up with, and where that came from. */
export interface EffectivePermissions {
  levels: Record<Scope, Level>;
  /** "job", "workflow", "caller job", "caller workflow" or "repository default". */
  source: string;
  /** True when no `permissions` key applies: the repository default is in force. */
  isDefault: boolean;
  /** True when job-level permissions replaced workflow-level ones that granted more. */
  replacedWorkflowGrant: boolean;
}

/** The level a `permissions` value (string or map) grants to `scope`. */
export function levelOf(permissions: unknown, scope: Scope): Level {
  if (permissions === "write-all") return "write";
  if (permissions === "read-all") return scope === "id-token" ? "none" : "read";
  if (permissions !== null && typeof permissions === "object" && !Array.isArray(permissions)) {
    const value = (permissions as Record<string, unknown>)[scope];
    if (value === "write" || value === "read") return value;
    return "none";
  }
  return "none";
}

function levelsOf(permissions: unknown): Record<Scope, Level> {
  return {
    "id-token": levelOf(permissions, "id-token"),
    contents: levelOf(permissions, "contents"),
  };
}

/** The repository default grants `contents` at most, and never `id-token: write`. */
const DEFAULT_LEVELS: Record<Scope, Level> = { "id-token": "none", contents: "read" };

/**
 * Applies the host's rules to one job: job-level `permissions` replace workflow-level ones;
 * with neither, the repository default applies.
 */
export function resolvePermissions(
  workflowPermissions: unknown,
  jobPermissions: unknown,
  prefix = "",
): EffectivePermissions {
  if (jobPermissions !== undefined) {
    const levels = levelsOf(jobPermissions);
    const workflowLevels = workflowPermissions === undefined ? null : levelsOf(workflowPermissions);
    const replaced =
      workflowLevels !== null &&
      (RANK[workflowLevels["id-token"]] > RANK[levels["id-token"]] ||
        RANK[workflowLevels.contents] > RANK[levels.contents]);
    return {
      levels,
      source: `${prefix}job-level permissions`,
      isDefault: false,
      replacedWorkflowGrant: replaced,
    };
  }
  if (workflowPermissions !== undefined) {
    return {
      levels: levelsOf(workflowPermissions),
      source: `${prefix}workflow-level permissions`,
      isDefault: false,
      replacedWorkflowGrant: false,
    };
  }
  return {
    levels: { ...DEFAULT_LEVELS },
    source: "the repository default",
    isDefault: true,
    replacedWorkflowGrant: false,
  };
}

/**
 * A job inside a reusable workflow: it inherits what the caller grants; its own `permissions`
 * (job- or workflow-level) can only lower that, never raise it.
 */
export function resolveCalledPermissions(
  caller: EffectivePermissions,
  calledWorkflowPermissions: unknown,
  calledJobPermissions: unknown,
): EffectivePermissions {
  const own = calledJobPermissions ?? calledWorkflowPermissions;
  if (own === undefined)
    return { ...caller, source: `inherited from the caller (${caller.source})` };
  const ownLevels = levelsOf(own);
  const levels = { ...caller.levels };
  for (const scope of REQUIRED_SCOPES) {
    if (RANK[ownLevels[scope]] < RANK[levels[scope]]) levels[scope] = ownLevels[scope];
  }
  return {
    levels,
    source: `the caller's grant (${caller.source}) limited by the called workflow's own permissions`,
    isDefault: caller.isDefault,
    replacedWorkflowGrant: caller.replacedWorkflowGrant,
  };
}

/** The scopes `levels` lacks for a trusted publish (`id-token: write`, `contents: write`). */
export function missingScopes(levels: Record<Scope, Level>): Scope[] {
  return REQUIRED_SCOPES.filter((scope) => levels[scope] !== "write");
}
