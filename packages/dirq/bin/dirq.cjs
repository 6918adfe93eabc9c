#!/usr/bin/env node
// The npm launcher: plugin discovery (see docs/plugins.md), then the CLI. CommonJS, like the
// bundle it loads (see scripts/build-cli.mjs): start-up counts, and Node's ES module loader
// costs more to start than a query needing no table does to run.
"use strict";
// ASCII only (a test checks): one other character and V8 holds and scans the file as UTF-16.

/**
 * `require`, with Node's built-in modules taken from `process.getBuiltinModule` where Node has
 * it (20.16 and later; it answers undefined for anything else): `require` goes through the
 * module loader's resolution and caches, 55 microseconds the first time and about 5 each
 * after, and a start makes some 50 calls, nearly all for built-ins. The bundle gets it as its
 * `require` too, with this file's `resolve` (the bundle resolves SQLite's package with it).
 */
function requireModule(id) {
  return process.getBuiltinModule?.(id) ?? require(id);
}
requireModule.resolve = require.resolve;

const {
  closeSync,
  mkdirSync,
  openSync,
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

/** Code caches kept per cache folder: one per Node build and dirq install in use. */
const CODE_CACHES_KEPT = 8;

/** Room for the bundle and its code cache (about 270 and 250 to 330 kB). */
const READ_BUFFER_BYTES = 512 * 1024;

/**
 * The user's cache folder for dirq (`$XDG_CACHE_HOME/dirq`, else `~/.cache/dirq`;
 * `~/Library/Caches/dirq` on macOS, `%LOCALAPPDATA%\dirq\Cache` on Windows), or null.
 */
function cacheFolder(env) {
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

/**
 * Where this Node build's code cache for this bundle lives in the cache folder, or null (turned
 * off with DIRQ_CODE_CACHE=0, or no cache folder). V8 checks only its own version, its flags
 * and the source's length before it takes a cache, and every Node 20 patch release has the same
 * V8 version, yet a cache made by one crashes the code on another. So the name keys the exact Node
 * binary (version, size and modification time: a distribution's rebuild keeps the version) and
 * the exact bundle (size and time: an install writes the file anew), and each machine makes its
 * own cache: none ships in the package. The name is made of those numbers as they are (hashing
 * the paths as well cost a tenth of a millisecond of every start); only Node's flags, when
 * there are any, are hashed into it.
 */
function codeCachePath(bundle, env, folder) {
  if (env.DIRQ_CODE_CACHE === "0" || !folder) return null;
  try {
    const node = statSync(process.execPath);
    const code = statSync(bundle);
    const flags = `${process.execArgv.join(" ")} ${env.NODE_OPTIONS ?? ""}`.trim();
    const name = [
      "cli",
      process.version,
      process.arch,
      node.size,
      node.mtimeMs,
      code.size,
      code.mtimeMs,
      ...(flags === "" ? [] : [shortHash(flags)]),
    ].join("-");
    return join(folder, `${name}.v8cache`);
  } catch {
    return null;
  }
}

/**
 * Writes the code cache when the process exits, so it holds the functions this run compiled,
 * not only the top level. Atomic (a temporary file renamed), so a run that starts meanwhile
 * reads a whole cache or none; any failure (a read-only home, a full disk) just leaves none.
 */
function writeCodeCacheOnExit(script, path) {
  process.once("exit", () => {
    const temporary = `${path}.${process.pid}.tmp`;
    try {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(temporary, script.createCachedData());
      renameSync(temporary, path);
      pruneCodeCaches(dirname(path));
    } catch {
      try {
        rmSync(temporary, { force: true });
      } catch {
        // no folder to remove it from: nothing was written
      }
    }
  });
}

/** Keeps the newest caches: old Node builds and old installs would otherwise pile up. */
function pruneCodeCaches(folder) {
  const caches = readdirSync(folder)
    .filter((name) => name.startsWith("cli-") && name.endsWith(".v8cache"))
    .map((name) => ({ path: join(folder, name), mtimeMs: statSync(join(folder, name)).mtimeMs }))
    .sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const stale of caches.slice(CODE_CACHES_KEPT)) rmSync(stale.path, { force: true });
}

/**
 * Reads a whole file into `buffer` from its start (a bigger buffer when it does not fit) and
 * returns the bytes: a subarray of `buffer` or of the bigger one.
 */
function readInto(path, buffer) {
  const fd = openSync(path, "r");
  try {
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
  } finally {
    closeSync(fd);
  }
}

/**
 * The CLI bundle, loaded as `require` would, but compiled with the V8 code cache an earlier
 * run of this Node build wrote (see codeCachePath); the first run writes it.
 */
function loadCli(env, folder) {
  const bundle = join(__dirname, "..", "dist", "src", "cli-bundle", "dirq.cjs");
  const cachePath = codeCachePath(bundle, env, folder);
  // One buffer for both files, the bundle first: once its text is a string the same memory
  // takes the cache. Each page of fresh memory costs a page fault at its first write (1.5
  // microseconds each on the machines dirq is measured on), and a second buffer was 60 more of
  // them. Pages of the buffer that no file reaches are never touched.
  const buffer = Buffer.allocUnsafeSlow(READ_BUFFER_BYTES);
  // The file is the function Node wraps a CommonJS module in, the bundle inside (see
  // scripts/build-cli.mjs). The build checks that it is ASCII: read as latin1, it needs no
  // UTF-8 decoding.
  const source = readInto(bundle, buffer).toString("latin1");
  let cachedData;
  if (cachePath) {
    try {
      cachedData = readInto(cachePath, buffer);
    } catch {
      cachedData = undefined; // the first run of this Node build: compile as usual
    }
  }
  const script = new Script(source, { filename: bundle, cachedData });
  if (cachePath && (cachedData === undefined || script.cachedDataRejected)) {
    writeCodeCacheOnExit(script, cachePath);
  }
  const module = { exports: {} };
  // requireModule, not a `require` made for the bundle's path (`node:module` would be one more
  // module to load at every start): the bundle requires only Node's built-ins and packages by
  // name, which resolve the same from anywhere inside this package.
  script.runInThisContext()(module.exports, requireModule, module, bundle, dirname(bundle));
  return module.exports;
}

const cacheFolderPath = cacheFolder(process.env);
const cli = loadCli(process.env, cacheFolderPath);
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
  })
  .then((code) => {
    process.exitCode = code;
  });
