import type { StoredValue } from "./exact-json.js";

/**
 * A text value of a hook's output too large to handle as a string on the main thread: its
 * UTF-8 (what SQLite stores, bound as bytes and cast to TEXT) and its JSON (what a `row` event
 * sends), both made on the thread that read the output and moved to the main thread without a
 * copy. Encoding, escaping and collecting a string of tens of megabytes there would hold back
 * every other file's rows and events.
 */
export class LargeText {
  constructor(
    readonly utf8: Buffer,
    readonly json: Buffer,
  ) {}

  /** The text as a string, for what needs one (a table whose `schema` or `ddl` reads it back). */
  toString(): string {
    return this.utf8.toString("utf8");
  }

  /** In JSON (a persisted build's staged rows) it is the text it holds. */
  toJSON(): string {
    return this.toString();
  }
}

/** A value of a row of rows: as stored, or a large text made ready off the main thread. */
export type RowValue = StoredValue | LargeText;

/** Text values from this many characters up become a `LargeText` on the output thread. */
export const LARGE_TEXT_CHARS = 256 * 1024;

/** What structured clone makes of a `LargeText` (its class is not kept). */
interface ClonedLargeText {
  utf8: Uint8Array;
  json: Uint8Array;
}

/** The bytes in an ArrayBuffer of their own, so that they can be moved to another thread. */
export function movable(bytes: Buffer): Buffer {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) return bytes;
  return Buffer.from(new Uint8Array(bytes));
}

/**
 * Whether a string has no unpaired surrogate: SQLite's UTF-8 would store one as U+FFFD, so
 * only a well-formed string is stored exactly as it is bound.
 */
export function isWellFormed(text: string): boolean {
  // String.prototype.isWellFormed (Node 20) is newer than the TypeScript library targeted.
  return (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/** A string as a large text; `null` when it is not one (short, or not well-formed UTF-16). */
function largeText(value: string): LargeText | null {
  // A string SQLite would change stays a string, so that its event is read back from SQLite.
  if (value.length < LARGE_TEXT_CHARS || !isWellFormed(value)) return null;
  // JSON.stringify is the JSON a query's answer and the events give a text value.
  return new LargeText(movable(Buffer.from(value)), movable(Buffer.from(JSON.stringify(value))));
}

/**
 * On the thread that read the output: each large text value of `rows` replaced by its
 * `LargeText`. Returns the buffers to move with the rows.
 */
export function makeLargeTexts(rows: readonly Map<string, RowValue>[]): ArrayBuffer[] {
  const moved: ArrayBuffer[] = [];
  for (const row of rows) {
    for (const [key, value] of row) {
      if (typeof value !== "string") continue;
      const large = largeText(value);
      if (large === null) continue;
      row.set(key, large);
      moved.push(large.utf8.buffer as ArrayBuffer, large.json.buffer as ArrayBuffer);
    }
  }
  return moved;
}

/** On the main thread: the large texts of rows that came from another thread made whole again. */
export function reviveLargeTexts(rows: readonly Map<string, RowValue>[]): void {
  for (const row of rows) {
    for (const [key, value] of row) {
      if (value === null || typeof value !== "object") continue;
      const { utf8, json } = value as unknown as ClonedLargeText;
      row.set(
        key,
        new LargeText(
          Buffer.from(utf8.buffer, utf8.byteOffset, utf8.byteLength),
          Buffer.from(json.buffer, json.byteOffset, json.byteLength),
        ),
      );
    }
  }
}
