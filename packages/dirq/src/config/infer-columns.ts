import { resolve } from "node:path";
import { isOwnName, type RecordBatch } from "../parse/formats/csv-rows.js";
import { RowsError } from "../parse/formats/document-rows.js";
import type { FileFormat } from "../parse/formats/format-names.js";
import { readFileRows } from "../parse/formats/read-file-rows.js";
import type { HookRow } from "../parse/hook-rows.js";
import type { RowValue } from "../parse/large-text.js";
import { foldName } from "../shared/sql-names.js";

/**
 * The columns `dirq init` writes into a starter's `schema`: every key of every row of every
 * file, read by the format's own reader in this process (so each value has the type the table
 * will store), in the order the table's inference would find them, each with one declared type
 * that holds all of its values.
 */

export type ColumnType = "INTEGER" | "REAL" | "TEXT" | "BLOB";

/**
 * A stored value's type: an INTEGER is a bigint (booleans are 0/1 already), a REAL a number, a
 * BLOB bytes (YAML's `!!binary`), anything else text (nested arrays and objects are stored as
 * their JSON text, dates as ISO-8601 text). NULL says nothing about the column.
 */
function typeOfValue(value: RowValue): ColumnType | null {
  if (value === null) return null;
  if (typeof value === "bigint") return "INTEGER";
  if (typeof value === "number") return "REAL";
  return value instanceof Uint8Array ? "BLOB" : "TEXT";
}

/**
 * The declared type that keeps values of both as they are: INTEGER and REAL make REAL (a REAL
 * column keeps an integer's value); with BLOB, BLOB (a column declared BLOB converts nothing:
 * bytes, text and numbers stay as they are); else anything with TEXT is TEXT, because a numeric
 * column turns text that reads as a number into that number (`"007"` would become 7, `"1.50"`
 * 1.5), while a TEXT column keeps every value's text.
 */
export function widerType(a: ColumnType | null, b: ColumnType | null): ColumnType | null {
  if (a === null || a === b) return b ?? a;
  if (b === null) return a;
  if (a === "BLOB" || b === "BLOB") return "BLOB";
  return a === "TEXT" || b === "TEXT" ? "TEXT" : "REAL";
}

/**
 * Columns first seen first, one per name as SQLite compares names (ASCII case ignored): the
 * first spelling stands, as in a table without a schema.
 */
class ColumnUnion {
  readonly types = new Map<string, ColumnType | null>();
  /** Folded name → the column's spelling. */
  private readonly byFolded = new Map<string, string>();
  /** Each spelling seen → its column: most rows repeat the same few keys. */
  private readonly bySpelling = new Map<string, string>();

  add(key: string, type: ColumnType | null): void {
    let column = this.bySpelling.get(key);
    if (column === undefined) {
      const folded = foldName(key);
      column = this.byFolded.get(folded);
      if (column === undefined) {
        column = key;
        this.byFolded.set(folded, key);
        this.types.set(key, null);
      }
      this.bySpelling.set(key, column);
    }
    const current = this.types.get(column) ?? null;
    if (type !== null && type !== current) this.types.set(column, widerType(current, type));
  }

  addAll(other: ColumnUnion): void {
    for (const [key, type] of other.types) this.add(key, type);
  }
}

/** What reading every file gave. */
export interface InferredColumns {
  /** Every column with the type that holds all its values (`null`: only NULLs were seen). */
  columns: Map<string, ColumnType | null>;
  /** Files read whole, with or without rows. */
  read: number;
  /** Files the format cannot read (the table will skip them): how many, and the first. */
  unreadable: number;
  firstUnreadable: { path: string; reason: string } | null;
  /**
   * The key under which every file that is one row holds an array of objects: the rows a
   * table with `each` would have. `null` when there is no such single key.
   */
  each: string | null;
}

/** A nested value stored as JSON text that holds an array of objects. */
function holdsObjects(value: RowValue): boolean {
  if (typeof value !== "string" || !value.startsWith("[{")) return false;
  try {
    const parsed: unknown = JSON.parse(value);
    return (
      Array.isArray(parsed) &&
      parsed.length > 0 &&
      parsed.every((item) => item !== null && typeof item === "object" && !Array.isArray(item))
    );
  } catch {
    return false;
  }
}

/** The one key of a one-row file whose value is an array of objects, or `null`. */
function eachKey(row: HookRow): string | null {
  const keys = [...row.keys()].filter((key) => holdsObjects(row.get(key) ?? null));
  return keys.length === 1 ? (keys[0] as string) : null;
}

/** One file's columns, how many rows it has, and its first row (CSV and TSV: none). */
function readColumns(
  format: FileFormat,
  absolute: string,
  path: string,
): { columns: ColumnUnion; rowCount: number; firstRow: HookRow | null } {
  const columns = new ColumnUnion();
  let rowCount = 0;
  let firstRow: HookRow | null = null;
  const onRows = (rows: HookRow[]): void => {
    for (const row of rows) {
      rowCount++;
      firstRow ??= row;
      for (const [key, value] of row) columns.add(key, typeOfValue(value));
    }
  };
  // CSV and TSV records come without a Map per row (and a large file's on worker threads).
  const onRecords = (batch: RecordBatch): void => {
    const { names, values, count } = batch;
    rowCount += count;
    for (let i = 0; i < names.length; i++) {
      const name = names[i] as string;
      if (isOwnName(name)) continue;
      // One column's values first, then one add: a large file has millions of them.
      let type: ColumnType | null = null;
      for (let r = 0; r < count; r++) {
        type = widerType(type, typeOfValue(values[r * names.length + i] as RowValue));
      }
      columns.add(name, type);
    }
  };
  readFileRows(format, null, absolute, path, onRows, { onRecords });
  return { columns, rowCount, firstRow };
}

/** Formats whose one-row files may hold their rows under a key (`each`). */
const EACH_FORMATS: ReadonlySet<FileFormat> = new Set(["json", "jsonl", "yaml", "toml"]);

/**
 * Reads every one of `paths` (relative to `root`, in the order the table's inference takes
 * them) with `format`, and unites their columns. A file the format cannot read adds nothing,
 * as the table will skip it; `onProgress` hears after each file.
 */
export function inferSchemaColumns(
  root: string,
  format: FileFormat,
  paths: readonly string[],
  onProgress?: (done: number) => void,
): InferredColumns {
  const union = new ColumnUnion();
  const found: InferredColumns = {
    columns: union.types,
    read: 0,
    unreadable: 0,
    firstUnreadable: null,
    each: null,
  };
  let oneRowFiles = 0;
  // undefined until a one-row file is read; then the key they all share, or null.
  let eachCandidate: string | null | undefined;
  for (const path of paths) {
    let file: ReturnType<typeof readColumns>;
    try {
      file = readColumns(format, resolve(root, path), path);
    } catch (error) {
      if (!(error instanceof RowsError)) throw error;
      found.unreadable++;
      found.firstUnreadable ??= { path, reason: error.message };
      onProgress?.(found.read + found.unreadable);
      continue;
    }
    found.read++;
    union.addAll(file.columns);
    if (EACH_FORMATS.has(format) && file.rowCount === 1 && file.firstRow !== null) {
      oneRowFiles++;
      const candidate = eachKey(file.firstRow);
      eachCandidate = eachCandidate === undefined || eachCandidate === candidate ? candidate : null;
    } else if (file.rowCount > 1) {
      // A file of several rows has its rows at the top already.
      eachCandidate = null;
    }
    onProgress?.(found.read + found.unreadable);
  }
  found.each = oneRowFiles > 0 && eachCandidate ? eachCandidate : null;
  return found;
}
