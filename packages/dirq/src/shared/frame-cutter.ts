/**
 * Cuts a byte stream into length-prefixed frames, whatever chunks it arrives in. Chunks are
 * kept as they come and joined only when a frame's head or body spans several, so a large
 * frame that arrives in many chunks is copied once.
 */
export class FrameCutter<F> {
  private chunks: Buffer[] = [];
  private size = 0;

  /**
   * `headBytes`: the length of a frame's fixed head; `frameBytes`: a frame's whole length, read
   * from its head (it may throw, to refuse a stream that is not frames); `decode`: a frame
   * from its bytes.
   */
  constructor(
    private readonly headBytes: number,
    private readonly frameBytes: (head: Buffer) => number,
    private readonly decode: (frame: Buffer) => F,
  ) {}

  /** Takes a chunk; returns the frames it completes, in order. */
  push(chunk: Buffer): F[] {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.size += chunk.length;
    }
    const frames: F[] = [];
    while (this.size >= this.headBytes) {
      const total = this.frameBytes(this.peek(this.headBytes));
      if (this.size < total) break;
      frames.push(this.decode(this.take(total)));
    }
    return frames;
  }

  /** A buffer that starts with the next `count` bytes (it may hold more), left in place. */
  private peek(count: number): Buffer {
    let head = this.chunks[0] as Buffer;
    if (head.length < count) {
      head = Buffer.concat(this.chunks, this.size);
      this.chunks = [head];
    }
    return head;
  }

  private take(count: number): Buffer {
    const head = this.peek(count);
    if (head.length === count) this.chunks.shift();
    else this.chunks[0] = head.subarray(count);
    this.size -= count;
    return head.subarray(0, count);
  }
}
