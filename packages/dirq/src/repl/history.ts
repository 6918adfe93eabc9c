import {
  appendFileSync,
  closeSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { makeFolder } from "../make-folder.js";

/** Statements the history file keeps. */
export const HISTORY_LIMIT = 1000;

/**
 * Where the history lives: `$XDG_DATA_HOME/dirq/history`, else `~/.local/share/dirq/history`
 * (`%APPDATA%\dirq\history` on Windows); `null` when none resolves (history for the session
 * only).
 */
export function historyPath(
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string | null {
  if (platform === "win32") {
    return env.APPDATA ? join(env.APPDATA, "dirq", "history") : null;
  }
  // The XDG spec says a relative value is invalid and must be ignored.
  const xdg = env.XDG_DATA_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, "dirq", "history");
  let home = env.HOME;
  if (!home) {
    try {
      home = homedir();
    } catch {
      return null;
    }
  }
  return home ? join(home, ".local", "share", "dirq", "history") : null;
}

/** One entry per line: a multi-line statement keeps its newlines as `\n` (and `\` as `\\`). */
function encode(entry: string): string {
  return entry.replaceAll("\\", "\\\\").replaceAll("\r", "\\r").replaceAll("\n", "\\n");
}

function decode(line: string): string {
  return line.replace(/\\(.)/g, (_, escaped: string) =>
    escaped === "n" ? "\n" : escaped === "r" ? "\r" : escaped,
  );
}

function readEntries(path: string): string[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map(decode);
}

/** A lock older than this belongs to a session that died holding it. */
const STALE_LOCK_MS = 10_000;
/**
 * How long a session waits for the lock before it writes without it. Long enough that a holder
 * descheduled on a loaded machine finishes first (its work is one append and one rewrite).
 */
const LOCK_PATIENCE_MS = 2_000;
const LOCK_WAIT_MS = 5;

/**
 * Runs `task` holding `<path>.lock` (created exclusively), so that two sessions never trim
 * the file over each other's appends. Without the lock after LOCK_PATIENCE_MS, runs anyway: a
 * lost entry is better than a hung prompt.
 */
function withLock(path: string, task: () => void): void {
  const lock = `${path}.lock`;
  const deadline = Date.now() + LOCK_PATIENCE_MS;
  let held = false;
  while (!held) {
    try {
      closeSync(openSync(lock, "wx"));
      held = true;
    } catch (error) {
      // Only another session's lock is worth waiting for; a folder we cannot write is not.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST" || Date.now() > deadline) break;
      try {
        if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) rmSync(lock, { force: true });
      } catch {
        // The holder just released it.
      }
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, LOCK_WAIT_MS);
    }
  }
  try {
    task();
  } finally {
    if (held) rmSync(lock, { force: true });
  }
}

/** The statement history: the file's last entries, and this session's as they are added. */
export class History {
  /** Newest first, as node:readline keeps its history. */
  readonly entries: string[];

  private constructor(
    private readonly path: string | null,
    entries: string[],
  ) {
    this.entries = entries;
  }

  /** Loads the file at `path` (missing or unreadable: empty); `null`: this session only. */
  static load(path: string | null): History {
    const entries = path === null ? [] : readEntries(path).slice(-HISTORY_LIMIT).reverse();
    return new History(path, entries);
  }

  /**
   * Adds a statement (a repeat of the newest entry is not added again) and appends it to the
   * file, trimming the file to the last `HISTORY_LIMIT` entries through a renamed temp file,
   * so a reader never sees half a file. A file that cannot be written leaves the history
   * for this session only; returns the reason then.
   */
  add(statement: string): string | null {
    const entry = statement.trim();
    if (entry === "" || this.entries[0] === entry) return null;
    this.entries.unshift(entry);
    if (this.entries.length > HISTORY_LIMIT) this.entries.length = HISTORY_LIMIT;
    if (this.path === null) return null;
    const path = this.path;
    try {
      makeFolder(dirname(path));
      withLock(path, () => {
        appendFileSync(path, `${encode(entry)}\n`);
        const all = readEntries(path);
        if (all.length <= HISTORY_LIMIT) return;
        const temp = `${path}.${process.pid}.tmp`;
        writeFileSync(
          temp,
          all
            .slice(-HISTORY_LIMIT)
            .map((e) => `${encode(e)}\n`)
            .join(""),
        );
        renameSync(temp, path);
      });
      return null;
    } catch (error) {
      return (error as Error).message;
    }
  }
}
