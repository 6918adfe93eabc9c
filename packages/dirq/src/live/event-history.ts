import { randomBytes } from "node:crypto";
import { Waiters } from "./waiters.js";

/** How much of the recent past an event history keeps: every bound holds. */
export interface HistoryBounds {
  /** Frames kept (the newest frame is always kept). */
  frames: number;
  /** Bytes of the frames' data (UTF-8) kept (the newest frame is always kept, however large). */
  bytes: number;
  /**
   * Milliseconds a frame is kept at most (the newest frame is always kept); none when left out.
   * A bound in time is what a client that comes back is promised ("a disconnect of up to two
   * minutes"), and memory reaches its level within it at any rate of change, where a count of
   * frames fills for as long as the rate makes it.
   */
  ms?: number;
}

/** Frames a history keeps by default. */
export const HISTORY_FRAMES = 65_536;
/** Bytes of frame data a history keeps by default. */
export const HISTORY_BYTES = 32 * 1024 * 1024;
/**
 * How long the server's histories keep a frame by default: the window in which a client that
 * comes back resumes (Socket.IO's connection state recovery keeps two minutes too).
 */
export const HISTORY_MS = 2 * 60 * 1000;

/** Where a frame lies in a block of `FrameSlabs`: offsets, not views. */
export interface FramePlace {
  block: ArrayBufferLike;
  /** The SSE frame's first byte, its data's first byte and past-last, the frame's past-last. */
  start: number;
  textStart: number;
  textEnd: number;
  end: number;
}

/**
 * One published change: its number in the run and its data (the SSE `row` frame's JSON), kept
 * as UTF-8, the form every subscriber's socket sends: a large row is encoded once, not once
 * per subscriber, and every socket sends the same bytes. The data may be in pieces (a large
 * text's JSON, made off the main thread, is one piece of its own, never copied into another).
 * A frame made from text names its place in a block and makes its views when it is sent: a
 * full history keeps tens of thousands of frames, and two views and an array for each would
 * be long-lived heap, which V8 grows its heap by a multiple of.
 */
export class HistoryFrame {
  readonly bytes: number;
  private readonly pieces: readonly Buffer[] | null;
  // The place's fields, not the place: one object a frame.
  private readonly block: ArrayBufferLike | null;
  private readonly start: number;
  private readonly textStart: number;
  private readonly end: number;

  /**
   * @param data The data's pieces, or where the whole SSE frame lies in a block.
   * @param at When it was appended (`Date.now()`): the history's bound in time drops it.
   */
  constructor(
    readonly n: number,
    data: readonly Buffer[] | FramePlace,
    readonly at: number,
  ) {
    if (Array.isArray(data)) {
      const pieces = data as readonly Buffer[];
      this.pieces = pieces;
      this.bytes = pieces.reduce((sum, piece) => sum + piece.length, 0);
      this.block = null;
      this.start = this.textStart = this.end = 0;
    } else {
      const place = data as FramePlace;
      this.pieces = null;
      this.bytes = place.textEnd - place.textStart;
      this.block = place.block;
      this.start = place.start;
      this.textStart = place.textStart;
      this.end = place.end;
    }
  }

  /** The block it lies in; `null` when its data is in pieces of their own. */
  get home(): ArrayBufferLike | null {
    return this.block;
  }

  /** The data as UTF-8 pieces. */
  get utf8(): readonly Buffer[] {
    if (this.block === null) return this.pieces as readonly Buffer[];
    return [Buffer.from(this.block, this.textStart, this.bytes)];
  }

  /**
   * The whole SSE `row` frame (id, event and data lines, blank line), when the data came as
   * text: every subscriber's socket writes these bytes as they are.
   */
  get sse(): Buffer | null {
    if (this.block === null) return null;
    return Buffer.from(this.block, this.start, this.end - this.start);
  }

  /** Whether `next`'s SSE frame lies right after this one's, in the same block. */
  adjoins(next: HistoryFrame): boolean {
    return this.block !== null && next.block === this.block && next.start === this.end;
  }

  /**
   * The SSE frames from this one through `last`, which adjoin one another (see `adjoins`), as
   * one view of their block.
   */
  sseThrough(last: HistoryFrame): Buffer {
    return Buffer.from(this.block as ArrayBufferLike, this.start, last.end - this.start);
  }

  /** The data as text (the SDK's `watch()` parses it). */
  get data(): string {
    const pieces = this.utf8;
    return pieces.length === 1
      ? (pieces[0] as Buffer).toString()
      : Buffer.concat(pieces).toString();
  }
}

/**
 * Where a reader starts: after frame `after` (0: before the first), or a `reset` when the frames
 * it asks for are gone (or its id is from another run, or not an id at all).
 */
export type StartPoint = { after: number } | { reset: true };

/** What a cursor reads next: a frame, or a reset (frames it had not read are gone). */
export type CursorItem = { frame: HistoryFrame } | { reset: number };

/** The size of the blocks a history copies its frames' text into. */
const SLAB_BYTES = 1024 * 1024;

/**
 * Copies frames' text into blocks of the history's own. `Buffer.from` would take each from
 * Node's shared 8 KiB pool, where every frame kept would also keep the short-lived buffers
 * made beside it: after a burst the history's frames held several times their bytes. A block is freed once its last frame is. Each frame is copied as the SSE frame it is
 * sent as, so a burst's frames lie one after another in a block and a socket writes a run of
 * them as one view of it, with no copy per frame or per subscriber. Blocks start at
 * `firstBytes` and double up to `slabBytes`: a history that keeps few frames holds a small
 * block, not a large one mostly empty.
 */
export class FrameSlabs {
  private slab = Buffer.allocUnsafeSlow(0);
  private used = 0;

  constructor(
    private readonly slabBytes = SLAB_BYTES,
    private readonly firstBytes = slabBytes,
  ) {}

  /** The frame `head + text + tail` as bytes, and its `text` part. */
  copy(head: string, text: string, tail: string): { frame: Buffer; text: Buffer } {
    const headLength = head.length;
    const textLength = Buffer.byteLength(text);
    const length = headLength + textLength + tail.length;
    let bytes: Buffer;
    if (length > this.slabBytes / 8) bytes = Buffer.allocUnsafeSlow(length);
    else {
      if (this.used + length > this.slab.length) {
        const next = Math.max(this.firstBytes, Math.min(this.slabBytes, this.slab.length * 2));
        this.slab = Buffer.allocUnsafeSlow(Math.max(next, length));
        this.used = 0;
      }
      bytes = this.slab.subarray(this.used, this.used + length);
      this.used += length;
    }
    // The head and tail are ASCII: their lengths are their bytes.
    bytes.write(head, 0, "latin1");
    bytes.write(text, headLength, "utf8");
    bytes.write(tail, headLength + textLength, "latin1");
    return { frame: bytes, text: bytes.subarray(headLength, headLength + textLength) };
  }

  /**
   * `copy` with one write, for a head and tail of ASCII: where the frame lies (offsets, not
   * views). The frame is written at once when the block has room for its characters at 3
   * bytes each (none takes more in UTF-8), so its bytes need not be counted first.
   */
  place(head: string, text: string, tail: string): FramePlace {
    const whole = `${head}${text}${tail}`;
    if (whole.length * 3 > this.slab.length - this.used) {
      return placeOf(this.copy(head, text, tail));
    }
    const start = this.slab.byteOffset + this.used;
    const written = this.slab.write(whole, this.used, "utf8");
    this.used += written;
    const end = start + written;
    return {
      block: this.slab.buffer,
      start,
      textStart: start + head.length,
      textEnd: end - tail.length,
      end,
    };
  }

  /**
   * Copies whole frames (each `heads[i] + texts[i] + tail`) with one write, as many from the
   * first on as fit in what is left of the block (a new block when not even the first does);
   * returns where each copied frame and its text lie (offsets, not views: a burst copies
   * hundreds of thousands of frames, and two views of each cost more than the copy). A frame
   * too large for a block's eighth is left to `copy`: none is copied then.
   */
  copyRun(heads: readonly string[], texts: readonly string[], tail: string): FramePlace[] {
    let text = "";
    let end = 0;
    let room = this.slab.length - this.used;
    // A character takes at most 3 bytes in UTF-8 (a surrogate pair's 2 take 4).
    const most = (at: number) =>
      ((heads[at] as string).length + (texts[at] as string).length) * 3 + tail.length;
    if (most(0) > room) {
      if (most(0) > SLAB_BYTES / 8) return [];
      this.slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
      this.used = 0;
      room = SLAB_BYTES;
    }
    for (let need = 0; end < texts.length && need + most(end) <= room; end++) {
      need += most(end);
      text += `${heads[end]}${texts[end]}${tail}`;
    }
    const written = this.slab.write(text, this.used, "utf8");
    // ASCII text (most paths): each character one byte, so no frame's length needs counting.
    const ascii = written === text.length;
    const block = this.slab.buffer;
    const places: FramePlace[] = [];
    let at = this.slab.byteOffset + this.used;
    for (let i = 0; i < end; i++) {
      const textStart = at + (heads[i] as string).length;
      const textEnd =
        textStart + (ascii ? (texts[i] as string).length : Buffer.byteLength(texts[i] as string));
      places.push({ block, start: at, textStart, textEnd, end: textEnd + tail.length });
      at = textEnd + tail.length;
    }
    this.used = at - this.slab.byteOffset;
    return places;
  }
}

/** Frames `appendTexts` copies with one write at most. */
const RUN_FRAMES = 256;

/** Where `copy` put a frame and its text. */
function placeOf(copied: { frame: Buffer; text: Buffer }): FramePlace {
  const start = copied.frame.byteOffset;
  const textStart = copied.text.byteOffset;
  return {
    block: copied.frame.buffer,
    start,
    textStart,
    textEnd: textStart + copied.text.length,
    end: start + copied.frame.length,
  };
}

/** Letters of a run id: no `-`, so that `<run>-<n>` splits at its last dash. */
function newRunId(): string {
  return randomBytes(8).toString("hex");
}

/**
 * The recent row changes of one live session, numbered: `<run>-<n>` with `n` consecutive from
 * 1 within the run. Readers hold a cursor (the last number they read), not a copy: a reader
 * that falls behind the history gets a reset instead of the frames it lost. Memory is the
 * history's alone, bounded in frames and bytes, however many readers there are and however
 * slowly they read.
 */
export class EventHistory {
  readonly run = newRunId();
  /** The frames kept, from `start` on; the slots before it are emptied as frames are dropped. */
  private readonly frames: (HistoryFrame | undefined)[] = [];
  /** Index in `frames` of the oldest frame kept (the array is compacted now and then). */
  private start = 0;
  private keptBytes = 0;
  private droppedFrames = 0;
  private last = 0;
  private readonly waiters = new Waiters();
  private readonly appendListeners = new Set<(frame: HistoryFrame) => void>();
  private readonly slabs = new FrameSlabs();

  /**
   * Without `bounds.ms` it keeps frames however old: an SDK's streams are cursors in it, and a
   * consumer slow at its work must not lose frames to a clock. The server bounds it in time too,
   * for the clients that come back (`historyBoundsFromEnv`).
   */
  constructor(readonly bounds: HistoryBounds = { frames: HISTORY_FRAMES, bytes: HISTORY_BYTES }) {}

  /** The number of the newest frame (0 before the first). */
  get head(): number {
    return this.last;
  }

  /** The number of the oldest frame still kept (`head + 1` when none is). */
  get oldest(): number {
    return this.last - (this.frames.length - this.start) + 1;
  }

  /**
   * The frames kept and their bytes (what the history's bounds bound), and how many it dropped
   * so far: once it drops, it is full, and its size stays at its bounds' level.
   */
  get size(): { frames: number; bytes: number; dropped: number } {
    return {
      frames: this.frames.length - this.start,
      bytes: this.keptBytes,
      dropped: this.droppedFrames,
    };
  }

  /** The SSE id of frame `n`. */
  idOf(n: number): string {
    return `${this.run}-${n}`;
  }

  /**
   * The memory its frames hold: the blocks they lie in, whole (a block is freed with its last
   * frame), and the pieces of the others. It walks every frame: for statistics only.
   */
  heldBytes(): number {
    const blocks = new Set<ArrayBufferLike>();
    let total = 0;
    for (let i = this.start; i < this.frames.length; i++) {
      const frame = this.frames[i] as HistoryFrame;
      const block = frame.home;
      if (block === null) total += frame.bytes;
      else blocks.add(block);
    }
    for (const block of blocks) total += block.byteLength;
    return total;
  }

  /**
   * Appends one frame (its data as text, or as UTF-8 pieces) and wakes the readers waiting for
   * one; returns its number.
   */
  append(data: string | readonly Buffer[]): number {
    const n = ++this.last;
    const at = Date.now();
    let frame: HistoryFrame;
    if (typeof data === "string" && !data.includes("\n") && !data.includes("\r")) {
      // Row JSON holds no raw line break (JSON escapes them): one data line.
      const copied = this.slabs.copy(`id: ${this.idOf(n)}\nevent: row\ndata: `, data, "\n\n");
      frame = new HistoryFrame(n, placeOf(copied), at);
    } else frame = new HistoryFrame(n, typeof data === "string" ? [Buffer.from(data)] : data, at);
    this.push(frame);
    this.wakeAll();
    return n;
  }

  /**
   * Appends one frame per text, as `append` would one after another, but copies runs of them
   * into a block with one write and wakes the readers once: a burst numbers hundreds of
   * thousands of row frames. Returns the number of the last one.
   */
  appendTexts(texts: readonly string[]): number {
    return this.appendRuns(texts, true);
  }

  /**
   * `appendTexts` for texts that are JSON, which holds no raw line break (JSON escapes them):
   * no text is searched for one. A search reads the whole text, and a burst's texts are made
   * of pieces that the search would join into a copy of their own before the run's copy.
   */
  appendJsonTexts(texts: readonly string[]): number {
    return this.appendRuns(texts, false);
  }

  private appendRuns(texts: readonly string[], mayBreakLines: boolean): number {
    // One reading of the clock for the whole burst: its frames leave the history together.
    const now = Date.now();
    const lineBreak = (text: string) =>
      mayBreakLines && (text.includes("\n") || text.includes("\r"));
    let at = 0;
    while (at < texts.length) {
      const text = texts[at] as string;
      if (lineBreak(text)) {
        this.append(text);
        at++;
        continue;
      }
      const heads: string[] = [];
      const idStart = `id: ${this.run}-`;
      let end = at;
      for (; end < texts.length && end - at < RUN_FRAMES; end++) {
        if (lineBreak(texts[end] as string)) break;
        heads.push(`${idStart}${this.last + heads.length + 1}\nevent: row\ndata: `);
      }
      const places = this.slabs.copyRun(heads, texts.slice(at, end), "\n\n");
      if (places.length === 0) {
        this.append(text);
        at++;
        continue;
      }
      for (const place of places) this.push(new HistoryFrame(++this.last, place, now));
      at += places.length;
    }
    this.wakeAll();
    return this.last;
  }

  private push(frame: HistoryFrame): void {
    this.frames.push(frame);
    this.keptBytes += frame.bytes;
    this.evict();
    for (const listener of this.appendListeners) listener(frame);
  }

  /**
   * Calls `listener` with every frame appended from now on (before the waiting readers wake);
   * returns the call that stops it. A listener may keep frames the history has dropped.
   */
  onAppend(listener: (frame: HistoryFrame) => void): () => void {
    this.appendListeners.add(listener);
    return () => this.appendListeners.delete(listener);
  }

  /** The kept frames after frame `after` (all of them when `after` is older than the oldest). */
  framesAfter(after: number): HistoryFrame[] {
    const skip = Math.max(0, after + 1 - this.oldest);
    return this.frames.slice(this.start + skip) as HistoryFrame[];
  }

  /**
   * Where a reader that last saw `lastEventId` continues: `undefined` or `""` is a new reader
   * (after the newest frame); an id of this run whose successors are all still kept continues
   * after it; anything else (older than the history, another run, not an id) is a reset.
   */
  startPoint(lastEventId: string | undefined): StartPoint {
    if (lastEventId === undefined || lastEventId === "") return { after: this.last };
    const dash = lastEventId.lastIndexOf("-");
    const run = lastEventId.slice(0, dash);
    const digits = lastEventId.slice(dash + 1);
    if (dash === -1 || run !== this.run || !/^\d{1,15}$/.test(digits)) return { reset: true };
    const after = Number(digits);
    if (after > this.last || after < this.oldest - 1) return { reset: true };
    return { after };
  }

  /** A reader positioned after frame `after`; it resets when more than `maxLag` behind. */
  cursor(after: number, maxLag = Infinity): HistoryCursor {
    return new HistoryCursor(this, after, maxLag);
  }

  /** @internal The frame after `after`, a reset when it is gone, `undefined` when none yet. */
  read(after: number): CursorItem | undefined {
    if (after >= this.last) return undefined;
    const oldest = this.oldest;
    if (after < oldest - 1) return { reset: this.last };
    return { frame: this.frames[this.start + (after + 1 - oldest)] as HistoryFrame };
  }

  /** @internal Resolves at the next append, or after `ms`. */
  waitForAppend(ms: number): Promise<void> {
    return this.waiters.wait(ms);
  }

  /** Wakes every waiting reader (a closing stream re-checks whether it is closed). */
  wakeAll(): void {
    this.waiters.wakeAll();
  }

  private evict(): void {
    const { frames, bytes, ms } = this.bounds;
    // The newest frame's time is now (a burst's frames share one): no clock read per frame.
    const newest = this.frames[this.frames.length - 1] as HistoryFrame;
    const since = ms === undefined ? -Infinity : newest.at - ms;
    while (this.frames.length - this.start > 1) {
      const oldest = this.frames[this.start] as HistoryFrame;
      const over = this.frames.length - this.start > frames || this.keptBytes > bytes;
      if (!over && oldest.at >= since) break;
      this.keptBytes -= oldest.bytes;
      this.droppedFrames++;
      // Let go of it now, not at the next compaction: memory stays at the bounds, not twice.
      this.frames[this.start] = undefined;
      this.start++;
    }
    if (this.start > 1024 && this.start * 2 > this.frames.length) {
      this.frames.splice(0, this.start);
      this.start = 0;
    }
  }
}

/**
 * One reader's place in a history. `next()` gives the frames after it in order; a reset when
 * the history dropped frames it had not read (the cursor then moves to the newest frame: what
 * follows is live), or when it fell more than `maxLag` frames behind.
 */
export class HistoryCursor {
  private closed = false;

  constructor(
    private readonly history: EventHistory,
    private position: number,
    private readonly maxLag = Infinity,
  ) {}

  /** The number of the last frame read (or skipped by a reset). */
  get after(): number {
    return this.position;
  }

  /** The next item, or `undefined` when there is none yet. */
  next(): CursorItem | undefined {
    if (this.closed) return undefined;
    if (this.history.head - this.position > this.maxLag) {
      this.position = this.history.head;
      return { reset: this.position };
    }
    const item = this.history.read(this.position);
    if (item === undefined) return undefined;
    this.position = "frame" in item ? item.frame.n : item.reset;
    return item;
  }

  /** Resolves when a frame may be there to read, after `ms` at most, or at `close()`. */
  wait(ms: number): Promise<void> {
    if (this.closed || this.history.head > this.position) return Promise.resolve();
    return this.history.waitForAppend(ms);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.history.wakeAll();
  }
}
