import {
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
} from "node:worker_threads";

/**
 * A thread that stats batches of files for a walk (see stat-helper-thread.ts): a stat is a
 * system call per file, most of the cost of a fill that reads stat columns, and this machine
 * has two cores. Requests are answered in order. Answers are read synchronously
 * (`receiveMessageOnPort`), so a synchronous loop sees them without turning the event loop,
 * and the caller can block on a shared counter for the next one. One message per batch of
 * hundreds of files: a round trip between threads costs tens of microseconds (FACTS.md), too
 * much per file or per folder.
 */

/** Slots of the counters shared with the helper. */
export const ANSWERED = 0;
export const READY = 1;

/** What the helper thread is given. */
export interface HelperData {
  root: string;
  /** Counters: [ANSWERED] requests answered, [READY] 1 once the helper listens. */
  counters: Int32Array;
  /** Where the helper posts its answers. */
  answers: MessagePort;
}

/** Stat a batch: paths joined by NUL (no file name holds one), one string to copy. */
export interface StatRequest {
  id: number;
  paths: string;
  rawPaths?: ReadonlyMap<string, Uint8Array>;
}

export interface StatAnswer {
  id: number;
  stats: Float64Array;
}

export class StatHelper {
  private readonly counters = new Int32Array(new SharedArrayBuffer(8));
  private worker: Worker | null = null;
  private answers: MessagePort | null = null;
  private nextId = 0;
  private readonly waiting = new Map<number, (answer: StatAnswer) => void>();
  private broken = false;

  constructor(private readonly root: string) {}

  /** Starts the thread (once). It takes requests when `ready`. */
  start(): void {
    if (this.worker !== null || this.broken) return;
    const channel = new MessageChannel();
    const data: HelperData = { root: this.root, counters: this.counters, answers: channel.port2 };
    this.answers = channel.port1;
    this.worker = new Worker(new URL("./stat-helper-thread.js", import.meta.url), {
      workerData: data,
      transferList: [channel.port2],
    });
    const fail = () => {
      this.broken = true;
    };
    this.worker.on("error", fail);
    this.worker.on("exit", fail);
  }

  /** Whether the thread is up and taking requests. */
  get ready(): boolean {
    return this.worker !== null && !this.broken && Atomics.load(this.counters, READY) === 1;
  }

  /** Whether the thread failed or was closed: what it was asked and has not answered never will be. */
  get failed(): boolean {
    return this.broken;
  }

  /** Requests the thread has answered so far. */
  get answered(): number {
    return Atomics.load(this.counters, ANSWERED);
  }

  /** Sends a request; `onAnswer` runs inside a later `receive()` or `wait()`. */
  ask(request: Omit<StatRequest, "id">, onAnswer: (answer: StatAnswer) => void): void {
    const id = this.nextId++;
    this.waiting.set(id, onAnswer);
    this.worker?.postMessage({ ...request, id });
  }

  /** Takes in every answer that has arrived; returns how many. */
  receive(): number {
    if (this.answers === null) return 0;
    for (let count = 0; ; count++) {
      const received = receiveMessageOnPort(this.answers);
      if (received === undefined) return count;
      const answer = received.message as StatAnswer;
      const onAnswer = this.waiting.get(answer.id);
      this.waiting.delete(answer.id);
      onAnswer?.(answer);
    }
  }

  /**
   * Blocks the thread until another answer arrives (unless one already has), at most `maxMs`
   * (an answer takes the helper about a millisecond), then takes in what arrived. A caller on
   * the main thread turns the event loop between waits, which is also where a failed helper is
   * noticed.
   */
  wait(maxMs: number): void {
    const seen = Atomics.load(this.counters, ANSWERED);
    if (this.receive() > 0 || this.waiting.size === 0 || this.broken) return;
    Atomics.wait(this.counters, ANSWERED, seen, maxMs);
    this.receive();
  }

  /** Stops the thread, if one was started; what it had not answered is the caller's to do. */
  async close(): Promise<void> {
    this.broken = true;
    const worker = this.worker;
    this.worker = null;
    this.answers?.close();
    this.answers = null;
    this.waiting.clear();
    if (worker !== null) {
      worker.removeAllListeners("exit");
      await worker.terminate();
    }
  }
}
