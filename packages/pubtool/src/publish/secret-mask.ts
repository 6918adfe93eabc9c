import { StringDecoder } from "node:string_decoder";

/** Characters of an unfinished line held back before part of it is let through. */
const MAX_PENDING = 64 * 1024;

/** What a masked secret is printed as. */
export const MASK = "***";

/**
 * Masks secret values in a stream of output chunks. A secret can be split across two writes of
 * the child process, so the masker lets through only complete lines, and of a line longer than
 * 64 KiB all but the last `longest secret - 1` characters, until more output (or the end) shows
 * whether they start a secret. Bytes are decoded
 * with a `StringDecoder`, so a multi-byte character split across chunks is not mangled either.
 */
export class SecretMasker {
  private readonly secrets: string[];
  private readonly holdBack: number;
  private readonly decoder = new StringDecoder("utf8");
  private pending = "";

  constructor(secrets: readonly string[]) {
    // Longest first, so a secret that contains another is masked whole.
    this.secrets = [...new Set(secrets.filter((secret) => secret.length > 0))].sort(
      (a, b) => b.length - a.length,
    );
    this.holdBack = Math.max(0, ...this.secrets.map((secret) => secret.length - 1));
  }

  private mask(text: string): string {
    return this.secrets.reduce((masked, secret) => masked.split(secret).join(MASK), text);
  }

  /** Takes a chunk; returns the text that is safe to print now. */
  write(chunk: Buffer | string): string {
    const text = typeof chunk === "string" ? chunk : this.decoder.write(chunk);
    const masked = this.mask(this.pending + text);
    // Whole lines go out (a token holds no newline, so a complete line is fully masked) and
    // keep the two streams' lines apart; a very long line goes out minus the hold-back.
    let cut = masked.lastIndexOf("\n") + 1;
    if (masked.length - cut > MAX_PENDING) cut = Math.max(cut, masked.length - this.holdBack);
    this.pending = masked.slice(cut);
    return masked.slice(0, cut);
  }

  /** The end of the stream: returns whatever was held back, masked. */
  end(): string {
    const rest = this.mask(this.pending + this.decoder.end());
    this.pending = "";
    return rest;
  }
}
