/// <reference types="node" preserve="true" />
/**
 * dirq's public API: a directory tree as a read-only SQLite database, in-process. Everything
 * else in the package is internal and may change without notice.
 */
export type { TableDefinition } from "./sdk/code-tables.js";
export {
  Dirq,
  open,
  type OpenOptions,
  type QueryJsonOptions,
  type QueryOptions,
  type SkippedFile,
  type WatchOptions,
} from "./sdk/dirq.js";
export type { RowEventStream } from "./sdk/row-event-stream.js";
export type { LiveChange, LiveOptions, LiveRows } from "./sdk/live-rows.js";
export type { ResetEvent, Row, RowEvent, RowValue, WatchEvent } from "./sdk/types.js";
export type { ParameterValue, QueryParameters } from "./query/parameters.js";
export type { ExtractedRows, ExtractFunction } from "./parse/extractor.js";
export type { ProgressPhase, ProgressReporter } from "./progress/reporter.js";
export { DirqError, type DirqErrorCode, isDirqError } from "./errors.js";
