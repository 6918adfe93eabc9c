import { relative, sep } from "node:path";
import type { Stats } from "node:fs";
import { type FSWatcher, watch } from "chokidar";
import { BUILT_IN_SKIPS } from "../scan/ignore-rules.js";

/**
 * Paths that changed since the last batch; `rescan` when ignore rules may have changed;
 * `recheck` for paths handled a moment ago, to re-read only if they changed again.
 */
export interface ChangeBatch {
  paths: Set<string>;
  recheck: Set<string>;
  rescan: boolean;
}

/**
 * chokidar drops a second `change` on a path within 50 ms of the first. Paths of every batch
 * are looked at once more this much later, so a quick second write is never lost.
 */
const RECHECK_AFTER_MS = 75;

/**
 * Once the system refuses more watches (inotify's `max_user_watches`, or too many open files),
 * the whole tree is rescanned this often, and at least four times as long as a rescan takes:
 * changes are found late, never lost.
 */
export const POLL_INTERVAL_MS = 2_000;

/** Errors that mean the system will not give the watcher another watch. */
const WATCH_LIMIT_CODES = new Set(["ENOSPC", "EMFILE", "ENFILE"]);

/** The one report of a watch limit reached: from then on the tree is polled. */
export class WatchLimitError extends Error {
  constructor(cause: NodeJS.ErrnoException) {
    const limit =
      cause.code === "ENOSPC"
        ? "the system limit on inotify watches (fs.inotify.max_user_watches)"
        : "the limit on open files";
    super(
      `${limit} is reached (${cause.code} for ${cause.path ?? "a folder"}): changes are now found by rescanning the tree every ${POLL_INTERVAL_MS / 1000} s or more; raise the limit for immediate updates`,
    );
  }
}

function emptyBatch(): ChangeBatch {
  return { paths: new Set(), recheck: new Set(), rescan: false };
}

export interface WatchOptions {
  /** Handles one batch at a time; the next batch waits until it resolves. */
  onBatch: (batch: ChangeBatch) => Promise<void>;
  onError?: (error: unknown) => void;
  /** A batch closes this long after the last event... */
  quietMs?: number;
  /** ...or this long after its first, whichever comes first (bursts never starve it). */
  maxWaitMs?: number;
  /**
   * Makes the test for folders not to watch (relative path → ignored), asked again whenever a
   * `.gitignore` changed. An ignored folder gets no watch at all (a build folder can hold tens
   * of thousands of files). Default: only the built-in skips.
   */
  ignoredFolders?: () => (path: string) => boolean;
}

export interface TreeWatcher {
  /** Resolves once the watcher sees the whole tree. */
  ready: Promise<void>;
  close(): Promise<void>;
}

function isSkipped(root: string, absolute: string): boolean {
  const path = relative(root, absolute);
  return path.split(sep).some((segment) => BUILT_IN_SKIPS.has(segment));
}

function relativePath(root: string, absolute: string): string {
  return relative(root, absolute).split(sep).join("/");
}

/**
 * Watches the tree recursively (chokidar) and hands over coalesced batches of changed paths,
 * relative and `/`-separated. A burst on one file is one entry; the handler re-reads the
 * file, so the final state is never lost.
 */
export function watchTree(root: string, options: WatchOptions): TreeWatcher {
  const quietMs = options.quietMs ?? 10;
  const maxWaitMs = options.maxWaitMs ?? 100;
  let pending = emptyBatch();
  let firstEventAt = 0;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let closed = false;
  let polling = false;
  let pollTimer: NodeJS.Timeout | null = null;
  let reopen: () => Promise<void> = async () => {};

  const flush = async () => {
    timer = null;
    if (running) {
      await running;
      if (timer === null && hasPending()) schedule();
      return;
    }
    const batch = pending;
    pending = emptyBatch();
    if ((batch.paths.size === 0 && batch.recheck.size === 0) || closed) return;
    const started = Date.now();
    running = options.onBatch(batch).catch((error) => options.onError?.(error));
    await running;
    running = null;
    if (batch.rescan && polling) schedulePoll(Date.now() - started);
    // A rescan that the reopening itself asked for has no new rules to pick up.
    if (batch.rescan && !batch.paths.has("") && !closed) void reopen();
    if (batch.paths.size > 0) {
      setTimeout(() => {
        if (closed) return;
        for (const path of batch.paths) if (path !== "") pending.recheck.add(path);
        schedule();
      }, RECHECK_AFTER_MS).unref();
    }
    if (hasPending() && timer === null) schedule();
  };

  /** The next rescan of a watcher past the system's limit. */
  const schedulePoll = (lastRescanMs: number) => {
    if (closed || pollTimer !== null) return;
    pollTimer = setTimeout(
      () => {
        pollTimer = null;
        if (closed) return;
        pending.rescan = true;
        pending.paths.add("");
        schedule();
      },
      Math.max(POLL_INTERVAL_MS, 4 * lastRescanMs),
    );
    pollTimer.unref();
  };

  /** A watch the system refused: say so once, and poll from then on (never go stale). */
  const onWatchError = (error: unknown) => {
    const code = (error as NodeJS.ErrnoException | null)?.code ?? "";
    if (!WATCH_LIMIT_CODES.has(code)) {
      options.onError?.(error);
      return;
    }
    if (polling) return;
    polling = true;
    options.onError?.(new WatchLimitError(error as NodeJS.ErrnoException));
    // What changed in folders nobody watches is found by the first rescan.
    schedulePoll(0);
  };

  const hasPending = () => pending.paths.size > 0 || pending.recheck.size > 0;

  const schedule = () => {
    const now = Date.now();
    if (timer === null) firstEventAt = now;
    else clearTimeout(timer);
    const wait = Math.max(0, Math.min(quietMs, firstEventAt + maxWaitMs - now));
    timer = setTimeout(() => void flush(), wait);
  };

  let ready: Promise<void> = Promise.resolve();
  let watcher: FSWatcher | null = null;
  const open = () => {
    const ignoredFolder = options.ignoredFolders?.() ?? (() => false);
    const next = watch(root, {
      ignoreInitial: true,
      followSymlinks: false,
      ignored: (absolute: string, stats?: Stats) => {
        if (isSkipped(root, absolute)) return true;
        if (!stats?.isDirectory()) return false;
        const path = relativePath(root, absolute);
        return path !== "" && !path.startsWith("..") && ignoredFolder(path);
      },
    });
    next.on("all", (_event, absolute) => {
      if (next !== watcher) return;
      const path = relativePath(root, absolute);
      if (path === "" || path.startsWith("..")) return;
      pending.paths.add(path);
      if (path === ".gitignore" || path.endsWith("/.gitignore")) pending.rescan = true;
      schedule();
    });
    // chokidar reports nothing for a name that is not valid UTF-8 (Node hands it over with
    // U+FFFD in place of the bad bytes): the raw event of the folder's watch still names it.
    next.on("raw", (_event, name, details) => {
      if (next !== watcher || typeof name !== "string" || !name.includes("\uFFFD")) return;
      const folder = (details as { watchedPath?: string } | undefined)?.watchedPath ?? root;
      const absolute = `${folder}/${name}`;
      if (isSkipped(root, absolute)) return;
      const path = relativePath(root, absolute);
      if (path === "" || path.startsWith("..")) return;
      pending.paths.add(path);
      schedule();
    });
    next.on("error", onWatchError);
    watcher = next;
    ready = new Promise<void>((resolve) => next.once("ready", () => resolve()));
    return ready;
  };
  /**
   * Ignore rules changed: watch again with the new ones (a folder no longer ignored needs its
   * watches), then rescan once more for what changed while no watcher looked.
   */
  reopen = async () => {
    const old = watcher;
    await open();
    await old?.close();
    if (closed) return;
    pending.rescan = true;
    pending.paths.add("");
    schedule();
  };
  open();
  return {
    ready,
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      if (pollTimer) clearTimeout(pollTimer);
      await watcher?.close();
      await running;
    },
  };
}
