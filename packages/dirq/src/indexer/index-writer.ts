import type { Statement } from "@rocicorp/zero-sqlite3";
import { isStorageError, storageError } from "./cache-file.js";
import type { SqliteDatabase } from "./database.js";

/**
 * The index's one writer: write tasks run one at a time, in order, and a failed task never
 * blocks the next. Reads never take it. Only write tasks change the schema, so the schema
 * version is remembered between them.
 */
export class IndexWriter {
  private tail: Promise<unknown> = Promise.resolve();
  /** Write tasks running now, and a count that moves whenever one starts or ends. */
  private readonly writers = { active: 0, epoch: 0 };
  /** The schema version read while no write task ran, and the epoch it was read at. */
  private schemaSeen: { epoch: number; version: number } | null = null;
  /** `PRAGMA schema_version`, prepared once: the server asks it for every request. */
  private schemaVersionStatement: Statement | null = null;

  constructor(
    private readonly db: SqliteDatabase,
    /** The index file, named in a storage error; `null` for an index in memory. */
    private readonly databasePath: string | null,
  ) {}

  /**
   * Runs a write task under the writer. A full or read-only disk under the index file is an
   * error naming the file, not an internal one.
   */
  run<T>(task: () => T | Promise<T>): Promise<T> {
    const tracked = async () => {
      this.writers.active++;
      this.writers.epoch++;
      try {
        return await task();
      } finally {
        this.writers.active--;
        this.writers.epoch++;
      }
    };
    const result = this.tail.then(tracked);
    this.tail = result.catch(() => undefined);
    return result.catch((error: unknown) => {
      if (this.databasePath !== null && isStorageError(error)) {
        throw storageError(this.databasePath, error);
      }
      throw error;
    });
  }

  /**
   * SQLite's schema version: moves with every table, column or index created or dropped.
   * Remembered between write tasks: asking SQLite for every request costs the server a
   * noticeable share of its time for statements it has not cached.
   */
  get schemaVersion(): number {
    const { active, epoch } = this.writers;
    if (active === 0 && this.schemaSeen?.epoch === epoch) return this.schemaSeen.version;
    this.schemaVersionStatement ??= this.db.prepare("PRAGMA schema_version").pluck();
    const version = this.schemaVersionStatement.get() as number;
    this.schemaSeen = active === 0 ? { epoch, version } : null;
    return version;
  }
}
