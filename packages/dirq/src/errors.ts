/**
 * Codes for every user-facing failure. The core throws `DirqError`s with one of these codes;
 * the CLI (and later the server) maps codes to exit codes and statuses in one table each.
 */
export type DirqErrorCode =
  | "USAGE"
  | "SQL_ERROR"
  | "QUERY_EMPTY"
  | "QUERY_MULTIPLE_STATEMENTS"
  | "QUERY_NOT_READONLY"
  | "QUERY_INTERNAL_TABLE"
  | "QUERY_PARAMETERS"
  | "QUERY_TOO_MANY_TABLES"
  | "TABLE_REMOVED"
  | "PATH_OUTSIDE_ROOT"
  | "PATH_NOT_FOUND"
  | "PATH_INVALID"
  | "ROOT_INVALID"
  | "CONFIG_INVALID"
  | "HOOK_COMMAND_INVALID"
  | "HOOK_START_FAILED"
  | "OUTPUT_FAILED"
  | "INIT_OUTPUT_EXISTS"
  | "INIT_WRITE_FAILED"
  | "QUERY_TIMEOUT"
  | "QUERY_CANCELLED"
  | "REQUEST_INVALID"
  | "ANSWER_TOO_LARGE"
  | "SERVER_DEGRADED"
  | "SERVER_STOPPING"
  | "EXTENSION_LOAD_FAILED"
  | "WORKER_FAILED"
  | "INDEX_CLOSED"
  | "CACHE_UNUSABLE"
  | "CACHE_BUSY";

/** A user error: bad input, with a message that names what is wrong and what to do. */
export class DirqError extends Error {
  readonly code: DirqErrorCode;

  constructor(code: DirqErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "DirqError";
    this.code = code;
  }
}

/** True for a `DirqError`, also across duplicated module copies (branching on `code`). */
export function isDirqError(error: unknown): error is DirqError {
  return (
    error instanceof DirqError ||
    (error instanceof Error && error.name === "DirqError" && "code" in error)
  );
}
