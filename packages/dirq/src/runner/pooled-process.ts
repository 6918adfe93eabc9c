import { type ChildProcess, spawn } from "node:child_process";
import type { Socket } from "node:net";
import { fileURLToPath } from "node:url";
import { type ConnectionProfile, EMPTY_PROFILE } from "../connection/profile.js";
import { childEnvironment, childExecArgv } from "../node-options.js";
import type { BoundArguments } from "../query/parameters.js";
import { reaperStopsChildren, reapWithThisProcess } from "../reaper/reaper.js";
import {
  AnswerKind,
  type Frame,
  FrameReader,
  RETIRING,
  REAPED,
  WATCHES_PARENT,
} from "./query-frames.js";

/** How a statement's answer is shaped: the JSON body, an aligned text table, or CSV. */
export type AnswerFormat = "json" | "table" | "csv";

/** What a query process answers. */
export type QueryAnswer =
  /** `body`: the answer's UTF-8 bytes (written to the socket or the terminal as they are). */
  | { ok: true; body: string | Uint8Array }
  | { ok: false; message: string; user: boolean; tooLarge?: boolean };

/** One statement on its way: waiting in the pool, or sent to a process. */
export interface Job {
  id: number;
  sql: string;
  format: AnswerFormat;
  /** Values bound to its parameters, or `null`: it has none. */
  args: BoundArguments | null;
  /** Frame flags of its request. */
  flags: number;
  resolve: (answer: QueryAnswer) => void;
  reject: (error: unknown) => void;
  /** The process it was sent to; `null` while it waits in the pool. */
  runner: PooledProcess | null;
  /** Clears its deadline timer and abort listener. */
  settle: () => void;
}

/**
 * Why a process leaves the pool. The first two wait for it to have no statement and end its
 * input, so it exits by itself; the others kill it (and its process group) at once.
 */
export type RetireReason =
  /** An idle process beyond the pool's size, idle for a while. */
  | "surplus"
  /** It held a large answer: its memory goes back to the system once its statements are answered. */
  | "held a large answer"
  /** It exited, broke its channel, or was killed to stop the statement it was running. */
  | "lost"
  /** The pool is stopping. */
  | "pool closed";

const GRACEFUL: ReadonlySet<RetireReason> = new Set(["surplus", "held a large answer"]);

/** What a query process is started with. */
export interface ProcessOptions {
  databasePath: string;
  maxAnswerBytes: number;
  profile?: ConnectionProfile;
  /** `false`: the process does not keep this process's event loop alive. */
  keepAlive?: boolean;
}

/** What the pool hears from one of its processes. */
export interface ProcessEvents {
  /** A frame it wrote (an answer to one of its jobs). */
  answered(process: PooledProcess, frame: Frame): void;
  /** It is up and reads statements (its first frame). */
  ready(process: PooledProcess): void;
  /** It went away by itself: exited, or its channel failed or closed. */
  lost(process: PooledProcess): void;
}

/**
 * How a query process starts: `node <these> <its arguments>`. As the library runs, its module
 * (query-process.ts). The CLI's bundle starts its own copy through the npm launcher instead
 * (scripts/build-cli.mjs rewrites this line): one CommonJS file compiled from a V8 code cache,
 * where the module costs Node's ES module loader and a compile of each of its modules at every
 * start.
 */
const QUERY_PROCESS_START: readonly string[] = [
  fileURLToPath(new URL("./query-process.js", import.meta.url)),
];

/**
 * One query process of the pool: the child, its frame channel, the statements sent to it (the
 * first one running), the frames waiting for the end of the event-loop turn, and how it
 * leaves (`retire`). Which process gets which statement, and when one is too many, is the
 * pool's policy (`QueryPool`).
 */
export class PooledProcess {
  private readonly child: ChildProcess;
  private readonly channel: Socket;
  /** Statements sent and not answered, in the order sent: the first one is running. */
  jobs: Job[] = [];
  /**
   * When its first job started (ms): sent to an idle process, or its predecessor answered.
   * While it has no job: since when it is idle.
   */
  headSince = Date.now();
  /**
   * Whether it has said it is up. Until then it gets no statement: one sent to a process still
   * starting would wait out its start-up even when another process is free sooner.
   */
  ready = false;
  /** Frames to write at the end of this event-loop turn. */
  private out: Buffer[] = [];
  /** It held a large answer: it gets nothing new and ends once its jobs are answered. */
  private retiring = false;
  /** Retired: killed, exited, broken or ended; its jobs were handed back. */
  private isGone = false;

  constructor(options: ProcessOptions, events: ProcessEvents) {
    // With the shell reaper running (a server, a REPL, an SDK program), the reaper stops the
    // process when this one ends in any way; otherwise the process watches for that itself.
    const reaped = reaperStopsChildren();
    const args = [
      ...QUERY_PROCESS_START,
      options.databasePath,
      String(options.maxAnswerBytes),
      JSON.stringify(options.profile ?? EMPTY_PROFILE),
      reaped ? REAPED : WATCHES_PARENT,
    ];
    this.child = spawn(process.execPath, [...childExecArgv(), ...args], {
      env: childEnvironment(),
      // fd 3: the frames, both ways.
      stdio: ["ignore", "inherit", "inherit", "pipe"],
      // Its own process group: killing the group also stops the worker processes of its
      // worker-backed functions, even one that hangs.
      detached: true,
    });
    if (reaped && this.child.pid !== undefined) {
      this.child.once("exit", reapWithThisProcess(this.child.pid));
    }
    this.channel = this.child.stdio[3] as Socket;
    if (options.keepAlive === false) {
      this.child.unref();
      this.channel.unref();
    }
    const reader = new FrameReader();
    this.channel.on("data", (chunk: Buffer) => {
      for (const frame of reader.push(chunk)) {
        if (frame.kind === AnswerKind.Ready) {
          this.ready = true;
          this.headSince = Date.now();
          events.ready(this);
          continue;
        }
        if ((frame.flags & RETIRING) !== 0) this.retiring = true;
        events.answered(this, frame);
      }
    });
    // A process that died mid-write, or a write to one that died (EPIPE): its jobs move on.
    const lost = () => events.lost(this);
    this.channel.on("error", lost);
    this.channel.on("close", lost);
    this.child.on("error", lost);
    this.child.once("exit", lost);
  }

  get gone(): boolean {
    return this.isGone;
  }

  /** Whether it is still starting: not up yet, and not leaving. */
  get starting(): boolean {
    return !this.ready && !this.leaving;
  }

  /** Whether it is leaving once its statements are answered (it gets nothing new). */
  get leaving(): boolean {
    return this.retiring || this.isGone;
  }

  /** Whether its running statement has run at least `ms` by `now` (never when idle). */
  busyFor(now: number, ms: number): boolean {
    return this.jobs.length > 0 && now - this.headSince >= ms;
  }

  /** Writes a frame now. */
  write(frame: Buffer): void {
    this.channel.write(frame);
  }

  /** Queues a frame for `flush` (at the end of the turn); whether it is the first queued. */
  queue(frame: Buffer): boolean {
    this.out.push(frame);
    return this.out.length === 1;
  }

  get hasQueued(): boolean {
    return this.out.length > 0;
  }

  /** Writes the queued frames in one write. */
  flush(): void {
    if (this.out.length === 0) return;
    const bytes = this.out.length === 1 ? (this.out[0] as Buffer) : Buffer.concat(this.out);
    this.out = [];
    if (!this.isGone) this.channel.write(bytes);
  }

  /**
   * Takes it out of service, once (later calls return nothing): ends its input or kills it, as
   * `reason` says (see `RetireReason`). Returns the statements it held, in the order sent, for
   * the pool to fail or send elsewhere.
   */
  retire(reason: RetireReason): Job[] {
    if (this.isGone) return [];
    this.isGone = true;
    const jobs = this.jobs;
    this.jobs = [];
    if (GRACEFUL.has(reason) && jobs.length === 0) {
      // Nothing more is sent to it: ending its input lets it exit.
      this.channel.end();
      return jobs;
    }
    // Never after its exit: its pid (and group id) may already belong to another process.
    const { exitCode, signalCode } = this.child;
    if (exitCode === null && signalCode === null) killGroup(this.child);
    return jobs;
  }
}

/** Kills a query process and everything in its process group (its function workers). */
function killGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
  } catch {
    child.kill("SIGKILL");
  }
}
