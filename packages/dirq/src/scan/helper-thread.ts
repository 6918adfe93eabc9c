import type { MessagePort, Worker } from "node:worker_threads";
import { workerThreads } from "../lazy-module.js";
import { startThread } from "../node-options.js";
import { nativeHostModule } from "./native-fs.js";

/** What `start` adds to every helper thread's workerData. */
export interface HelperThreadData {
  /** The counters shared with the calling thread (each helper names its slots). */
  counters: Int32Array;
  /** Where the thread posts its answers. */
  answers: MessagePort;
  /** The module that provides the native calls' host (see inheritNativeHost), if any. */
  nativeHost: string | null;
}

/**
 * The thread behind a walk's helpers (stat-helper.ts, walk-helper.ts): started once, given
 * counters it shares with the calling thread and a port for its answers, which the caller reads
 * synchronously (`receiveMessageOnPort`). A thread that fails or exits is `failed` from then on.
 */
export class HelperThread {
  readonly counters: Int32Array;
  private worker: Worker | null = null;
  private answers: MessagePort | null = null;
  private broken = false;

  /** `readySlot`: the counter the thread sets to 1 once it listens. */
  constructor(
    private readonly script: URL,
    counterSlots: number,
    private readonly readySlot: number,
  ) {
    this.counters = new Int32Array(new SharedArrayBuffer(4 * counterSlots));
  }

  /**
   * Starts the thread (once) with `data` plus `counters`, `answers` and `nativeHost` (see
   * inheritNativeHost) as its workerData.
   */
  start(data: object): void {
    if (this.worker !== null || this.broken) return;
    const { MessageChannel } = workerThreads();
    const channel = new MessageChannel();
    this.answers = channel.port1;
    const shared: HelperThreadData = {
      counters: this.counters,
      answers: channel.port2,
      nativeHost: nativeHostModule(),
    };
    this.worker = startThread(this.script, {
      workerData: { ...data, ...shared },
      transferList: [channel.port2],
    });
    const fail = () => {
      this.broken = true;
    };
    this.worker.on("error", fail);
    this.worker.on("exit", fail);
  }

  /**
   * Lets the process exit while the thread runs: for a thread whose answers are only ever
   * waited for synchronously, kept for later use.
   */
  unref(): void {
    this.worker?.unref();
  }

  /** Whether the thread is up and listening. */
  get ready(): boolean {
    return (
      this.worker !== null && !this.broken && Atomics.load(this.counters, this.readySlot) === 1
    );
  }

  /** Whether the thread failed or was closed. */
  get failed(): boolean {
    return this.broken;
  }

  post(message: unknown): void {
    this.worker?.postMessage(message);
  }

  /** The next answer that has arrived, if any. */
  nextAnswer(): unknown {
    return this.answers === null
      ? undefined
      : workerThreads().receiveMessageOnPort(this.answers)?.message;
  }

  /** Stops the thread, if one was started. */
  async close(): Promise<void> {
    this.broken = true;
    const worker = this.worker;
    this.worker = null;
    this.answers?.close();
    this.answers = null;
    if (worker !== null) {
      worker.removeAllListeners("exit");
      await worker.terminate();
    }
  }
}
