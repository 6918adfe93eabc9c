import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The built CLI, run exactly as a user's shell would run it. */
export const DIRQ_BIN = fileURLToPath(new URL("../../bin/dirq.cjs", import.meta.url));

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Spawns `dirq` with `args` in `cwd` and collects its output. Progress is off unless asked. */
/**
 * A row event without its `commit` (the number of the commit that made it, which every row
 * event carries: checked here to be a number, 0 before the first commit), for comparing events' contents.
 */
export function withoutCommit<T extends { commit?: unknown }>(event: T): Omit<T, "commit"> {
  const { commit, ...rest } = event;
  if (!Number.isSafeInteger(commit) || (commit as number) < 0) {
    throw new Error(`a row event's commit is not a number: ${JSON.stringify(event)}`);
  }
  return rest;
}

export function runDirq(
  args: readonly string[],
  options: {
    cwd: string;
    env?: Record<string, string | undefined>;
    input?: string;
    /** Node's own options, given before dirq's file: `node <node> dirq.cjs <args>`. */
    node?: readonly string[];
  },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(options.node ?? []), DIRQ_BIN, ...args], {
      cwd: options.cwd,
      env: { ...process.env, DIRQ_PROGRESS: "never", ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    // A run that never reads its stdin (`--help`) may exit before the input is written: EPIPE
    // then says nothing about dirq, whose exit and output are what a test looks at.
    child.stdin.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE") reject(error);
    });
    child.stdin.end(options.input ?? "");
  });
}

/** Whether a process runs: a zombie, which only waits for its parent to reap it, does not. */
export function processRuns(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/** Runs a query expecting success and returns the parsed JSON rows. */
export async function queryJson(
  cwd: string,
  sql: string,
  extraArgs: readonly string[] = [],
): Promise<Record<string, unknown>[]> {
  const result = await runDirq([sql, "--format", "json", ...extraArgs], { cwd });
  if (result.code !== 0) {
    throw new Error(`dirq exited ${result.code} for ${sql}: ${result.stderr}`);
  }
  return JSON.parse(result.stdout) as Record<string, unknown>[];
}

let python: string | undefined;

/**
 * The python3 on PATH, named by the path of the interpreter it runs: a version manager's shim
 * (pyenv's) starts a shell and the manager first, at every call, which costs far more CPU
 * than the interpreter itself.
 */
export function python3(): string {
  if (python === undefined) {
    const found = spawnSync("python3", ["-c", "import sys; print(sys.executable)"], {
      encoding: "utf8",
    });
    const path = found.status === 0 ? found.stdout.trim() : "";
    python = path === "" ? "python3" : path;
  }
  return python;
}

/**
 * The text of a shell hook in test/fixtures/hooks/, for a tree that runs it as
 * `sh <name> {path}`. Tests that run a hook hundreds of times use these rather than a Node.js
 * script: starting Node.js costs far more CPU than starting a shell.
 */
export function shellHook(name: string): string {
  return readFileSync(new URL(`../../test/fixtures/hooks/${name}`, import.meta.url), "utf8");
}

/** A file tree: path → content. Paths ending in `/` are empty directories. */
export type TreeSpec = Record<string, string>;

/** Makes a fresh temp directory holding `tree`; remove it with `removeTree`. */
export function makeTree(tree: TreeSpec): string {
  const root = mkdtempSync(join(tmpdir(), "dirq-test-"));
  for (const [path, content] of Object.entries(tree)) {
    const full = join(root, path);
    if (path.endsWith("/")) {
      mkdirSync(full, { recursive: true });
      continue;
    }
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
  }
  return root;
}

export function removeTree(root: string): void {
  rmSync(root, { recursive: true, force: true });
}

/** Trees made by `tempTree`, removed when the test process exits. */
const tempTrees: string[] = [];

/**
 * Makes a fresh temp directory holding `tree`, removed when the test file's process exits
 * (so a test that fails half-way leaves nothing behind either).
 */
export function tempTree(tree: TreeSpec): string {
  if (tempTrees.length === 0) process.once("exit", () => tempTrees.forEach(removeTree));
  const root = makeTree(tree);
  tempTrees.push(root);
  return root;
}

/** A progress reporter that says nothing, for the core's classes built in a test. */
export const quiet = { start: () => ({ update() {}, finish() {} }) };

/** Where `saveWhole` writes files before it renames them into place (one per test process). */
let aside: string | null = null;
let saved = 0;

/**
 * Writes a file as editors save it: in a folder outside the tree, then renamed into place, so
 * a watcher and hooks see it whole. Written in place, a loaded machine can show the watcher an
 * empty file first (an insert, then an update) or a hook a half-written one.
 */
export function saveWhole(root: string, path: string, content: string): void {
  if (aside === null) {
    const folder = mkdtempSync(join(tmpdir(), "dirq-aside-"));
    process.once("exit", () => removeTree(folder));
    aside = folder;
  }
  mkdirSync(dirname(join(root, path)), { recursive: true });
  const staged = join(aside, String(saved++));
  writeFileSync(staged, content);
  renameSync(staged, join(root, path));
}

/** Every file and directory under `root` with its size and mtime, to prove nothing changed. */
export function snapshotTree(root: string): string {
  const lines: string[] = [];
  const visit = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name);
      const stats = statSync(full);
      if (stats.isDirectory()) {
        lines.push(`${full}/`);
        visit(full);
      } else {
        lines.push(`${full} ${stats.size} ${stats.mtimeMs} ${readFileSync(full, "base64")}`);
      }
    }
  };
  visit(root);
  return lines.join("\n");
}

/** Runs `dirq` expecting exit 0 and nothing on stderr; returns stdout. */
export async function runOk(
  cwd: string,
  args: readonly string[],
  env?: Record<string, string | undefined>,
): Promise<string> {
  const result = await runDirq(args, { cwd, env });
  assert.equal(result.code, 0, `dirq ${JSON.stringify(args)} failed: ${result.stderr}`);
  assert.equal(result.stderr, "", `unexpected stderr for ${JSON.stringify(args)}`);
  return result.stdout;
}

/**
 * Runs `dirq` expecting exit 0 and, on stderr, only lines that say path-tables list no file
 * (at least one); returns stdout and stderr.
 */
export async function runOkEmpty(
  cwd: string,
  args: readonly string[],
): Promise<{ stdout: string; stderr: string }> {
  const result = await runDirq(args, { cwd });
  assert.equal(result.code, 0, `dirq ${JSON.stringify(args)} failed: ${result.stderr}`);
  assert.notEqual(emptyTablesIn(result.stderr).length, 0, "no line says a path-table is empty");
  return result;
}

/** Parses a JSON result and checks it is an array. */
export function parseRows(stdout: string): Record<string, unknown>[] {
  const rows = JSON.parse(stdout) as unknown;
  assert.ok(Array.isArray(rows), `expected a JSON array, got ${stdout}`);
  return rows as Record<string, unknown>[];
}

/**
 * A statement's rows (`--format json`) and the files it skipped (stderr's `dirq: skipped`
 * lines, sorted), for tests that compare two ways of reading the same files; a run that
 * fails for another reason than a skipped file fails the test.
 */
export async function rowsAndSkipped(
  root: string,
  args: readonly string[],
  env: Record<string, string>,
): Promise<{ rows: Record<string, unknown>[]; skipped: string[] }> {
  const result = await runDirq([...args, "--format", "json"], { cwd: root, env });
  assert.ok(result.code === 0 || result.code === 23, result.stderr);
  const skipped = result.stderr
    .split("\n")
    .filter((line) => line.startsWith("dirq: skipped"))
    .sort();
  return { rows: result.stdout === "" ? [] : parseRows(result.stdout), skipped };
}

/** The `path` column of every row, in order. */
export function pathsOf(rows: readonly Record<string, unknown>[]): unknown[] {
  return rows.map((row) => row.path);
}

/** No stack frame, no "internal error": a user error is reported as a one-line diagnostic. */
export function assertNoStackTrace(stderr: string): void {
  assert.doesNotMatch(stderr, /^\s+at .+:\d+:\d+\)?$/m, `stack trace on stderr: ${stderr}`);
  assert.doesNotMatch(stderr, /internal error/i, `internal error on stderr: ${stderr}`);
  assert.doesNotMatch(stderr, /\b(?:TypeError|ReferenceError|SqliteError)\b/, stderr);
}

/**
 * A user error: exit 1, nothing on stdout, one `dirq: ` diagnostic line on stderr.
 * `pattern` (optional) must match the diagnostic. Returns the diagnostic without the prefix.
 */
export function assertUserError(result: RunResult, pattern?: RegExp | string): string {
  assert.equal(result.code, 1, `expected exit 1, got ${result.code}; stderr: ${result.stderr}`);
  assert.equal(result.stdout, "", "stdout must be empty on error");
  assert.match(result.stderr, /^dirq: \S/, `stderr must start with "dirq: ": ${result.stderr}`);
  assert.ok(result.stderr.endsWith("\n"), "the diagnostic ends with a newline");
  assertNoStackTrace(result.stderr);
  const message = result.stderr.slice("dirq: ".length).trimEnd();
  if (typeof pattern === "string") {
    assert.ok(message.includes(pattern), `diagnostic ${JSON.stringify(message)} lacks ${pattern}`);
  } else if (pattern) {
    assert.match(message, pattern);
  }
  return message;
}

/** Whether util-linux `script` can give a child process a terminal here. */
export function scriptAvailable(): boolean {
  const probe = spawnSync("script", ["-qec", "test -t 1", "/dev/null"], {
    encoding: "utf8",
    timeout: 10_000,
  });
  return probe.status === 0;
}

/** Quotes one word for `sh`. */
export function shellQuote(word: string): string {
  return `'${word.replaceAll("'", `'"'"'`)}'`;
}

export interface TerminalRun {
  /** What the terminal showed (stdout and/or stderr, whichever went to it), `\r\n` kept. */
  terminal: string;
  /** The file-redirected stream, when one was redirected. */
  redirected: string;
  status: number | null;
}

/**
 * Runs dirq under a pseudo-terminal with `script -qec`. `redirect` sends stdout or stderr to a
 * file instead of the terminal (read back into `redirected`); `pipeStdout` pipes stdout into
 * `cat` (so stdin and stderr are the terminal, stdout is a pipe).
 */
export function runInTerminal(
  cwd: string,
  args: readonly string[],
  options: {
    env?: Record<string, string | undefined>;
    redirect?: "stdout" | "stderr";
    pipeStdout?: boolean;
  } = {},
): TerminalRun {
  const outFile = join(tmpdir(), `dirq-term-${process.pid}-${Math.random().toString(36).slice(2)}`);
  writeFileSync(outFile, "");
  let command = [process.execPath, DIRQ_BIN, ...args].map(shellQuote).join(" ");
  if (options.redirect === "stdout") command += ` >${shellQuote(outFile)}`;
  if (options.redirect === "stderr") command += ` 2>${shellQuote(outFile)}`;
  if (options.pipeStdout) command += " | cat";
  const result = spawnSync("script", ["-qec", command, "/dev/null"], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, DIRQ_PROGRESS: "never", ...options.env },
    timeout: 30_000,
  });
  const redirected = readFileSync(outFile, "utf8");
  rmSync(outFile, { force: true });
  return { terminal: result.stdout, redirected, status: result.status };
}

/**
 * Lists several path-tables in one statement (one dirq run): table name → its sorted paths.
 * Names must differ in more than case (SQLite table names are case-insensitive).
 */
export async function pathsByTable(
  cwd: string,
  tables: readonly string[],
  extraArgs: readonly string[] = [],
): Promise<Record<string, string[]>> {
  const lower = new Set(tables.map((table) => table.toLowerCase()));
  assert.equal(lower.size, tables.length, "pathsByTable: names must differ in more than case");
  const columns = tables.map(
    (table, i) => `(SELECT json_group_array(path) FROM ${table}) AS t${i}`,
  );
  const result = await runDirq([`SELECT ${columns.join(", ")}`, "--format", "json", ...extraArgs], {
    cwd,
  });
  assert.equal(result.code, 0, `dirq failed for ${tables.join(", ")}: ${result.stderr}`);
  const [row] = parseRows(result.stdout);
  const out: Record<string, string[]> = {};
  tables.forEach((table, i) => {
    out[table] = (JSON.parse(String(row?.[`t${i}`])) as string[]).sort();
  });
  // Nothing on stderr but one line for each table that lists no file (docs/path-tables.md).
  const empty = tables.filter((table) => out[table]?.length === 0);
  assert.deepEqual(
    emptyTablesIn(result.stderr),
    empty.map((table) => table.slice(1, -1)).sort(),
    `stderr: ${result.stderr}`,
  );
  return out;
}

/** The path-tables a run's stderr says are empty (`dirq: path-table '<t>' is empty: ...`). */
export function emptyTablesIn(stderr: string): string[] {
  const lines = stderr.split("\n").filter((line) => line !== "");
  return lines
    .map((line) => {
      const match = /^dirq: path-table '(.*)' is empty: \S/.exec(line);
      assert.ok(match, `unexpected stderr line: ${line}`);
      return match[1] as string;
    })
    .sort();
}

/** A tree whose config table's hook hangs, and the word that finds the hook's processes. */
export interface HangingHookTree {
  root: string;
  config: string;
  /** In the command line of every hook process (`processesMarked`), unique to this tree. */
  marker: string;
}

/**
 * A tree of one file whose config table (`hung`) runs a hook that sleeps for 1000 s, with
 * `timeout` seconds as its time limit (`0`: none; `undefined`: the default 60 s). The sleep's
 * length carries a unique fraction: `marker`.
 */
export function hangingHookTree(timeout?: number): HangingHookTree {
  const marker = `1000.${String(process.pid).padStart(7, "0")}${Math.floor(Math.random() * 1e7)}`;
  const limit = timeout === undefined ? "" : `timeout = ${timeout}\n`;
  const config = `[[table]]\nname = "hung"\nglob = "*.txt"\n${limit}on-file = "sh -c 'exec sleep \\"$0\\"' ${marker} {path}"\n`;
  const root = tempTree({ "a.txt": "a", "dirq.toml": config });
  return { root, config: join(root, "dirq.toml"), marker };
}

/** Processes whose command line holds `marker` (Linux: read from /proc). */
export function processesMarked(marker: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "latin1").includes(marker)) {
        if (processRuns(Number(entry))) found.push(Number(entry));
      }
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/**
 * What is still running of `pids` and of the processes `processesMarked(marker)` finds, once
 * none is or `withinMs` has passed: each with its command line, for a failure to show.
 */
export async function stillRunning(
  pids: readonly number[],
  marker: string,
  withinMs: number,
): Promise<string[]> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const left = [...new Set([...pids.filter(processRuns), ...processesMarked(marker)])];
    if (left.length === 0 || Date.now() > deadline) {
      return left.map((pid) => {
        try {
          return `${pid}: ${readFileSync(`/proc/${pid}/cmdline`, "latin1").replaceAll("\0", " ")}`;
        } catch {
          return `${pid}: (gone)`;
        }
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** How a test ends a program: a signal, or a line on its stdin that it acts on (`exit`, `crash`). */
export type OwnerEnd = "SIGKILL" | "SIGTERM" | "exit" | "crash";

/**
 * Waits until `program` (which opened `tree` and started a statement on it) runs the hung hook,
 * ends it as `how` says (or calls `how`, which ends one of its descendants), and asserts that
 * within 2 s nothing it started still runs: none of `descendants()` (taken while it ran) and
 * no process of the hook. Whatever is left is killed, by pid, before the assertion fails.
 */
export async function assertNothingOutlives(
  program: ChildProcess,
  tree: HangingHookTree,
  how: OwnerEnd | (() => void),
  descendants: () => number[],
): Promise<void> {
  const exited = new Promise((resolve) => program.once("exit", resolve));
  let stderr = "";
  program.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const started = Date.now() + 30_000;
  while (processesMarked(tree.marker).length === 0) {
    assert.ok(Date.now() < started && program.exitCode === null, `no hook started: ${stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const pids = descendants();
  if (typeof how === "function") how();
  else if (how === "SIGKILL" || how === "SIGTERM") program.kill(how);
  else program.stdin?.write(`${how}\n`);
  const left = await stillRunning(pids, tree.marker, 2000);
  for (const line of left) {
    try {
      process.kill(Number(line.split(":")[0]), "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
  if (typeof how !== "function") await exited;
  const what = typeof how === "function" ? "the kill" : how;
  assert.deepEqual(left, [], `still running 2 s after ${what}; the program's stderr: ${stderr}`);
}
