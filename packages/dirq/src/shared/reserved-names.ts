/**
 * dirq's reserved names, in one place below every module that needs them (the indexer
 * creates the hidden columns, the query layer hides and guards them).
 */

/** Hidden columns of every parsed table: which file a row came from and its place there. */
export const FILE_PATH_COLUMN = "_dirq_file_path";
export const ROW_INDEX_COLUMN = "_dirq_row_index";

/** The hidden columns, lower-cased: left out of `SELECT *`, queryable by name. */
export const HIDDEN_COLUMNS: ReadonlySet<string> = new Set([FILE_PATH_COLUMN, ROW_INDEX_COLUMN]);

/** Internal tables and keys a hook may not set start with this prefix (any case). */
export const INTERNAL_PREFIX = /^_dirq_/i;
