import type * as LosslessJson from "lossless-json";
import { lazyModule } from "../../lazy-module.js";
import { parseExactJson } from "../exact-json.js";
import type { HookRow } from "../hook-rows.js";
import { documentRows, RowsError } from "./document-rows.js";
import { refuseDeepNesting } from "./nesting.js";

const losslessJson = lazyModule<typeof LosslessJson>("lossless-json");

/** `line 3, column 7` of a 0-based offset into `text`. */
export function lineAndColumn(text: string, offset: number): string {
  let line = 1;
  let lineStart = 0;
  for (let at = text.indexOf("\n"); at !== -1 && at < offset; at = text.indexOf("\n", at + 1)) {
    line++;
    lineStart = at + 1;
  }
  return `line ${line}, column ${offset - lineStart + 1}`;
}

/**
 * lossless-json's objection to `text`: its reason and the position it names (`null` when it
 * names none), or `null` when it reads the text. Keys repeated with other values are read as
 * JSON.parse reads them (the last stands), so the objection is to the syntax only.
 */
export function losslessObjection(
  text: string,
): { reason: string; position: number | null } | null {
  try {
    losslessJson().parse(text, null, { onDuplicateKey: ({ newValue }) => newValue });
  } catch (error) {
    const message = (error as Error).message;
    const position = /\s*at position (\d+)$/.exec(message);
    if (position === null) return { reason: message, position: null };
    return { reason: message.slice(0, position.index), position: Number(position[1]) };
  }
  return null;
}

/**
 * Why `text` is not JSON, with its line and column. V8's messages name no position on newer
 * Node versions, so the reason is lossless-json's (only on this failure path).
 */
function syntaxReason(text: string, v8Error: unknown): string {
  const objection = losslessObjection(text);
  if (objection === null) return `not valid JSON: ${(v8Error as Error).message}`;
  if (objection.position === null) return `not valid JSON: ${objection.reason}`;
  return `${lineAndColumn(text, objection.position)}: ${objection.reason} (not valid JSON)`;
}

/** A JSON file's rows: exactly one JSON text (an empty or all-blank file is an error). */
export function jsonRows(text: string, each: string | null, rows: HookRow[]): void {
  // Exactly one JSON text, as Python's json and DuckDB read a file: none is the file's error.
  if (text.trim() === "") throw new RowsError("the file is empty: a JSON file holds one JSON text");
  refuseDeepNesting(text, 1, false);
  let parsed: ReturnType<typeof parseExactJson>;
  try {
    parsed = parseExactJson(text);
  } catch (error) {
    throw new RowsError(syntaxReason(text, error));
  }
  documentRows(parsed.data, each, parsed.stored, rows);
}

/**
 * JSON Lines, one piece of a file at a time: `text` holds whole lines (the caller cuts pieces
 * after a newline), the first of them line `firstLine`. Blank lines are skipped; a last line
 * without its newline is left unread (`final` or not: a file being appended is read when the
 * line is complete). Each other line is one JSON text holding the rows (an object is one row).
 */
export function jsonLinesRows(
  text: string,
  firstLine: number,
  each: string | null,
  rows: HookRow[],
): void {
  let line = firstLine;
  let start = 0;
  for (let end = text.indexOf("\n"); end !== -1; end = text.indexOf("\n", start)) {
    const content = text.slice(start, end);
    start = end + 1;
    if (content.trim() !== "") {
      refuseDeepNesting(content, line, false);
      let parsed: ReturnType<typeof parseExactJson>;
      try {
        parsed = parseExactJson(content);
      } catch (error) {
        const reason = syntaxReason(content, error);
        throw new RowsError(
          reason.startsWith("line 1, ")
            ? `line ${line}, ${reason.slice(8)}`
            : `line ${line}: ${reason}`,
        );
      }
      const data = parsed.data;
      if (each === null && (data === null || typeof data !== "object" || Array.isArray(data))) {
        const what = Array.isArray(data) ? "an array" : data === null ? "null" : `a ${typeof data}`;
        throw new RowsError(`line ${line} holds ${what}, expected an object (one row per line)`);
      }
      try {
        documentRows(data, each, parsed.stored, rows);
      } catch (error) {
        if (error instanceof RowsError) throw new RowsError(`line ${line}: ${error.message}`);
        throw error;
      }
    }
    line++;
  }
}
