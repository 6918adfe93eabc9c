import { spawn, spawnSync } from "node:child_process";
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
export function runDirq(
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string | undefined>; input?: string },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DIRQ_BIN, ...args], {
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
