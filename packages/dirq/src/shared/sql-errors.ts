import { DirqError } from "../errors.js";

/** SQLite's errors become `SQL_ERROR` DirqErrors; anything else is passed through. */
export function sqlError(error: unknown): unknown {
  if (error instanceof Error && error.name === "SqliteError") {
    return new DirqError("SQL_ERROR", error.message, { cause: error });
  }
  if (error instanceof RangeError && /parameter/i.test(error.message)) {
    return new DirqError(
      "SQL_ERROR",
      "the statement has parameters (?, :name, @name or $name), which dirq cannot bind: write the values into the SQL",
      { cause: error },
    );
  }
  return error;
}

/** SQLite failures of the file under the index (a full disk, a read-only one, damage). */
export function isStorageError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (
    typeof code === "string" &&
    /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|CORRUPT|NOTADB|PERM)/.test(code)
  );
}
