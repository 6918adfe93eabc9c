import { type FSWatcher, lstatSync, readdirSync, watch } from "node:fs";
import { BUILT_IN_SKIPS } from "../scan/ignore-rules.js";
import { parentKey, reported, SymlinkTargets } from "./symlink-targets.js";

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
 * A file may still be written after the refresh that its first event caused has read it.
 * Paths of every batch are looked at once more this much later (and re-read only if they
 * changed), so a quick second write is never lost.
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
  /** Folders watched now (one inotify watch each). */
  readonly folders: number;
  /**
   * Hands over the changes seen so far at once (no waiting for the batch to close) and
   * resolves when the handler is done with them.
   */
  settle(): Promise<void>;
}

/** Batches `settle` hands over at most: a tree that never stops changing never settles. */
const SETTLE_ROUNDS = 4;

/** Folders handled per turn of the event loop while watches are added. */
const FOLDERS_PER_SLICE = 256;

const SLASH = Buffer.from("/");

/**
 * Folder keys are raw relative paths held as latin1 strings: one character per byte, so a name
 * that is not UTF-8 keeps its identity; `""` is the root.
 */
function childKey(folder: string, name: string): string {
  return folder === "" ? name : `${folder}/${name}`;
}

function isSkipped(key: string): boolean {
  return key.split("/").some((segment) => BUILT_IN_SKIPS.has(segment));
}

/**
 * Watches the tree with one inotify watch per folder (`fs.watch` on each, not recursive) and
 * hands over coalesced batches of changed paths, relative and `/`-separated. A burst on one
 * file is one entry; the handler re-reads the file, so the final state is never lost.
 *
 * Not chokidar: one watch and one stat cache entry per file, and an initial stat of every file,
 * make a big tree slow to start watching and heavy to keep; a folder watch costs one listing
 * of the folder's entry types at start and nothing per file. A folder that appears (created,
 * moved in) is watched before its batch is handled, and the handler reads it whole; one that
 * goes away (deleted, moved out) loses its watches, so a moved folder's old watch never
 * reports under its old name.
 *
 * A symlinked file is a row with its target's size, times and content, but an edit reaches
 * inotify under the target's path only: every batch also names each link whose target (or a
 * link on the way to it) is one of its paths or lies under one. Links are found while folders
 * are listed and read again when they or what they resolve through change; a target in a
 * folder that gets no watch of its own (an ignored one) gets a watch on its folder.
 */
export function watchTree(root: string, options: WatchOptions): TreeWatcher {
  const quietMs = options.quietMs ?? 10;
  const maxWaitMs = options.maxWaitMs ?? 100;
  const rootBytes = Buffer.from(root, "utf8");
  let pending = emptyBatch();
  /** Names of `rename` events since the last batch: folders may have come or gone there. */
  let renamed = new Set<string>();
  let firstEventAt = 0;
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let closed = false;
  let polling = false;
  let pollTimer: NodeJS.Timeout | null = null;
  let ignoredFolder: (path: string) => boolean = () => false;
  const folders = new Map<string, FSWatcher>();
  const links = new SymlinkTargets(root);
  /** Folders watched only because a link leads into them; their events stand for the links. */
  const targetFolders = new Map<string, FSWatcher>();
  /** Paths changed in those folders since the last batch (reported form). */
  let targetChanges = new Set<string>();
  /** `links.version` when the target folders were last brought in line with the links. */
  let targetFoldersAt = -1;

  const absolute = (key: string): Buffer =>
    key === "" ? rootBytes : Buffer.concat([rootBytes, SLASH, Buffer.from(key, "latin1")]);

  const flush = async () => {
    timer = null;
    if (running) {
      await running;
      if (timer === null && hasPending()) schedule();
      return;
    }
    const batch = pending;
    const appeared = renamed;
    const atTargets = targetChanges;
    pending = emptyBatch();
    renamed = new Set();
    targetChanges = new Set();
    if (closed || (!hasAny(batch) && atTargets.size === 0)) return;
    const started = Date.now();
    running = (async () => {
      // Before the handler reads them: a new folder's later changes are then seen too.
      await resync(appeared);
      followLinks(batch, atTargets);
      if (hasAny(batch)) await options.onBatch(batch);
    })().catch((error) => options.onError?.(error));
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

  const hasAny = (batch: ChangeBatch) => batch.paths.size > 0 || batch.recheck.size > 0;
  const hasPending = () => hasAny(pending) || targetChanges.size > 0;

  const schedule = () => {
    const now = Date.now();
    if (timer === null) firstEventAt = now;
    else clearTimeout(timer);
    const wait = Math.max(0, Math.min(quietMs, firstEventAt + maxWaitMs - now));
    timer = setTimeout(() => void flush(), wait);
  };

  const onEvent = (folder: string, event: string, name: Buffer | string | null) => {
    if (closed) return;
    if (name === null) {
      // The kernel dropped events (queue overflow): read the folder again, and list it again
      // for the folders and links it may have gained.
      pending.paths.add(reported(folder));
      renamed.add(folder);
      schedule();
      return;
    }
    const key = childKey(folder, typeof name === "string" ? name : name.toString("latin1"));
    if (isSkipped(key)) return;
    // A watched folder's own content is its own watch's business.
    if (event === "change" && folders.has(key)) return;
    const path = reported(key);
    pending.paths.add(path);
    if (path === ".gitignore" || path.endsWith("/.gitignore")) pending.rescan = true;
    if (event === "rename") renamed.add(key);
    schedule();
  };

  /** Watches one folder; `false` when it cannot be (gone, unreadable, or past the limit). */
  const watchFolder = (key: string): boolean => {
    if (folders.has(key)) return true;
    try {
      const watcher = watch(absolute(key), { encoding: "buffer" }, (event, name) =>
        onEvent(key, event, name),
      );
      // Its folder was removed or became unreadable: the parent's event says what happened.
      watcher.on("error", () => unwatch(key));
      folders.set(key, watcher);
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "";
      if (WATCH_LIMIT_CODES.has(code)) onWatchError(error);
      return false;
    }
  };

  const unwatch = (key: string) => {
    folders.get(key)?.close();
    folders.delete(key);
  };

  /** Stops watching a folder and every folder under it. */
  const unwatchTree = (key: string) => {
    if (!folders.has(key)) return;
    const prefix = `${key}/`;
    for (const each of [...folders.keys()]) {
      if (each === key || each.startsWith(prefix)) unwatch(each);
    }
  };

  /**
   * Watches a folder and every folder under it that is not ignored: each is watched before it
   * is listed, so an entry made meanwhile is either listed or reported. Symlinked folders are
   * not followed (a directory entry's own type decides). Yields between slices.
   */
  const watchTreeFrom = async (start: string) => {
    const stack = [start];
    let handled = 0;
    while (stack.length > 0 && !closed && !polling) {
      const key = stack.pop() as string;
      if (key !== "" && (isSkipped(key) || ignoredFolder(reported(key)))) continue;
      if (!watchFolder(key)) continue;
      let entries;
      try {
        entries = readdirSync(absolute(key), { withFileTypes: true, encoding: "buffer" });
      } catch {
        continue;
      }
      for (const entry of entries) {
        const child = childKey(key, entry.name.toString("latin1"));
        if (entry.isDirectory()) stack.push(child);
        else if (entry.isSymbolicLink() && !isSkipped(child)) links.update(child);
      }
      if (++handled % FOLDERS_PER_SLICE === 0) await new Promise(setImmediate);
    }
  };

  /**
   * After `rename` events: folders that went away lose their watches and links; new ones get
   * them. A link made, removed or retargeted is a `rename` of its own name.
   */
  const resync = async (keys: Set<string>) => {
    for (const key of keys) {
      unwatchTree(key);
      links.forgetUnder(key);
      let stats;
      try {
        stats = lstatSync(absolute(key));
      } catch {
        // gone
      }
      if (stats?.isSymbolicLink() && !isSkipped(key)) links.update(key);
      if (stats?.isDirectory() && !polling) await watchTreeFrom(key);
    }
  };

  /**
   * Adds to the batch every link whose lookup goes through a path of the batch (or a path
   * changed in a target folder), after reading those links again: a target renamed away
   * breaks the link, one that comes back mends it, a link on the way may now lead elsewhere.
   */
  const followLinks = (batch: ChangeBatch, atTargets: Set<string>) => {
    const affected = new Set<string>();
    for (const path of batch.paths) links.linksAt(path, affected);
    for (const path of atTargets) links.linksAt(path, affected);
    for (const link of affected) {
      links.update(link);
      batch.paths.add(reported(link));
    }
    if (affected.size > 0 || links.version !== targetFoldersAt) syncTargetFolders();
  };

  /**
   * Watches the folders that hold a link's target but have no watch of their own (ignored or
   * skipped ones: a link in a watched folder may still lead there and is a row). Where a
   * target's folder does not exist, its nearest existing folder is watched, so the folder's
   * creation is seen and the watch moves down.
   */
  const syncTargetFolders = () => {
    targetFoldersAt = links.version;
    const wanted = new Set<string>();
    // Past the watch limit every change is found by the rescans.
    if (!polling) {
      for (const path of links.dependencies()) {
        let folder = parentKey(path);
        while (folder !== "" && !folders.has(folder) && !isFolderAt(folder)) {
          folder = parentKey(folder);
        }
        if (!folders.has(folder)) wanted.add(folder);
      }
    }
    for (const folder of [...targetFolders.keys()]) {
      if (!wanted.has(folder)) unwatchTarget(folder);
    }
    for (const folder of wanted) if (!targetFolders.has(folder)) watchTargetFolder(folder);
  };

  const isFolderAt = (key: string): boolean => {
    try {
      return lstatSync(absolute(key)).isDirectory();
    } catch {
      return false;
    }
  };

  const onTargetEvent = (folder: string, name: Buffer | null) => {
    if (closed) return;
    if (name === null) {
      targetChanges.add(reported(folder));
    } else {
      const base = name.toString("latin1");
      targetChanges.add(reported(childKey(folder, base)));
      // A watched folder that is moved or removed reports its own name; the watch would
      // follow it elsewhere, so it is dropped and made again where the link needs it.
      if (base === folder.slice(folder.lastIndexOf("/") + 1)) {
        targetChanges.add(reported(folder));
        unwatchTarget(folder);
      }
    }
    schedule();
  };

  const watchTargetFolder = (key: string) => {
    try {
      const watcher = watch(absolute(key), { encoding: "buffer" }, (_event, name) =>
        onTargetEvent(key, name),
      );
      watcher.on("error", () => {
        unwatchTarget(key);
        onTargetEvent(key, null);
      });
      targetFolders.set(key, watcher);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "";
      if (WATCH_LIMIT_CODES.has(code)) onWatchError(error);
    }
  };

  const unwatchTarget = (key: string) => {
    targetFolders.get(key)?.close();
    targetFolders.delete(key);
  };

  const unwatchAll = () => {
    for (const watcher of folders.values()) watcher.close();
    folders.clear();
    for (const watcher of targetFolders.values()) watcher.close();
    targetFolders.clear();
    links.clear();
  };

  const open = async () => {
    ignoredFolder = options.ignoredFolders?.() ?? (() => false);
    await watchTreeFrom("");
    if (!closed) syncTargetFolders();
  };

  /**
   * Ignore rules changed: watch again with the new ones (a folder no longer ignored needs its
   * watch, a newly ignored one loses it), then rescan once more for what changed while no
   * watcher looked.
   */
  const reopen = async () => {
    unwatchAll();
    await open();
    if (closed) return;
    pending.rescan = true;
    pending.paths.add("");
    schedule();
  };

  const ready = open();
  return {
    ready,
    get folders() {
      return folders.size;
    },
    async settle() {
      for (let round = 0; round < SETTLE_ROUNDS && !closed; round++) {
        while (running) await running;
        if (!hasPending()) return;
        if (timer !== null) clearTimeout(timer);
        await flush();
      }
    },
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      if (pollTimer) clearTimeout(pollTimer);
      unwatchAll();
      await running;
    },
  };
}
