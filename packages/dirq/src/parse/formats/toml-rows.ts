import type * as SmolToml from "smol-toml";
import { lazyModule } from "../../lazy-module.js";
import type { HookRow } from "../hook-rows.js";
import { documentRows, RowsError } from "./document-rows.js";
import { storedPlainValue } from "./plain-values.js";
import { refuseBeyondToml10 } from "./toml-strict.js";

const smolToml = lazyModule<typeof SmolToml>("smol-toml");

/** A TOML text as its top-level table, or a `RowsError` naming the line. */
export function tomlTable(text: string, firstLine = 1): Record<string, unknown> {
  // The file's one byte-order mark is gone already; another is text TOML does not allow
  // (the parser would drop it silently).
  if (text.startsWith("\uFEFF")) {
    throw new RowsError(`line ${firstLine}, column 1: a second byte-order mark (not valid TOML)`);
  }
  let table: Record<string, unknown>;
  try {
    table = smolToml().parse(text, { integersAsBigInt: true }) as Record<string, unknown>;
  } catch (error) {
    const { line, column, message } = error as { line?: number; column?: number; message: string };
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
