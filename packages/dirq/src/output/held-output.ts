import {
  closeSync,
  createReadStream,
  mkdtempSync,
  openSync,
  rmdirSync,
  rmSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { os } from "../lazy-module.js";

/** Output held in memory up to this many bytes; past it, the rest goes to a temp file. */
export const DEFAULT_SPILL_THRESHOLD = 8 * 1024 * 1024;

/**
 * Holds a statement's output until the statement has finished, so that an error while rows
 * are still being read (an integer overflow, malformed JSON in `json()`) leaves nothing on
 * stdout. Memory stays bounded: past a threshold the output is spilled to a temp file. Its
 * name is removed as soon as it is open (the rows are read back through the descriptor), so
 * nothing is left on disk even when dirq is killed with `kill -9`; where an open file cannot
 * be removed, it goes when the output is released or discarded, or at exit.
 */
export class HeldOutput {
  private readonly chunks: Buffer[] = [];
  private held = 0;
  private spill: { dir: string; fd: number } | null = null;

  constructor(private readonly threshold = DEFAULT_SPILL_THRESHOLD) {}

  private readonly removeOnExit = () => this.discard();

  add(text: string): void {
    const bytes = Buffer.from(text, "utf8");
    if (this.spill === null && this.held + bytes.length <= this.threshold) {
      this.chunks.push(bytes);
      this.held += bytes.length;
      return;
    }
    const spill = this.spill ?? this.openSpill();
    writeSync(spill.fd, bytes);
  }

  private openSpill(): { dir: string; fd: number } {
    const dir = mkdtempSync(join(os().tmpdir(), "dirq-output-"));
    const path = join(dir, "rows");
    const fd = openSync(path, "w+", 0o600);
    try {
      unlinkSync(path);
      rmdirSync(dir);
    } catch {
      // Windows keeps the name of an open file until it is closed: removed later.
    }
    for (const chunk of this.chunks) writeSync(fd, chunk);
    this.chunks.length = 0;
    this.held = 0;
    this.spill = { dir, fd };
    // A reader that goes away ends the process at once (`dirq ... | head`): no file is left.
    process.once("exit", this.removeOnExit);
    return this.spill;
  }

  /** Whether the output went to a temp file (for tests of the threshold). */
  get spilled(): boolean {
    return this.spill !== null;
  }

  /** Writes everything held to `write`, in order, then lets go of it. */
  async release(write: (chunk: Buffer) => Promise<void>): Promise<void> {
    try {
      if (this.spill === null) {
        for (const chunk of this.chunks) await write(chunk);
        return;
      }
      // Read back from the start through the descriptor: the file may have no name any more.
      const rows = createReadStream("", {
        fd: this.spill.fd,
        start: 0,
        autoClose: false,
        highWaterMark: 1 << 20,
      });
      for await (const chunk of rows) await write(chunk as Buffer);
    } finally {
      this.discard();
    }
  }

  /** Drops everything held (after an error), removing the temp file if there is one. */
  discard(): void {
    this.chunks.length = 0;
    if (this.spill !== null) {
      closeSync(this.spill.fd);
      rmSync(this.spill.dir, { recursive: true, force: true });
      this.spill = null;
      process.removeListener("exit", this.removeOnExit);
    }
  }
}
