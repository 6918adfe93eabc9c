import { statSync } from "node:fs";
import { resolve } from "node:path";
import type { SqliteDatabase } from "../indexer/database.js";
import { DirqError } from "../errors.js";

/** One SQLite extension to load into every connection (serializable). */
export interface ExtensionSpec {
  /** Absolute path of the shared library. */
  path: string;
  /** The init function's name; `null` lets SQLite derive it from the file name. */
  entrypoint: string | null;
  /** `--extension ./vec0.so` or `config.toml: dirq.extension[0]`, for messages. */
  origin: string;
}

/**
 * Reads an `--extension` argument, `<path>` or `<path>::<entrypoint>`. A relative path
 * resolves against `cwd`; the path is taken literally (no suffix or search path is tried).
 */
export function parseExtensionArgument(argument: string, cwd: string): ExtensionSpec {
  const split = argument.lastIndexOf("::");
  const path = split < 0 ? argument : argument.slice(0, split);
  const entrypoint = split < 0 ? null : argument.slice(split + 2);
  if (path === "" || entrypoint === "") {
    throw new DirqError(
      "USAGE",
      `invalid --extension '${argument}': expected <path> or <path>::<entrypoint>. Run dirq --help for usage`,
    );
  }
  return { path: resolve(cwd, path), entrypoint, origin: `--extension ${argument}` };
}

function loadFailed(extension: ExtensionSpec, why: string): DirqError {
  return new DirqError(
    "EXTENSION_LOAD_FAILED",
    `SQLite extension ${extension.path} (${extension.origin}) ${why}`,
  );
}

/**
 * Loads each extension into `db`, in order. better-sqlite3 enables loading for its own C call
 * only: the `load_extension()` SQL function stays disabled, so SQL can never load a library.
 */
export function loadExtensions(db: SqliteDatabase, extensions: readonly ExtensionSpec[]): void {
  for (const extension of extensions) {
    const stats = statSync(extension.path, { throwIfNoEntry: false });
    if (stats === undefined) throw loadFailed(extension, "was not found: check the path");
    if (!stats.isFile()) throw loadFailed(extension, "is not a file");
    try {
      if (extension.entrypoint === null) db.loadExtension(extension.path);
      else db.loadExtension(extension.path, extension.entrypoint);
    } catch (error) {
      let reason = (error as Error).message.replaceAll("\n", " ");
      // SQLite retries with ".so" appended and reports that attempt's error, which misleads.
      if (reason.startsWith(`${extension.path}.so:`)) {
        reason = "it is not a shared library this system can load";
      }
      throw loadFailed(extension, `could not be loaded: ${reason}`);
    }
  }
}
