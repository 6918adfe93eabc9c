import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { DIRQ_BIN, python3 } from "./helpers.js";

const DRIVER = fileURLToPath(new URL("../../test/pty-driver.py", import.meta.url));

/** Generous: the machine is shared and loaded; a test waits for output, never for a time. */
const WAIT_MS = 60_000;

/** Keys as a terminal sends them. */
export const KEY = {
  enter: "\r",
  up: "\x1b[A",
  ctrlA: "\x01",
  ctrlC: "\x03",
  ctrlD: "\x04",
  ctrlE: "\x05",
  ctrlK: "\x0b",
  ctrlR: "\x12",
  ctrlU: "\x15",
  ctrlW: "\x17",
  ctrlY: "\x19",
  altB: "\x1bb",
  altF: "\x1bf",
  altY: "\x1by",
} as const;

/** Terminal output without escape sequences and carriage returns: what a reader sees. */
export function plainText(raw: string): string {
  return raw
    .replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, "")
    .replace(/\x1b[=>78]/g, "")
    .replaceAll("\r", "");
}

/** `dirq` in a real pseudo-terminal (Python's pty module), driven by keystrokes. */
export class TerminalSession {
  private readonly child: ChildProcessWithoutNullStreams;
  private raw = "";
  /** Where the next `waitFor` starts looking, in the plain text. */
  private seen = 0;
  private readonly listeners = new Set<() => void>();
  readonly exited: Promise<number | null>;

  constructor(args: readonly string[], options: { cwd: string; env: NodeJS.ProcessEnv }) {
    this.child = spawn(python3(), [DRIVER, process.execPath, DIRQ_BIN, ...args], {
      cwd: options.cwd,
      env: { ...process.env, DIRQ_PROGRESS: "never", TERM: "xterm", ...options.env },
    });
    this.child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      this.raw += chunk;
      for (const listener of this.listeners) listener();
    });
    this.child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      this.raw += chunk;
    });
    this.exited = new Promise((resolve) => this.child.on("close", (code) => resolve(code)));
  }

  /** Everything shown so far, escape sequences kept (to check what is bold, say). */
  get output(): string {
    return this.raw;
  }

  /** Everything shown so far, as plain text. */
  get text(): string {
    return plainText(this.raw);
  }

  /** Waits until `pattern` shows after the previous match; returns the text up to it. */
  waitFor(pattern: string | RegExp): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const text = this.text.slice(this.seen);
        const match =
          typeof pattern === "string"
            ? { index: text.indexOf(pattern), length: pattern.length }
            : (() => {
                const found = pattern.exec(text);
                return found ? { index: found.index, length: found[0].length } : null;
              })();
        if (match === null || match.index < 0) return false;
        const upTo = text.slice(0, match.index + match.length);
        this.seen += upTo.length;
        this.listeners.delete(listener);
        clearTimeout(timer);
        resolve(upTo);
        return true;
      };
      const listener = () => void check();
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(
          new Error(`timed out waiting for ${String(pattern)}; the terminal shows:\n${this.text}`),
        );
      }, WAIT_MS);
      this.listeners.add(listener);
      check();
    });
  }

  /**
   * Waits for the session to end and checks its exit status; a wrong one shows everything the
   * terminal showed (a Node assertion at exit is printed there, and the driver names a signal).
   */
  async expectExit(expected: number): Promise<void> {
    const code = await this.exited;
    assert.equal(code, expected, `exit status ${code}; the terminal shows:\n${this.text}`);
  }

  /** The driver's process id: the REPL and its query processes run below it. */
  get pid(): number {
    return this.child.pid as number;
  }

  type(keys: string): void {
    this.child.stdin.write(keys);
  }

  kill(): void {
    this.child.kill("SIGKILL");
  }
}

/** Processes below `pid` (Linux /proc), with their command lines; `null` without /proc. */
export function descendants(pid: number): { pid: number; command: string; state: string }[] | null {
  if (!existsSync("/proc/self/stat")) return null;
  const parents = new Map<number, { ppid: number; state: string }>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // The command name is in parentheses and may hold spaces: fields follow the last `)`.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const state = fields[0] ?? "";
      if (state !== "Z") parents.set(Number(name), { ppid: Number(fields[1]), state });
    } catch {
      // The process ended while we looked.
    }
  }
  const found: { pid: number; command: string; state: string }[] = [];
  const visit = (parent: number) => {
    for (const [child, { ppid, state }] of parents) {
      if (ppid !== parent) continue;
      let command = "";
      try {
        command = readFileSync(`/proc/${child}/cmdline`, "utf8").replaceAll("\0", " ");
      } catch {
        continue;
      }
      found.push({ pid: child, command, state });
      visit(child);
    }
  };
  visit(pid);
  return found;
}
