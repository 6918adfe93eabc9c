import { createHash, randomBytes } from "node:crypto";
import {
  accessSync,
  constants,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import type { CompletionResponse } from "./types.js";

/** Most answers the in-memory cache keeps before it drops the least recently used. */
export const DEFAULT_CACHE_MAX_ENTRIES = 100_000;

/** Version of the files the disk level writes; another version is read as a miss. */
const DISK_FORMAT = 1;

/** `configureCache` options, under DSPy's `configure_cache` names or their camelCase spelling. */
export interface CacheOptions {
  /** Keep answers in a folder too, so a later process finds them (default `false`). */
  enable_disk_cache?: boolean;
  enableDiskCache?: boolean;
  /**
   * The folder of the disk level; giving one turns it on. Default when `enable_disk_cache` is
   * `true`: `$LMCLIENT_CACHEDIR`, else `$XDG_CACHE_HOME/lmclient`, else `~/.cache/lmclient`.
   */
  disk_cache_dir?: string;
  diskCacheDir?: string;
  /** Keep answers in memory (default `true`). */
  enable_memory_cache?: boolean;
  enableMemoryCache?: boolean;
  /** Most answers kept in memory (default `DEFAULT_CACHE_MAX_ENTRIES`). */
  memory_max_entries?: number;
  memoryMaxEntries?: number;
}

const OPTION_SPELLINGS: Record<keyof CacheOptions & string, string> = {
  enable_disk_cache: "enableDiskCache",
  enableDiskCache: "enableDiskCache",
  disk_cache_dir: "diskCacheDir",
  diskCacheDir: "diskCacheDir",
  enable_memory_cache: "enableMemoryCache",
  enableMemoryCache: "enableMemoryCache",
  memory_max_entries: "memoryMaxEntries",
  memoryMaxEntries: "memoryMaxEntries",
};

/**
 * The process-wide response cache, DSPy's `dspy.cache`: every `CompatLM` and its copies read and
 * fill the same one, so a copy, or a second client for the same model, does not ask again. In
 * memory by default; a folder on disk as well when `configure` asks for one.
 */
export class ResponseCache {
  #entries = new Map<string, CompletionResponse>();
  #maxEntries = DEFAULT_CACHE_MAX_ENTRIES;
  #memory = true;
  #diskDir: string | undefined;
  #warnedDiskWrite = false;

  /** Number of answers held in memory. */
  get size(): number {
    return this.#entries.size;
  }

  get maxEntries(): number {
    return this.#maxEntries;
  }

  set maxEntries(value: number) {
    this.#maxEntries = checkMaxEntries(value, "responseCache.maxEntries");
    this.#evict();
  }

  /** The folder of the disk level, or `undefined` when answers are kept in memory only. */
  get diskCacheDir(): string | undefined {
    return this.#diskDir;
  }

  /**
   * Sets the cache up as DSPy's `dspy.configure_cache` does: a fresh cache (memory emptied) with
   * the levels asked for. The disk folder is created now; one that cannot be is an error here,
   * not a silent miss at every call.
   */
  configure(options: CacheOptions = {}): void {
    const picked = pickOptions(options);
    const diskDir = diskFolder(picked);
    const memory = picked.enableMemoryCache ?? true;
    if (typeof memory !== "boolean") {
      throw new TypeError(`enable_memory_cache must be true or false, got ${String(memory)}.`);
    }
    const maxEntries =
      picked.memoryMaxEntries === undefined
        ? DEFAULT_CACHE_MAX_ENTRIES
        : checkMaxEntries(picked.memoryMaxEntries, "memory_max_entries");
    if (diskDir !== undefined) prepareFolder(diskDir);
    this.#entries.clear();
    this.#memory = memory;
    this.#maxEntries = maxEntries;
    this.#diskDir = diskDir;
    this.#warnedDiskWrite = false;
  }

  /**
   * Forgets the answers held in memory (DSPy's `dspy.cache.reset_memory_cache()`); with
   * `{ disk: true }`, the disk folder's answers too.
   */
  clear(options: { disk?: boolean } = {}): void {
    this.#entries.clear();
    if (options.disk === true && this.#diskDir !== undefined) {
      for (const shard of SHARDS)
        rmSync(join(this.#diskDir, shard), { recursive: true, force: true });
    }
  }

  /**
   * A fresh copy of the answer stored under `key`, marked as DSPy marks a hit: `usage` is `{}`
   * (no tokens were spent) and `cache_hit` is `true` (not enumerable, so the JSON shape is a
   * fresh answer's). Memory first, then the disk folder (a disk hit is kept in memory too).
   */
  get(key: string): CompletionResponse | undefined {
    let stored = this.#memory ? this.#entries.get(key) : undefined;
    if (stored !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, stored);
    } else {
      stored = this.#readDisk(key);
      if (stored === undefined) return undefined;
      if (this.#memory) this.#remember(key, stored);
    }
    const response = structuredClone(stored);
    response.usage = {};
    Object.defineProperty(response, "cache_hit", { value: true, configurable: true });
    return response;
  }

  /** Keeps a copy of `response` under `key` (the caller may change its own). */
  put(key: string, response: CompletionResponse): void {
    if (this.#memory) this.#remember(key, structuredClone(response));
    this.#writeDisk(key, response);
  }

  #remember(key: string, response: CompletionResponse): void {
    this.#entries.delete(key);
    this.#entries.set(key, response);
    this.#evict();
  }

  #evict(): void {
    for (const key of this.#entries.keys()) {
      if (this.#entries.size <= this.#maxEntries) break;
      this.#entries.delete(key);
    }
  }

  /** The answer in the disk folder, or `undefined`; a damaged or foreign file is a miss, removed. */
  #readDisk(key: string): CompletionResponse | undefined {
    if (this.#diskDir === undefined) return undefined;
    const file = diskFile(this.#diskDir, key);
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      return undefined;
    }
    try {
      const record = JSON.parse(text) as { format?: unknown; response?: unknown };
      const response = record.response as { choices?: unknown } | undefined;
      if (record.format === DISK_FORMAT && Array.isArray(response?.choices)) {
        return response as CompletionResponse;
      }
    } catch {
      // Falls through: a file cut short by a crash, or written by something else.
    }
    try {
      unlinkSync(file);
    } catch {
      // Another process may have replaced or removed it meanwhile.
    }
    return undefined;
  }

  /**
   * Writes the answer to the disk folder through a temporary file renamed into place, so a
   * reader (another process included) sees a whole file or none. A failed write leaves the call
   * answered and warns once.
   */
  #writeDisk(key: string, response: CompletionResponse): void {
    if (this.#diskDir === undefined) return;
    const file = diskFile(this.#diskDir, key);
    const temporary = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      mkdirSync(join(this.#diskDir, key.slice(0, 2)), { recursive: true });
      writeFileSync(temporary, JSON.stringify({ format: DISK_FORMAT, response }));
      renameSync(temporary, file);
    } catch (error) {
      try {
        rmSync(temporary, { force: true });
      } catch {
        // The folder itself refuses: the warning below says so.
      }
      if (this.#warnedDiskWrite) return;
      this.#warnedDiskWrite = true;
      process.emitWarning(
        `lmclient could not write to its disk cache ${this.#diskDir} ` +
          `(${(error as Error).message}); answers are still cached in memory. ` +
          "Check the folder's permissions and free space.",
        { type: "LMClientWarning", code: "LMCLIENT_DISK_CACHE_WRITE" },
      );
    }
  }
}

/** The 256 subfolders of the disk level (the key's first two hex digits). */
const SHARDS = Array.from({ length: 256 }, (_, index) => index.toString(16).padStart(2, "0"));

function diskFile(folder: string, key: string): string {
  return join(folder, key.slice(0, 2), `${key}.json`);
}

function pickOptions(options: CacheOptions): Record<string, unknown> {
  if (typeof options !== "object" || options === null || Array.isArray(options)) {
    throw new TypeError('configureCache takes an object, e.g. { disk_cache_dir: ".lm-cache" }.');
  }
  const picked: Record<string, unknown> = {};
  const spelledAs: Record<string, string> = {};
  for (const [name, value] of Object.entries(options)) {
    const canonical = OPTION_SPELLINGS[name as keyof CacheOptions];
    if (canonical === undefined) {
      throw new TypeError(
        `configureCache: unknown option ${JSON.stringify(name)}; it takes ` +
          "enable_disk_cache, disk_cache_dir, enable_memory_cache and memory_max_entries " +
          "(the disk folder has no size limit: empty it with responseCache.clear({ disk: true })).",
      );
    }
    if (value === undefined || value === null) continue;
    const previous = spelledAs[canonical];
    if (previous !== undefined && picked[canonical] !== value) {
      throw new TypeError(`configureCache: pass ${previous} or ${name}, not both (they differ).`);
    }
    spelledAs[canonical] = name;
    picked[canonical] = value;
  }
  return picked;
}

/** The disk folder the options ask for, as an absolute path, or `undefined` for none. */
function diskFolder(picked: Record<string, unknown>): string | undefined {
  const enable = picked.enableDiskCache;
  if (enable !== undefined && typeof enable !== "boolean") {
    throw new TypeError(`enable_disk_cache must be true or false, got ${String(enable)}.`);
  }
  const dir = picked.diskCacheDir;
  if (dir !== undefined && (typeof dir !== "string" || dir.trim() === "")) {
    throw new TypeError("disk_cache_dir must be a non-empty path string.");
  }
  if (enable === false) return undefined;
  if (typeof dir === "string") return resolve(dir);
  return enable === true ? defaultDiskFolder() : undefined;
}

function defaultDiskFolder(): string {
  const explicit = process.env.LMCLIENT_CACHEDIR;
  if (explicit) return resolve(explicit);
  const xdg = process.env.XDG_CACHE_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, "lmclient");
  return join(homedir(), ".cache", "lmclient");
}

function prepareFolder(folder: string): void {
  try {
    mkdirSync(folder, { recursive: true });
    accessSync(folder, constants.W_OK);
  } catch (error) {
    throw new Error(
      `disk_cache_dir ${folder} cannot be used: ${(error as Error).message}. ` +
        "Pass a folder you can write to, or leave the disk cache off.",
    );
  }
}

function checkMaxEntries(value: unknown, label: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value <= 0) {
    throw new TypeError(`${label} must be a positive integer, got ${String(value)}.`);
  }
  return value;
}

/** The one cache every client shares. */
export const responseCache = new ResponseCache();

/** DSPy's `dspy.configure_cache`: sets up the shared `responseCache` (see `ResponseCache.configure`). */
export function configureCache(options: CacheOptions = {}): void {
  responseCache.configure(options);
}

/**
 * The cache key of a request, as DSPy builds it: a SHA-256 of the request with its keys sorted,
 * so the order arguments were given in does not matter. `rollout_id` is part of it although it
 * is never sent.
 */
export function cacheKey(bodyJson: string, rolloutId: unknown): string {
  const request = JSON.parse(bodyJson) as Record<string, unknown>;
  if (rolloutId !== undefined && rolloutId !== null) request.rollout_id = rolloutId;
  return createHash("sha256").update(sortedJson(request)).digest("hex");
}

function sortedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(sortedJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const record = value as Record<string, unknown>;
    const fields = Object.keys(record)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${sortedJson(record[key])}`);
    return `{${fields.join(",")}}`;
  }
  return JSON.stringify(value);
}
