import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DIRQ_BIN, type RunResult, runDirq } from "./helpers.js";

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
