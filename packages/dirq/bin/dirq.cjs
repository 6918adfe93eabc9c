#!/usr/bin/env node
// The npm launcher: plugin discovery (see docs/plugins.md), then the CLI. CommonJS, like the
// bundle it loads (see scripts/build-cli.mjs): start-up counts, and Node's ES module loader
// costs more to start than a query needing no table does to run.
"use strict";
// ASCII only (a test checks): one other character and V8 holds and scans the file as UTF-16.

/**
 * `require`, with Node's built-in modules taken from `process.getBuiltinModule` where Node has
 * it (20.16 and later; it answers undefined for anything else): `require` goes through the
 * module loader's resolution and caches, slow the first time and not free after, and a start
 * makes some 50 calls, nearly all for built-ins. The bundle's `require` (bundleRequire) is
 * this one for anything but its own chunks.
 */
function requireModule(id) {
  return process.getBuiltinModule?.(id) ?? require(id);
}

const {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} = requireModule("node:fs");
const { dirname, isAbsolute, join } = requireModule("node:path");
const { Script } = requireModule("node:vm");

/** Where the CLI's bundle and its chunks are (see scripts/build-cli.mjs). */
const BUNDLE_FOLDER = join(__dirname, "..", "dist", "src", "cli-bundle");

/**
 * Code caches kept per cache folder and file of the bundle (`cli` and `cli+paths` for the
 * bundle, see bundleCacheName; `cli.<chunk>` for a chunk): one per Node build and dirq install
 * in use.
 */
const CODE_CACHES_KEPT = 8;

/** Room for the bundle and its code cache (about 170 and 200 to 260 kB). */
const READ_BUFFER_BYTES = 512 * 1024;

/** A chunk's first read buffer (it doubles for a bigger file). */
const CHUNK_BUFFER_BYTES = 64 * 1024;

/**
 * A code cache file starts with this, then the checksum of V8's bytes (8 hex digits, see
 * checksum), a space, the kinds of run it holds the code of (RunKind in src/cli/main.ts,
 * comma-separated) and spaces up to a line of a multiple of 8 bytes: V8 copies cache data that
 * does not start 8-byte aligned. V8's own bytes follow.
 */
const CACHE_HEADER = "dirq-code-cache ";

/** A header is found within this many bytes, or the file is not a cache (a damaged one). */
const MAX_HEADER_BYTES = 256;

/**
 * The user's cache folder for dirq (`DIRQ_CACHE_DIR`, else `$XDG_CACHE_HOME/dirq`, else
 * `~/.cache/dirq`; `~/Library/Caches/dirq` on macOS, `%LOCALAPPDATA%\dirq\Cache` on Windows),
 * or null. src/cache-folder.ts finds the same one.
 */
function cacheFolder(env) {
  if (env.DIRQ_CACHE_DIR) return env.DIRQ_CACHE_DIR;
  if (process.platform === "win32") {
    return env.LOCALAPPDATA ? join(env.LOCALAPPDATA, "dirq", "Cache") : null;
  }
  // The XDG spec says a relative value is invalid and must be ignored.
  if (env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME)) {
    return join(env.XDG_CACHE_HOME, "dirq");
  }
  let home = env.HOME;
  try {
    // node:os only when HOME is unset: it is a module of its own to load at every start.
    home ||= requireModule("node:os").homedir();
  } catch {
    return null;
  }
  if (!home) return null;
  return process.platform === "darwin"
    ? join(home, "Library", "Caches", "dirq")
    : join(home, ".cache", "dirq");
}

/** FNV-1a, 32 bits, as 8 hex digits: a short name for a long text (node:crypto costs a load). */
function shortHash(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

/** The Node binary's size and modification time, taken once (see codeCachePath). */
let nodeStamp;

/**
 * Where this Node build's code cache for one file of the bundle lives in the cache folder, or
 * null (turned off with DIRQ_CODE_CACHE=0, or no cache folder). `name` is the file's (`cli`,
 * `cli+paths`, `cli.<chunk>`). V8 checks only its own version, its flags and the source's length before it
 * takes a cache, and every Node 20 patch release has the same V8 version, yet a cache made by
 * one crashes the code on another. So the name keys the exact Node binary (version, size and
 * modification time: a distribution's rebuild keeps the version) and the exact file (size and
 * time: an install writes the file anew), and each machine makes its own cache: none ships in
 * the package. The name is made of those numbers as they are (hashing the paths as well would
 * be a cost at every start); only Node's flags, when there are any, are hashed into it.
 */
function codeCachePath(name, file, env, folder) {
  if (env.DIRQ_CODE_CACHE === "0" || !folder) return null;
  try {
    nodeStamp ??= statSync(process.execPath);
    const code = statSync(file);
    const flags = `${process.execArgv.join(" ")} ${env.NODE_OPTIONS ?? ""}`.trim();
    const key = [
      name,
      process.version,
      process.arch,
      nodeStamp.size,
      nodeStamp.mtimeMs,
      code.size,
      code.mtimeMs,
      ...(flags === "" ? [] : [shortHash(flags)]),
    ].join("-");
    return join(folder, `${key}.v8cache`);
  } catch {
    return null;
  }
}

/**
 * The kinds a cache file holds the code of, and V8's bytes after the header; null for a file
 * that is not a whole cache.
 */
function readCodeCache(bytes) {
  // A shorter file reads as a shorter string, which differs too.
  if (bytes.toString("latin1", 0, CACHE_HEADER.length) !== CACHE_HEADER) return null;
  const limit = Math.min(bytes.length, MAX_HEADER_BYTES);
  let end = CACHE_HEADER.length;
  while (end < limit && bytes[end] !== 0x0a) end++;
  if (end === limit) return null;
  const [sum, listed = ""] = bytes.toString("latin1", CACHE_HEADER.length, end).trim().split(" ");
  if (!/^[0-9a-f]{8}$/.test(sum)) return null;
  return {
    sum,
    kinds: new Set(listed === "" ? [] : listed.split(",")),
    data: bytes.subarray(end + 1),
  };
}

/**
 * FNV-1a over 32-bit words, as 8 hex digits: whether V8's bytes are the ones written. V8 checks
 * only a cache's version, flags and source length; changed bytes inside (a disk or copy error)
 * crash it. node:crypto and node:zlib cost a module load at every start; this costs time only
 * when a cache file is new to this machine's runs (see usableCache).
 */
function checksum(data) {
  const aligned = data.byteOffset % 4 === 0 ? data : Buffer.from(data);
  const words = new Int32Array(aligned.buffer, aligned.byteOffset, aligned.length >> 2);
  let hash = 0x811c9dc5;
  for (let i = 0; i < words.length; i++) hash = Math.imul(hash ^ words[i], 0x01000193);
  for (let i = words.length * 4; i < aligned.length; i++) {
    hash = Math.imul(hash ^ aligned[i], 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}

/**
 * A code cache V8 may be given, or null. Every run that uses a cache marks it while it runs
 * (`<cache>.run`, its pid, made before V8 sees the cache and removed as the run exits): a
 * marker left by a process that is gone means a run died with this cache, and the cache is
 * not used again. A cache file that is new to this machine's runs (just written, copied,
 * restored, changed) has its checksum verified first; its identity (inode, change time, size)
 * is then recorded (`<cache>.ok`), so later runs skip the check. A cache that fails either
 * test is removed: this run compiles as usual and writes a new one.
 */
function usableCache(cachePath, buffer) {
  let bytes;
  let identity;
  try {
    ({ bytes, identity } = readWithIdentity(cachePath, buffer));
  } catch {
    return null; // the first run of this Node build: compile as usual
  }
  const cached = readCodeCache(bytes);
  if (cached === null) return null;
  const marker = markRun(`${cachePath}.run`);
  const verified = `${cachePath}.ok`;
  if (
    marker === "died" ||
    (readText(verified) !== identity && !verify(cached, verified, identity))
  ) {
    removeFiles([cachePath, verified, `${cachePath}.run`]);
    return null;
  }
  // A marker that cannot be made: the run could die unnoticed, so it compiles as usual.
  return marker === "failed" ? null : cached;
}

/** Whether a cache's checksum holds; records its identity when it does (see usableCache). */
function verify(cached, verifiedPath, identity) {
  if (checksum(cached.data) !== cached.sum) return false;
  try {
    writeFileSync(verifiedPath, identity);
  } catch {
    // unrecorded: the next run checks again
  }
  return true;
}

/**
 * Marks this run as running with a cache: "marked" (the marker is this run's, removed as it
 * exits), "shared" (another live run's marker is there), "died" (the marker names a process
 * that has ended: it died with the cache) or "failed" (no marker can be made).
 */
function markRun(path) {
  try {
    writeFileSync(path, String(process.pid), { flag: "wx" });
  } catch (error) {
    if (error.code !== "EEXIST") return "failed";
    return diedWith(readText(path)) ? "died" : "shared";
  }
  process.once("exit", () => releaseRunMarker(path));
  return "marked";
}

/**
 * Removes this run's marker, if it made one (see markRun): once removed, another run may have
 * made its own there.
 */
function releaseRunMarker(path) {
  if (readText(path) === String(process.pid)) removeFiles([path]);
}

/** Whether a run marker names a process that has ended (it died with the cache). */
function diedWith(pid) {
  if (pid === null || !/^\d+$/.test(pid)) return pid !== null;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (error) {
    return error.code === "ESRCH";
  }
}

/** A small file's text, or null when it cannot be read. */
function readText(path) {
  try {
    return readFileSync(path, "latin1");
  } catch {
    return null;
  }
}

function removeFiles(paths) {
  for (const path of paths) {
    try {
      rmSync(path, { force: true });
    } catch {
      // left as it is: the next run tests it again
    }
  }
}

/** A file's bytes (as readInto) and its identity: inode and change time, from the same fd. */
function readWithIdentity(path, buffer) {
  const fd = openSync(path, "r");
  try {
    const stat = fstatSync(fd);
    return { bytes: readFd(fd, buffer), identity: `${stat.ino}:${stat.ctimeMs}:${stat.size}` };
  } finally {
    closeSync(fd);
  }
}

/** The header for a cache of V8's bytes `data` of these kinds (see CACHE_HEADER). */
function codeCacheHeader(data, kinds) {
  const line = `${CACHE_HEADER}${checksum(data)} ${[...kinds].sort().join(",")}`;
  return Buffer.from(`${line.padEnd(Math.ceil((line.length + 1) / 8) * 8 - 1)}\n`, "latin1");
}

/**
 * Keeps the code cache up with the runs made: V8 compiles a function that is not in the cache
 * when it is first called, in every run, so a cache written by a `dirq --version` would leave
 * every later query compiling most of dirq, a large part of its start. The first run
 * writes the cache, as does any run whose cache V8 rejected. A run that does a kind of work
 * the cache was not written by (a query, a table printed, tables filled: RunKind) writes it
 * again: V8 then holds both the functions it read from the cache and the ones this run
 * compiled, and the cache is rewritten with the kinds of both. A kind is added once, so a
 * cache is rewritten a few times in its life. Returns the listener for the run's kinds.
 */
function keepCodeCache(script, path, cached) {
  const ran = new Set();
  let writing = false;
  const write = () => {
    writing = true;
    writeCodeCacheOnExit(script, path, (data) => {
      // Smaller than what was read: V8 dropped the code of functions this run never called
      // (it does, in a long run); claim only this run's kinds, so the others are added again.
      const keptAll = cached !== null && data.length >= cached.data.length;
      return keptAll ? new Set([...cached.kinds, ...ran]) : ran;
    });
  };
  if (cached === null) write();
  return (kind) => {
    ran.add(kind);
    if (!writing && !cached.kinds.has(kind)) write();
  };
}

/**
 * Writes the code cache when the process exits, so it holds the functions this run compiled,
 * not only the top level, with the kinds `kindsFor` gives for V8's bytes. Atomic (a temporary
 * file renamed), so a run that starts meanwhile reads a whole cache or none; any failure (a
 * read-only home, a full disk) just leaves none.
 */
function writeCodeCacheOnExit(script, path, kindsFor) {
  process.once("exit", () => writeCodeCache(script, path, kindsFor));
}

/**
 * Writes the code cache of `script` now, with the kinds `kindsFor` gives for V8's bytes (see
 * writeCodeCacheOnExit).
 */
function writeCodeCache(script, path, kindsFor) {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    const data = script.createCachedData();
    makeFolder(dirname(path));
    writeFileSync(temporary, Buffer.concat([codeCacheHeader(data, kindsFor(data)), data]));
    renameSync(temporary, path);
    pruneCodeCaches(dirname(path));
  } catch {
    try {
      rmSync(temporary, { force: true });
    } catch {
      // no folder to remove it from: nothing was written
    }
  }
}

/**
 * Makes a folder and the missing ones above it, one level at a time, giving up at the first
 * failure: Node's recursive mkdirSync loops for ever where `mkdir` says ENOENT under a parent
 * that exists (`XDG_CACHE_HOME=/proc`). A cache that cannot be written is simply not used.
 */
function makeFolder(path) {
  try {
    mkdirSync(path);
  } catch (error) {
    if (error.code === "EEXIST") return;
    const parent = dirname(path);
    if (error.code !== "ENOENT" || parent === path) throw error;
    makeFolder(parent);
    mkdirSync(path);
  }
}

/**
 * Keeps the newest caches of each file of the bundle: old Node builds and old installs would
 * otherwise pile up.
 */
function pruneCodeCaches(folder) {
  const byFile = new Map();
  for (const name of readdirSync(folder)) {
    if (!name.startsWith("cli") || !name.endsWith(".v8cache")) continue;
    const file = name.slice(0, name.indexOf("-"));
    const caches = byFile.get(file) ?? [];
    caches.push({ path: join(folder, name), mtimeMs: statSync(join(folder, name)).mtimeMs });
    byFile.set(file, caches);
  }
  for (const caches of byFile.values()) {
    caches.sort((a, b) => b.mtimeMs - a.mtimeMs);
    for (const stale of caches.slice(CODE_CACHES_KEPT)) {
      removeFiles([stale.path, `${stale.path}.ok`, `${stale.path}.run`]);
    }
  }
}

/**
 * Reads a whole file into `buffer` from its start (a bigger buffer when it does not fit) and
 * returns the bytes: a subarray of `buffer` or of the bigger one.
 */
function readInto(path, buffer) {
  const fd = openSync(path, "r");
  try {
    return readFd(fd, buffer);
  } finally {
    closeSync(fd);
  }
}

/** Reads an open file from its start into `buffer` (see readInto). */
function readFd(fd, buffer) {
  let length = 0;
  for (;;) {
    if (length === buffer.length) {
      const bigger = Buffer.allocUnsafeSlow(buffer.length * 2);
      buffer.copy(bigger, 0, 0, length);
      buffer = bigger;
    }
    const read = readSync(fd, buffer, length, buffer.length - length, null);
    if (read === 0) return buffer.subarray(0, length);
    length += read;
  }
}

/**
 * Runs one file of the bundle as `require` would, compiled with the V8 code cache at
 * `cachePath` if there is one V8 takes (see codeCachePath). Returns its exports, its Script
 * and what the cache held (null: none, or refused).
 */
function runBundleFile(file, cachePath, buffer) {
  // The file is the function Node wraps a CommonJS module in, the bundle inside (see
  // scripts/build-cli.mjs). The build checks that it is ASCII: read as latin1, it needs no
  // UTF-8 decoding. Once its text is a string, the same buffer takes the cache.
  const source = readInto(file, buffer).toString("latin1");
  let cached = cachePath ? usableCache(cachePath, buffer) : null;
  const script = new Script(source, { filename: file, cachedData: cached?.data });
  if (script.cachedDataRejected) cached = null;
  const module = { exports: {} };
  script.runInThisContext()(module.exports, bundleRequire, module, file, dirname(file));
  return { exports: module.exports, script, cached };
}

/**
 * Which of the bundle's two code caches a run with these arguments reads. A statement that
 * reads a path table names it quoted (`FROM './'`), and its run compiles the walk and the
 * table fills: their code, held in the cache of every later run, would cost a run that reads
 * no path table its deserialization. So runs with a quote among their arguments keep a cache
 * of their own. Either grows with the kinds of work its runs do (keepCodeCache): a statement over
 * a config's tables, which names them unquoted, adds the fill's code to the other.
 */
function bundleCacheName(argv) {
  return argv.some((arg) => arg.includes("'") || arg.includes('"')) ? "cli+paths" : "cli";
}

/**
 * The CLI bundle's exports and the listener for the kinds of work the run does (see
 * keepCodeCache).
 */
function loadCli(env, folder, argv) {
  const file = join(BUNDLE_FOLDER, "dirq.cjs");
  const cachePath = codeCachePath(bundleCacheName(argv), file, env, folder);
  // One buffer for both files, the bundle first. Each page of fresh memory costs a page fault
  // at its first write, and a second buffer would take dozens more of them. Pages of the
  // buffer that no file reaches are never touched.
  const buffer = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);
  const { exports, script, cached } = runBundleFile(file, cachePath, buffer);
  const onRunKind = cachePath ? keepCodeCache(script, cachePath, cached) : undefined;
  return { cli: exports, onRunKind };
}

/**
 * The first argument of a query process that a server, a REPL, `watch` or `sdk` run from the
 * bundle starts (src/runner/pooled-process.ts, rewritten by scripts/build-cli.mjs): this
 * launcher then runs the bundle's query process, not the CLI.
 */
const QUERY_PROCESS_ARG = "--dirq-query-process";

/**
 * Runs the bundle's query process (dist/src/cli-bundle/query-process.cjs) with the arguments
 * after QUERY_PROCESS_ARG, compiled from a code cache of its own. A query process usually ends
 * by `SIGKILL` (its pool stops it, or the reaper with its owner), so two things differ from the
 * CLI's runs. Its run marker (see usableCache) is removed once the process is up, not at its
 * exit, or every kill would read as a run that died with the cache. And a missing or refused
 * cache is written once the process has answered its first statements (`afterFirstAnswer`), so
 * that it holds the code a statement runs, and is written at all.
 */
function runQueryProcess() {
  process.argv.splice(2, 1);
  const { exports, script, cached, cachePath } = runWithOwnCache("query-process");
  if (cachePath === null) return;
  releaseRunMarker(`${cachePath}.run`);
  if (cached === null) {
    exports.afterFirstAnswer(() => writeCodeCache(script, cachePath, () => new Set()));
  }
}

/**
 * Runs `./<name>.cjs` of the bundle (a chunk, or a program such as the query process) with a
 * code cache of its own (`cli.<name>-...`): what runBundleFile gives, and the cache's path.
 */
function runWithOwnCache(name) {
  const file = join(BUNDLE_FOLDER, `${name}.cjs`);
  const cachePath = codeCachePath(`cli.${name}`, file, process.env, cacheFolderPath);
  const buffer = Buffer.allocUnsafeSlow(CHUNK_BUFFER_BYTES);
  return { ...runBundleFile(file, cachePath, buffer), cachePath };
}

/** The chunks loaded so far, by name: each runs once, as a module does. */
const chunks = new Map();

/**
 * A chunk's exports (`./<name>.cjs`, a part of the CLI that a command loads when it needs it:
 * see scripts/build-cli.mjs), with its own code cache, written when there was none.
 */
function loadChunk(name) {
  let exports = chunks.get(name);
  if (exports === undefined) {
    const { cachePath, ...loaded } = runWithOwnCache(name);
    if (cachePath && loaded.cached === null) {
      writeCodeCacheOnExit(loaded.script, cachePath, () => new Set());
    }
    exports = loaded.exports;
    chunks.set(name, exports);
  }
  return exports;
}

/**
 * The `require` the bundle and its chunks get: a chunk by its relative name, anything else
 * (Node's built-ins, packages by name) by requireModule. `requireModule` alone, not a `require`
 * made for the bundle's path (`node:module` would be one more module to load at every start):
 * the bundle requires only Node's built-ins and packages by name, which resolve the same from
 * anywhere inside this package.
 */
function bundleRequire(id) {
  return id.startsWith("./") ? loadChunk(id.slice(2, -".cjs".length)) : requireModule(id);
}
// The bundle resolves SQLite's package with it.
bundleRequire.resolve = require.resolve;

const cacheFolderPath = cacheFolder(process.env);
if (process.argv[2] === QUERY_PROCESS_ARG) {
  runQueryProcess();
  return;
}
const { cli, onRunKind } = loadCli(process.env, cacheFolderPath, process.argv.slice(2));
// A reader that goes away (`dirq ... | head`) is not an error; any other failure to write
// stdout (`> /dev/full`) is one diagnostic line, never a stack trace.
const io = cli.processIo(process.cwd(), (error) => {
  if (error.code === "EPIPE") process.exit(0);
  try {
    writeSync(2, `dirq: cannot write the output: ${error.message}\n`);
  } catch {
    // stderr is gone too: the exit status is all that is left.
  }
  process.exit(1);
});

cli
  .launch(process.argv.slice(2), io, {
    env: process.env,
    launcherPackage: join(__dirname, ".."),
    // What plugin discovery found, kept beside the code caches (docs/plugins.md).
    pluginCache: cacheFolderPath ? join(cacheFolderPath, "plugins.json") : undefined,
    onRunKind,
  })
  .then((code) => {
    process.exitCode = code;
  });
