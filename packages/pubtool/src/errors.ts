/**
 * Codes for every user-facing failure. The core throws `PubtoolError`s with one of these codes;
 * the CLI maps codes to exit codes in one table (`cli/exit-codes.ts`).
 */
export type PubtoolErrorCode =
  | "USAGE"
  | "CONFIG_NOT_FOUND"
  | "CONFIG_INVALID"
  | "MANIFEST_INVALID"
  | "REPOSITORY_UNKNOWN"
  | "NOT_LOGGED_IN"
  | "AUTH_FAILED"
  | "HTTP_FAILED"
  | "PUBLISH_FAILED";

/** A user error: bad input or a failed step, with a message that names what is wrong. */
export class PubtoolError extends Error {
  readonly code: PubtoolErrorCode;
  /** Who says it on stderr: `pubtool`, or the command a usage error is about. */
  readonly speaker: string;

  constructor(
    code: PubtoolErrorCode,
    message: string,
    options?: { cause?: unknown; speaker?: string },
  ) {
    super(message, options);
    this.name = "PubtoolError";
    this.code = code;
    this.speaker = options?.speaker ?? "pubtool";
  }
}

/** True for a `PubtoolError`, also across duplicated module copies (branching on `code`). */
export function isPubtoolError(error: unknown): error is PubtoolError {
  return (
    error instanceof PubtoolError ||
    (error instanceof Error && error.name === "PubtoolError" && "code" in error)
  );
}
