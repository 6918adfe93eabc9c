import type { FunctionConfig } from "../config/types.js";
import { DirqError, isDirqError } from "../errors.js";
import { parseHookCommand } from "../parse/hook-command.js";
import type { WorkerSpec } from "./worker-process.js";

/** One config `[[dirq.function]]` as its worker runs it: the command split, relative program resolved. */
export function workerSpec(fn: FunctionConfig): WorkerSpec {
  let argv: string[];
  try {
    argv = parseHookCommand(fn.command, fn.baseDir).argv;
  } catch (error) {
    if (!isDirqError(error)) throw error;
    throw new DirqError("CONFIG_INVALID", `${fn.origin}.command: ${error.message}`);
  }
  return {
    name: fn.name,
    argv,
    command: fn.command,
    cwd: fn.baseDir,
    deterministic: fn.deterministic,
    origin: fn.origin,
  };
}
