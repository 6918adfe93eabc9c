/**
 * A row-level change, with rows of type `R`: the index's own changes carry each row as JSON
 * object text, the SDK's `watch()` events carry it parsed. Imports nothing, so the SDK's
 * declarations a consumer type-checks never reach the engine's internals.
 */
export type RowChangeOf<R> =
  | {
      action: "insert" | "update" | "delete";
      table: string;
      /** Path of the file the row came from, relative to the root. */
      file_path: string;
      row: R;
      /** The previous row of an `update`; `null` otherwise. */
      old_row: R | null;
    }
  | {
      action: "error";
      /** The table, or `null` when the failure is not tied to one. */
      table: string | null;
      file_path: string;
      error: string;
    };
