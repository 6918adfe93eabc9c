import type { DirqConfig } from "../config/types.js";
import { DirqError } from "../errors.js";
import { type ExtensionSpec, loadExtensions } from "../extensions/load-extensions.js";
import { WorkerFunctions, type WorkerSpec } from "../functions/worker-functions.js";
import { workerSpec } from "../functions/worker-specs.js";
import type { SqliteDatabase } from "../indexer/database.js";
import { sqlError } from "../shared/sql-errors.js";

export type { ExtensionSpec, WorkerSpec };

/**
 * What every connection to one index carries besides the data: the SQLite extensions loaded
 * into it and the worker-backed functions declared on it. Plain data, so the server's query
 * processes open their connections with the very same profile.
 */
export interface ConnectionProfile {
  extensions: ExtensionSpec[];
  functions: WorkerSpec[];
}

export const EMPTY_PROFILE: ConnectionProfile = { extensions: [], functions: [] };

/**
 * The profile of a config: its functions, and its extensions unless `extensions` (from
 * `--extension`) is given, in which case only those are loaded.
 */
export function profileOf(
  config: DirqConfig,
  extensions?: readonly ExtensionSpec[],
): ConnectionProfile {
  return {
    extensions:
      extensions !== undefined && extensions.length > 0
        ? [...extensions]
        : config.extensions.map(({ path, entrypoint, origin }) => ({ path, entrypoint, origin })),
    functions: config.functions.map(workerSpec),
  };
}

/**
 * Applies a profile to a freshly opened connection: loads its extensions, declares its
 * functions. Returns the functions, whose workers start on their first call. A worker function
 * named like one of SQLite's own functions or one an extension declares is a `CONFIG_INVALID`
 * error: declared anyway, it would hide that function (`count(*)` would call the worker).
 */
export function applyProfile(
  db: SqliteDatabase,
  profile: ConnectionProfile,
  options: { sharedGroup?: boolean } = {},
): WorkerFunctions {
  if (profile.functions.length === 0) {
    loadExtensions(db, profile.extensions);
  } else {
    // Who declared each name: SQLite itself, or the first extension that added it.
    const owners = new Map<string, string>();
    for (const name of functionNames(db)) owners.set(name, "an SQLite built-in function");
    for (const extension of profile.extensions) {
      loadExtensions(db, [extension]);
      for (const name of functionNames(db)) {
        if (!owners.has(name)) {
          owners.set(
            name,
            `a function of the SQLite extension ${extension.path} (${extension.origin})`,
          );
        }
      }
    }
    for (const spec of profile.functions) {
      const owner = owners.get(spec.name.toLowerCase());
      if (owner === undefined) continue;
      throw new DirqError(
        "CONFIG_INVALID",
        `${spec.origin}.name: "${spec.name}" is ${owner}, which a worker function of that name would hide; choose another name`,
      );
    }
  }
  const functions = new WorkerFunctions(profile.functions, options);
  functions.register(db);
  return functions;
}

/** Lower-cased names of every SQL function the connection has (`PRAGMA function_list`). */
function functionNames(db: SqliteDatabase): Set<string> {
  const rows = db.prepare("SELECT DISTINCT name FROM pragma_function_list").pluck().all();
  return new Set((rows as string[]).map((name) => name.toLowerCase()));
}

/** `f(-1)` in EXPLAIN's p4 column: the function a Function or PureFunc opcode calls. */
const EXPLAINED_FUNCTION = /^([^()]+)\(-?\d+\)$/;

/** Lower-cased names of the SQL functions a statement calls, also through views. */
export function functionsCalledBy(
  db: SqliteDatabase,
  sql: string,
  /** NULL for each parameter of a statement that has some (`nullArguments`). */
  args: readonly unknown[] = [],
): Set<string> {
  const names = new Set<string>();
  let plan: { opcode: string; p4: unknown }[];
  try {
    plan = db.prepare(`EXPLAIN ${sql}`).all(...args) as typeof plan;
  } catch (error) {
    throw sqlError(error);
  }
  for (const row of plan) {
    if (!/Func/.test(row.opcode) || typeof row.p4 !== "string") continue;
    const name = EXPLAINED_FUNCTION.exec(row.p4)?.[1];
    if (name !== undefined) names.add(name.toLowerCase());
  }
  return names;
}

/** SQLITE_DETERMINISTIC in the flags of `PRAGMA function_list`. */
const SQLITE_DETERMINISTIC = 0x800;

/**
 * Date and time functions, which SQLite flags deterministic: with 'now' (or no time value at
 * all) they read the clock, and whether an argument is 'now' can be known only by running
 * the statement (a column may hold it).
 */
const CLOCK_FUNCTIONS = [
  "date",
  "time",
  "datetime",
  "julianday",
  "unixepoch",
  "strftime",
  "timediff",
  "current_date",
  "current_time",
  "current_timestamp",
];

/**
 * Lower-cased names of the scalar functions of a connection whose answer may change while the
 * data stays the same: SQLite's own (`random()`, `changes()`, ...), extensions' and worker
 * functions' not flagged deterministic, and the clock-reading ones. Aggregate and window
 * functions are left out: SQLite flags none of its own deterministic, yet over the same rows
 * they answer the same.
 */
export function volatileFunctions(db: SqliteDatabase): Set<string> {
  const listed = db
    .prepare("SELECT name, flags FROM pragma_function_list WHERE type = 's'")
    .all() as { name: string; flags: number }[];
  const names = new Set(CLOCK_FUNCTIONS);
  for (const { name, flags } of listed) {
    if ((flags & SQLITE_DETERMINISTIC) === 0) names.add(name.toLowerCase());
  }
  return names;
}

/** Refuses a statement that calls `load_extension()`: only dirq's own profile loads libraries. */
export function refuseLoadExtension(called: ReadonlySet<string>): void {
  if (called.has("load_extension")) {
    throw new DirqError(
      "QUERY_NOT_READONLY",
      "load_extension() cannot be called from SQL: load SQLite extensions with --extension <path> or a [[dirq.extension]] config entry",
    );
  }
}
