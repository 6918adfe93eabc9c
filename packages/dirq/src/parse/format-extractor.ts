import type { HookRow } from "./hook-rows.js";
import type { ExtractOutcome, ExtractTarget, Extractor } from "./extractor.js";
import { RowsError } from "./formats/document-rows.js";
import type { FormatName } from "./formats/format-names.js";
import {
  type CsvPieceSink,
  type JsonlPieceSink,
  readFileRows,
  type RecordSinks,
} from "./formats/read-file-rows.js";

/**
 * An extractor that reads files itself, in dirq's own process: a built-in format. Besides
 * `extract` (a file's rows at once, for a live refresh), it reads a file piece by piece
 * (`readRows`), so a table build can insert a large file's rows as they come.
 */
export interface ReaderExtractor extends Extractor {
  readonly format: FormatName;
  readonly each: string | null;
  /**
   * Hands the file's rows to `onRows` (once, or per piece of a large file) and returns `null`,
   * or the reason the file is skipped: rows handed over before a failure are to be discarded.
   * With `records`, a CSV or TSV file's records go there instead (see `readFileRows`).
   */
  readRows(
    file: ExtractTarget,
    onRows: (rows: HookRow[]) => void,
    records?: RecordSinks,
  ): string | null;
}

export function isReaderExtractor(extractor: Extractor): extractor is ReaderExtractor {
  return typeof (extractor as Partial<ReaderExtractor>).readRows === "function";
}

/** Carries an error of `onRows` through the reader, which would take it for the file's. */
class ConsumerError {
  constructor(readonly error: unknown) {}
}

/** The extractor of `format` (and `each`, or `null`), as a table's id names it. */
export function formatExtractor(format: FormatName, each: string | null): ReaderExtractor {
  /** `consume`, its errors carried through the reader as the consumer's own. */
  const guarded =
    <T>(consume: (items: T) => void) =>
    (items: T): void => {
      try {
        consume(items);
      } catch (error) {
        throw new ConsumerError(error);
      }
    };
  /** A piece consumer's `RowsError` (a record its parser refused) is the file's own. */
  const guardedPieces = (sink: CsvPieceSink): CsvPieceSink => ({
    maxWidth: sink.maxWidth,
    take: (piece) => {
      try {
        sink.take(piece);
      } catch (error) {
        throw error instanceof RowsError ? error : new ConsumerError(error);
      }
    },
  });
  /** A native JSON Lines consumer's errors are its own, as those of `onRows`. */
  const guardedLines = (sink: JsonlPieceSink): JsonlPieceSink => ({
    take: (piece, firstLine, elements, cuts) => {
      try {
        return sink.take(piece, firstLine, elements, cuts);
      } catch (error) {
        throw new ConsumerError(error);
      }
    },
    // The scan is the reader's own work, not the consumer's: its failure is the file's.
    scanArray: sink.scanArray,
  });
  const readRows = (
    file: ExtractTarget,
    onRows: (rows: HookRow[]) => void,
    records?: RecordSinks,
  ): string | null => {
    try {
      readFileRows(
        format,
        each,
        `${file.root}/${file.path}`,
        file.path,
        guarded(onRows),
        records && {
          onRecords: guarded(records.onRecords),
          csvPieces: records.csvPieces && guardedPieces(records.csvPieces),
          textNames: records.textNames,
          jsonlPieces: records.jsonlPieces && guardedLines(records.jsonlPieces),
        },
      );
      return null;
    } catch (error) {
      // What the rows' consumer threw (a constraint of the table) is its own, not the file's.
      if (error instanceof ConsumerError) throw error.error;
      if (error instanceof RowsError) return error.message;
      // A parser's own fault on some input: still this file's failure, never the table's.
      return `cannot parse the file as ${format}: ${(error as Error)?.message ?? String(error)}`;
    }
  };
  return {
    id: each === null ? `format:${format}` : `format:${format} each:${each}`,
    kind: "format",
    inputs: [],
    // Reading is synchronous work in this thread: more at once only interleaves it.
    concurrency: 1,
    format,
    each,
    readRows,
    async extract(file): Promise<ExtractOutcome> {
      const rows: HookRow[] = [];
      const reason = readRows(file, (batch) => {
        for (const row of batch) rows.push(row);
      });
      return reason === null ? { ok: true, rows } : { ok: false, reason };
    },
  };
}
