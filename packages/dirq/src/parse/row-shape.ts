import { captureNames as capturesIn } from "../scan/bash-glob.js";
import { compileCaptures } from "../scan/path-selection.js";
import { foldName } from "../shared/sql-names.js";
import type { StoredValue } from "./exact-json.js";
import type { ExtractOutcome, ExtractTarget, Extractor } from "./extractor.js";
import { isReaderExtractor, type ReaderExtractor } from "./format-extractor.js";
import { type HookRow, parseJsonExact, toStoredValue } from "./hook-rows.js";
import { LargeText, type RowValue } from "./large-text.js";

/**
 * How a table's rows are formed from what its files give: the glob's `{name}` captures added
 * as columns, a `columns` mapping (column → dot path into the row, or a capture name) that is
 * the whole projection, and `strict` (a row whose keys differ from the schema is the file's
 * error). The same for every extractor: a built-in format, a hook, an `extract` function.
 */
export interface RowShape {
  /** The table's glob, relative to the root, as the files' paths are. */
  glob: string;
  /** Column → source, in order; `null`: the rows' own keys. */
  columns: readonly (readonly [string, string])[] | null;
  strict: boolean;
  /** The declared columns (`strict` compares with them); `null`: inferred. */
  schema: readonly (readonly [string, string])[] | null;
  /** Where the table was defined, for the reason a file is skipped (`config.toml: table[0]`). */
  origin: string;
}

/** Whether a table needs its rows shaped at all (no capture, mapping or strict: they pass). */
export function needsShape(shape: RowShape): boolean {
  return shape.strict || shape.columns !== null || capturesIn(shape.glob).length > 0;
}

/** A file's rows broke `strict`: the file's error (it is skipped), never the table's. */
class StrictError extends Error {}

/** The value at a dot path of a row (`metadata.author.name`, `items.0.name`), or undefined. */
function valueAt(row: HookRow, path: string): RowValue | undefined {
  // A key spelled with dots (a CSV header `a.b`) is taken whole first.
  if (row.has(path)) return row.get(path);
  const steps = path.split(".");
  const first = steps.shift() as string;
  let value: unknown = row.get(first);
  if (value === undefined) return undefined;
  if (steps.length === 0) return value as RowValue;
  // Nested arrays and objects are stored as their JSON text: read them back to step in.
  if (value instanceof LargeText) value = value.toString();
  if (typeof value !== "string") return undefined;
  try {
    value = parseJsonExact(value);
  } catch {
    return undefined;
  }
  for (const step of steps) {
    if (Array.isArray(value)) {
      if (!/^\d+$/.test(step)) return undefined;
      value = value[Number(step)];
    } else if (value !== null && typeof value === "object") {
      value = Object.hasOwn(value, step) ? (value as Record<string, unknown>)[step] : undefined;
    } else {
      return undefined;
    }
    if (value === undefined) return undefined;
  }
  return toStoredValue(value) as StoredValue;
}

/** The shaping of one table's rows, compiled once: `shape(path, rows)`. */
export function rowShaper(shape: RowShape): (path: string, rows: HookRow[]) => HookRow[] {
  const captureNames = new Set(capturesIn(shape.glob));
  const capturesOf = compileCaptures(shape.glob);
  // Folded name → the schema's spelling (SQLite compares column names without ASCII case).
  const schema =
    shape.schema === null ? null : new Map(shape.schema.map(([c]) => [foldName(c), c]));
  const strictError = (row: number, problems: string[]) =>
    new StrictError(
      `row ${row} ${problems.join(" and ")} (strict = true in ${shape.origin}: every row has exactly the schema's keys)`,
    );
  const mapped = (captures: Record<string, string>, row: HookRow, index: number): HookRow => {
    const out: HookRow = new Map();
    const missing: string[] = [];
    for (const [column, source] of shape.columns ?? []) {
      if (captureNames.has(source)) {
        out.set(column, captures[source] ?? null);
        continue;
      }
      const value = valueAt(row, source);
      if (value === undefined) missing.push(source);
      out.set(column, value ?? null);
    }
    if (shape.strict && missing.length > 0) {
      throw strictError(index, [`has no value at ${missing.join(", ")}`]);
    }
    return out;
  };
  const withCaptures = (captures: Record<string, string>, row: HookRow, index: number) => {
    if (schema !== null && shape.strict) checkStrict(schema, row, captures, index, strictError);
    const entries = Object.entries(captures);
    if (entries.length === 0) return row;
    // The path decides: a key of the file's own that names a capture is replaced by it.
    const folded = new Set(entries.map(([name]) => foldName(name)));
    const out: HookRow = new Map(entries);
    for (const [key, value] of row) if (!folded.has(foldName(key))) out.set(key, value);
    return out;
  };
  return (path, rows) => {
    const captures = capturesOf(path);
    const form = shape.columns !== null ? mapped : withCaptures;
    return rows.map((row, i) => form(captures, row, i));
  };
}

/** Throws the file's `StrictError` when a row's keys and captures differ from the schema's. */
function checkStrict(
  schema: ReadonlyMap<string, string>,
  row: HookRow,
  captures: Record<string, string>,
  index: number,
  error: (row: number, problems: string[]) => Error,
): void {
  const given = new Set<string>();
  const extra: string[] = [];
  for (const key of row.keys()) {
    const folded = foldName(key);
    given.add(folded);
    if (!schema.has(folded)) extra.push(key);
  }
  for (const name of Object.keys(captures)) given.add(foldName(name));
  const missing = [...schema].filter(([folded]) => !given.has(folded)).map(([, name]) => name);
  const problems: string[] = [];
  if (extra.length > 0) problems.push(`has keys outside the schema: ${extra.join(", ")}`);
  if (missing.length > 0) problems.push(`lacks schema columns: ${missing.join(", ")}`);
  if (problems.length > 0) throw error(index, problems);
}

/** The text a table's definition holds for its shape (a change rebuilds a persisted table). */
export function shapeText(shape: RowShape): string {
  return JSON.stringify({ columns: shape.columns, strict: shape.strict });
}

/** The shape each shaped extractor applies, so a thread that reads for it can apply it too. */
const shapes = new WeakMap<Extractor, RowShape>();

/** The shape `extractor` applies to its rows, `null` when it is not a shaped one. */
export function shapeOf(extractor: Extractor): RowShape | null {
  return shapes.get(extractor) ?? null;
}

/**
 * `inner`, its rows shaped: captures added, `columns` applied, `strict` checked (a file that
 * breaks it is skipped with the reason). A built-in format stays one (its rows come as rows,
 * never as CSV records parsed inside SQLite, so that each is shaped).
 */
export function shapedExtractor(inner: Extractor, shape: RowShape): Extractor {
  const shaper = rowShaper(shape);
  const id = `${inner.id} shape:${shapeText(shape)}`;
  const extract = async (file: ExtractTarget, signal?: AbortSignal): Promise<ExtractOutcome> => {
    const outcome = await inner.extract(file, signal);
    if (!outcome.ok) return outcome;
    try {
      return { ok: true, rows: shaper(file.path, outcome.rows) };
    } catch (error) {
      if (error instanceof StrictError) return { ok: false, reason: error.message };
      throw error;
    }
  };
  if (!isReaderExtractor(inner)) return remember({ ...wrapperOf(inner), id, extract }, shape);
  const reader: ReaderExtractor = {
    ...wrapperOf(inner),
    id,
    format: inner.format,
    each: inner.each,
    extract,
    readRows(file, onRows) {
      try {
        return inner.readRows(file, (rows) => onRows(shaper(file.path, rows)));
      } catch (error) {
        if (error instanceof StrictError) return error.message;
        throw error;
      }
    },
  };
  return remember(reader, shape);
}

function remember<T extends Extractor>(extractor: T, shape: RowShape): T {
  shapes.set(extractor, shape);
  return extractor;
}

function wrapperOf(inner: Extractor): Omit<Extractor, "id" | "extract"> {
  return {
    inputs: inner.inputs,
    concurrency: inner.concurrency,
    kind: inner.kind,
  };
}
