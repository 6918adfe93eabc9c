import type * as SmolToml from "smol-toml";
import { lazyModule } from "../../lazy-module.js";
import type { HookRow } from "../hook-rows.js";
import { documentRows, RowsError } from "./document-rows.js";
import { storedPlainValue } from "./plain-values.js";
import { refuseBeyondToml10 } from "./toml-strict.js";

const smolToml = lazyModule<typeof SmolToml>("smol-toml");

/** A syntax error of smol-toml at an offset of the text, its line and column not yet counted. */
class TomlSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
  }
}

/** How smol-toml makes each of its errors: `TomlError.x(message, context, offset?)`. */
type MakeError = (message: string, context: { p: number }, offset?: number) => never;

/**
 * smol-toml's parse, where an error is a `TomlSyntaxError` at its offset. smol-toml's own
 * `TomlError` counts its line and column by splitting the whole text into lines, twice (once
 * for the line, once for the lines shown around it): on a 100 MB file broken at its end, half
 * again the time of reading it. Its errors are all made by one static method, replaced for
 * this call only (the parse is synchronous) and put back after it; where a later version makes
 * them otherwise, its own errors come through as before.
 */
function parseToml(text: string): Record<string, unknown> {
  const { parse, TomlError } = smolToml();
  const errors = TomlError as unknown as { x?: MakeError };
  const own = errors.x;
  if (typeof own === "function") {
    errors.x = (message, context, offset) => {
      throw new TomlSyntaxError(message, offset ?? context.p);
    };
  }
  try {
    return parse(text, { integersAsBigInt: true }) as Record<string, unknown>;
  } finally {
    if (typeof own === "function") errors.x = own;
  }
}

/** Line and column of `offset`, as smol-toml counts them (a line ends at a line feed). */
function lineAndColumn(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let at = text.indexOf("\n"); at !== -1 && at < offset; at = text.indexOf("\n", at + 1)) {
    line++;
    lineStart = at + 1;
  }
  return { line, column: offset - lineStart + 1 };
}

/** A TOML text as its top-level table, or a `RowsError` naming the line. */
export function tomlTable(text: string, firstLine = 1): Record<string, unknown> {
  // The file's one byte-order mark is gone already; another is text TOML does not allow
  // (the parser would drop it silently).
  if (text.startsWith("\uFEFF")) {
    throw new RowsError(`line ${firstLine}, column 1: a second byte-order mark (not valid TOML)`);
  }
  let table: Record<string, unknown>;
  try {
    table = parseToml(text);
  } catch (error) {
    const { message } = error as { message: string };
    const { line, column } =
      error instanceof TomlSyntaxError
        ? lineAndColumn(text, error.offset)
        : (error as { line?: number; column?: number });
    const reason = message.split("\n")[0]?.replace(/^Invalid TOML document: /, "") ?? message;
    if (line === undefined) throw new RowsError(`not valid TOML: ${reason}`);
    throw new RowsError(
      `line ${line + firstLine - 1}, column ${column ?? 1}: ${reason} (not valid TOML)`,
    );
  }
  // Checked once the parser has read the text, so that its message names what is broken in a
  // text that is not TOML at all.
  refuseBeyondToml10(text, firstLine);
  return table;
}

/** A TOML file's rows: its top-level table is one row, unless `each` names where they are. */
export function tomlRows(text: string, each: string | null, rows: HookRow[]): void {
  documentRows(tomlTable(text), each, storedPlainValue, rows);
}
