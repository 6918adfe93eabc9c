import { jsonValue } from "../output/json.js";
import { LargeText, type RowValue } from "../parse/large-text.js";
import type { RowChangeOf } from "../shared/row-change.js";
import type { SqlValue } from "../shared/sql-value.js";
import { cachedStatement, quoteIdentifier, type SqliteDatabase } from "./database.js";

/**
 * JSON text some pieces of which are UTF-8 already: a row holding a `LargeText`, whose JSON was
 * made off the main thread. It is sent as those bytes; only a reader that needs the whole text
 * as a string (a comparison with a row read back) decodes it.
 */
export class EncodedJson {
  constructor(readonly pieces: readonly (string | Buffer)[]) {}

  /** The pieces as UTF-8, each large one as it is. */
  utf8(): Buffer[] {
    return this.pieces.map((piece) => (typeof piece === "string" ? Buffer.from(piece) : piece));
  }

  toString(): string {
    return this.pieces.map((piece) => piece.toString()).join("");
  }

  /** Its size as a string's length counts it: characters of the text pieces, bytes of the rest. */
  get length(): number {
    return this.pieces.reduce((sum, piece) => sum + piece.length, 0);
  }
}

/** JSON object text of a row: a string, or pieces when it holds a large text. */
export type RowText = string | EncodedJson;

/** One row-level change, as the event stream sends it. Rows are JSON object text. */
export type RowChange = RowChangeOf<RowText>;

/**
 * Row changes kept as a few texts until they are read (a burst of moved rows): a checkout's
 * hundreds of thousands of change objects, alive together until the burst's events are sent,
 * were most of what the collector copied while the burst was applied.
 */
export interface HeldChanges {
  readonly action: "held";
  /** The table every change of it names. */
  readonly table: string;
  /** How many changes `expand` makes. */
  readonly size: number;
  /** Appends the changes to `into`, in order. */
  expand(into: RowChange[]): void;
  /**
   * Each change's event JSON as `rowChangeJson(change, commit)` makes it, in order, with no
   * change object made: what a burst's events are numbered and sent from.
   */
  eachJson(commit: number, visit: (json: string) => void): void;
}

/** What a commit's changes are made of as it commits. */
export type CommitChange = RowChange | HeldChanges;

/** The changes, those held made. */
export function expandChanges(changes: readonly CommitChange[]): RowChange[] {
  const all: RowChange[] = [];
  for (const change of changes) {
    if (change.action === "held") change.expand(all);
    else all.push(change);
  }
  return all;
}

/**
 * One commit of the index: the row changes it made, numbered. Sequence numbers are consecutive
 * per index from 1; `/events` row frames and `/live` frames carry them, so a client can tell
 * which commit an answer is as of.
 */
export interface Commit {
  readonly seq: number;
  /** How many changes (known without making them: see `commitOf`). */
  readonly size: number;
  readonly changes: readonly RowChange[];
  /** The changes as they were committed: held ones not made into change objects. */
  readonly parts: readonly CommitChange[];
}

/**
 * A commit of `changes`: held ones are made when `changes` is first read (a burst's commits
 * are handed on one after another, each made and sent before the next is read).
 */
export function commitOf(seq: number, changes: readonly CommitChange[]): Commit {
  let size = 0;
  let held = false;
  for (const change of changes) {
    held ||= change.action === "held";
    size += change.action === "held" ? change.size : 1;
  }
  if (!held) return { seq, size, changes: changes as readonly RowChange[], parts: changes };
  let made: RowChange[] | null = null;
  return {
    seq,
    size,
    parts: changes,
    get changes() {
      made ??= expandChanges(changes);
      return made;
    },
  };
}

/** Each column list's keys as JSON (`{"name":`, `,"other":`), made once per list. */
const keysOfColumns = new WeakMap<readonly string[], readonly string[]>();

function jsonKeys(columns: readonly string[]): readonly string[] {
  let keys = keysOfColumns.get(columns);
  if (keys === undefined) {
    keys = columns.map((column, i) => `${i === 0 ? "{" : ","}${JSON.stringify(column)}:`);
    keysOfColumns.set(columns, keys);
  }
  return keys;
}

/** A row as JSON object text, values serialized exactly like query results. */
export function rowJson(columns: readonly string[], values: readonly unknown[]): string {
  // A burst of moved rows serializes hundreds of thousands: keys are made once per table.
  const keys = jsonKeys(columns);
  if (keys.length === 0) return "{}";
  let text = "";
  for (let i = 0; i < keys.length; i++) text += `${keys[i]}${jsonValue(values[i] as SqlValue)}`;
  return `${text}}`;
}

/** As `rowJson`, for values of a hook's output: a large text's JSON is used as it was made. */
export function rowText(columns: readonly string[], values: readonly RowValue[]): RowText {
  if (!values.some((value) => value instanceof LargeText)) return rowJson(columns, values);
  const pieces: (string | Buffer)[] = [];
  let text = "{";
  columns.forEach((column, i) => {
    const value = values[i];
    text += `${i === 0 ? "" : ","}${JSON.stringify(column)}:`;
    if (!(value instanceof LargeText)) {
      text += jsonValue(value as SqlValue);
      return;
    }
    pieces.push(text, value.json);
    text = "";
  });
  pieces.push(`${text}}`);
  return new EncodedJson(pieces);
}

/** An event's JSON up to its file's name: `{"action":...,"table":...,"file_path":`. */
export function eventJsonHead(action: RowChange["action"], table: string | null): string {
  return `{"action":"${action}","table":${JSON.stringify(table)},"file_path":`;
}

/** An event's JSON after its last field: the commit's number, when given, and the brace. */
export function eventJsonTail(commit?: number): string {
  return commit === undefined ? "}" : `,"commit":${commit}}`;
}

/**
 * The event's JSON text, fields in the order of the spec's table, then the number of the
 * commit that made it (`commit`, when given).
 */
export function rowChangeJson(change: RowChange, commit?: number): RowText {
  const head = `${eventJsonHead(change.action, change.table)}${JSON.stringify(change.file_path)}`;
  const tail = eventJsonTail(commit);
  if (change.action === "error") return `${head},"error":${JSON.stringify(change.error)}${tail}`;
  const { row, old_row: old } = change;
  if (typeof row === "string" && !(old instanceof EncodedJson)) {
    return `${head},"row":${row},"old_row":${old ?? "null"}${tail}`;
  }
  const piecesOf = (text: RowText) => (typeof text === "string" ? [text] : text.pieces);
  return new EncodedJson([
    `${head},"row":`,
    ...piecesOf(row),
    `,"old_row":`,
    ...(old === null ? ["null"] : piecesOf(old)),
    tail,
  ]);
}

/** The event JSON of each change of `commit`, in order (see `rowChangeJson`). */
export function* commitJson(commit: Commit): Generator<RowText> {
  for (const texts of commitJsonRuns(commit)) yield* texts;
}

/**
 * `commitJson` a part of the commit at a time (held changes' texts together): a burst's
 * hundreds of thousands of events are not each a step of a generator.
 */
export function* commitJsonRuns(commit: Commit): Generator<readonly RowText[]> {
  for (const change of commit.parts) {
    if (change.action !== "held") {
      yield [rowChangeJson(change, commit.seq)];
      continue;
    }
    const texts: string[] = [];
    change.eachJson(commit.seq, (json) => texts.push(json));
    yield texts;
  }
}

/** Reads a file's current rows (visible columns only) as JSON texts, in row order. */
export function currentRows(
  db: SqliteDatabase,
  table: string,
  columns: readonly string[],
  where: { column: string; value: string; orderBy?: string },
): string[] {
  // A table may have no visible column yet (a schema-less table whose files printed nothing):
  // each row is then `{}`, and the list still needs one expression.
  const list = columns.length === 0 ? "NULL" : columns.map(quoteIdentifier).join(", ");
  const order = where.orderBy ? ` ORDER BY ${where.orderBy}` : "";
  const statement = cachedStatement(
    db,
    `SELECT ${list} FROM ${quoteIdentifier(table)} WHERE ${quoteIdentifier(where.column)} = ?${order}`,
  )
    .raw(true)
    .safeIntegers(true);
  return (statement.all(where.value) as unknown[][]).map((values) => rowJson(columns, values));
}

/**
 * The changes that turn a file's old rows into its new rows, matched by position: a row at
 * the same position is an update when it differs, extra rows are inserts or deletes.
 */
export function diffRows(
  table: string,
  path: string,
  before: readonly string[],
  after: readonly RowText[],
): RowChange[] {
  const changes: RowChange[] = [];
  const common = Math.min(before.length, after.length);
  for (let i = 0; i < common; i++) {
    // A row with a large text is decoded only to be compared with a row it replaces.
    if (before[i] !== after[i]?.toString()) {
      changes.push({
        action: "update",
        table,
        file_path: path,
        row: after[i] as RowText,
        old_row: before[i] as string,
      });
    }
  }
  const added = (action: "insert" | "delete", rows: readonly RowText[]) => {
    for (let i = common; i < rows.length; i++) {
      changes.push({ action, table, file_path: path, row: rows[i] as RowText, old_row: null });
    }
  };
  added("insert", after);
  added("delete", before);
  return changes;
}
