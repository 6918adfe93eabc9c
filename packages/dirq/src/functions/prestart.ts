import type { FunctionConfig } from "../config/types.js";
import { prestartWorker } from "./worker-process.js";
import { workerSpec } from "./worker-specs.js";

/** `name(` as a call in SQL text, any case, not the tail of a longer name. */
function callPattern(name: string): RegExp {
  // Names are SQL identifiers ([A-Za-z_][A-Za-z0-9_]*): nothing to escape.
  return new RegExp(`(?<![\\w$])${name}\\s*\\(`, "i");
}

const SQL_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Starts, ahead of their first call, the workers of the functions `sql` appears to call, so
 * their start-up (a Node worker takes about as long to start as dirq itself) overlaps dirq's
 * own: loading its modules, building tables, the first pass over the statement. A plain text
 * match: a name inside a string or comment starts a worker that is then never called (and is
 * stopped at exit); a call only a view makes starts on its first call as usual. Never throws:
 * a command that cannot be split or started fails later, on its first call, as it always does.
 */
export function prestartWorkersFor(sql: string, functions: readonly FunctionConfig[]): void {
  for (const fn of functions) {
    if (!SQL_NAME.test(fn.name) || !callPattern(fn.name).test(sql)) continue;
    try {
      prestartWorker(workerSpec(fn));
    } catch {
      // Reported by the first call.
    }
  }
}
