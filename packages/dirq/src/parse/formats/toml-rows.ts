import type * as SmolToml from "smol-toml";
import { lazyModule } from "../../lazy-module.js";
import type { HookRow } from "../hook-rows.js";
import { documentRows, RowsError } from "./document-rows.js";
import { storedPlainValue } from "./plain-values.js";

const smolToml = lazyModule<typeof SmolToml>("smol-toml");

/** A TOML text as its top-level table, or a `RowsError` naming the line. */
export function tomlTable(text: string, firstLine = 1): Record<string, unknown> {
  // The file's one byte-order mark is gone already; another is text TOML does not allow
  // (the parser would drop it silently).
  if (text.startsWith("\uFEFF")) {
    throw new RowsError(`line ${firstLine}, column 1: a second byte-order mark (not valid TOML)`);
  }
  refuseImpossibleDates(text, firstLine);
  try {
    return smolToml().parse(text, { integersAsBigInt: true }) as Record<string, unknown>;
  } catch (error) {
    const { line, column, message } = error as { line?: number; column?: number; message: string };
    const reason = message.split("\n")[0]?.replace(/^Invalid TOML document: /, "") ?? message;
    if (line === undefined) throw new RowsError(`not valid TOML: ${reason}`);
    throw new RowsError(
      `line ${line + firstLine - 1}, column ${column ?? 1}: ${reason} (not valid TOML)`,
    );
  }
}

/** A TOML file's rows: its top-level table is one row, unless `each` names where they are. */
export function tomlRows(text: string, each: string | null, rows: HookRow[]): void {
  documentRows(tomlTable(text), each, storedPlainValue, rows);
}

/** Where a TOML string starts at `i`, the index just after it ends; else `i`. */
function afterString(text: string, i: number): number {
  for (const quote of ['"""', "'''", '"', "'"]) {
    if (!text.startsWith(quote, i)) continue;
    const escapes = quote[0] === '"';
    let at = i + quote.length;
    for (;;) {
      const close = text.indexOf(quote, at);
      if (close === -1) return text.length;
      let backslashes = 0;
      while (escapes && text.charCodeAt(close - 1 - backslashes) === 92) backslashes++;
      if (backslashes % 2 === 0) return close + quote.length;
      at = close + 1;
    }
  }
  return i;
}

const DATE_LITERAL = /(\d{4})-(\d{2})-(\d{2})(?![\w-]*\s*[=.])/y;

/** Days in a month of the proleptic Gregorian calendar (month 1 to 12). */
function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/**
 * Dates that do not exist (`2100-02-29`, `2023-04-31`) are not TOML, as `tomllib` says; the
 * parser would roll them over into the next month. Strings and comments are skipped; a bare
 * key that looks like a date (`2024-01-05 = 1`) is a key.
 */
function refuseImpossibleDates(text: string, firstLine: number): void {
  let line = firstLine;
  for (let i = 0; i < text.length;) {
    const code = text.charCodeAt(i);
    if (code === 10) line++;
    const after = afterString(text, i);
    if (after !== i) {
      for (let at = text.indexOf("\n", i); at !== -1 && at < after; at = text.indexOf("\n", at + 1))
        line++;
      i = after;
      continue;
    }
    if (code === 35) {
      const end = text.indexOf("\n", i);
      i = end === -1 ? text.length : end;
      continue;
    }
    const previous = text.charCodeAt(i - 1);
    DATE_LITERAL.lastIndex = i;
    const date =
      code >= 48 && code <= 57 && !(previous >= 48 && previous <= 57)
        ? DATE_LITERAL.exec(text)
        : null;
    if (date !== null) {
      const [, year, month, day] = date.map(Number) as [number, number, number, number];
      if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) {
        throw new RowsError(`line ${line}: ${date[0]} is not a date (not valid TOML)`);
      }
      i += date[0].length;
      continue;
    }
    i++;
  }
}
