import { monotonicMs } from "../shared/clock.js";

/** Where progress goes: a stream with an optional terminal flag (process.stderr fits). */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

export type ProgressMode = "auto" | "always" | "never";

/** Reads `DIRQ_PROGRESS` (case-insensitive, whitespace ignored); anything unknown is `auto`. */
export function progressModeFromEnv(value: string | undefined): ProgressMode {
  // trim() drops exactly what /\s/ matches, without compiling a regular expression at start-up.
  const normalized = [...(value ?? "")]
    .filter((character) => character.trim() !== "")
    .join("")
    .toLowerCase();
  if (["always", "1", "true"].includes(normalized)) return "always";
  if (["never", "0", "false"].includes(normalized)) return "never";
  return "auto";
}

/** `850ms`, `1.42s`, `2m05s`. */
export function formatDuration(milliseconds: number): string {
  if (milliseconds < 1000) return `${Math.round(milliseconds)}ms`;
  if (milliseconds < 60_000) return `${(milliseconds / 1000).toFixed(2)}s`;
  const minutes = Math.floor(milliseconds / 60_000);
  const seconds = Math.floor((milliseconds % 60_000) / 1000);
  return `${minutes}m${String(seconds).padStart(2, "0")}s`;
}

/** One running phase: `update` rewrites its line, `finish` replaces it with a summary. */
export interface ProgressPhase {
  /** `force` shows a line that must not be dropped by the rate limit (a phase's last state). */
  update(line: string, force?: boolean): void;
  finish(summary: (duration: string) => string): void;
}

/** Starts phases. A disabled reporter hands out phases that print nothing. */
export interface ProgressReporter {
  start(): ProgressPhase;
}

/** In `auto` mode a phase shows itself only once it has run this long. */
const AUTO_DELAY_MS = 500;
/** Updates closer together than this are dropped (the final summary never is). */
const MIN_INTERVAL_MS = 100;

class TextPhase implements ProgressPhase {
  private readonly startedAt = monotonicMs();
  private lastWrite = Number.NEGATIVE_INFINITY;
  private shown = false;

  constructor(
    private readonly stream: ProgressStream,
    private readonly mode: ProgressMode,
  ) {}

  private visible(now: number): boolean {
    if (this.mode === "always") return true;
    return now - this.startedAt >= AUTO_DELAY_MS;
  }

  private write(line: string, final: boolean): void {
    // On a terminal the line is rewritten in place; elsewhere each report is its own line.
    if (this.stream.isTTY) this.stream.write(`\r\x1b[2K${line}${final ? "\n" : ""}`);
    else this.stream.write(`${line}\n`);
  }

  update(line: string, force = false): void {
    const now = monotonicMs();
    if (!this.visible(now) || (!force && now - this.lastWrite < MIN_INTERVAL_MS)) return;
    this.lastWrite = now;
    this.shown = true;
    this.write(`dirq: ${line}`, false);
  }

  finish(summary: (duration: string) => string): void {
    const elapsed = monotonicMs() - this.startedAt;
    if (!this.shown && !this.visible(monotonicMs())) return;
    this.write(`dirq: ${summary(formatDuration(elapsed))}`, true);
  }
}

const SILENT_PHASE: ProgressPhase = { update() {}, finish() {} };

/**
 * The reporter the core uses by default, so every client of the library behaves the same:
 * `DIRQ_PROGRESS` decides, `auto` reports only on a terminal and only after half a second.
 */
export function createProgressReporter(
  stream: ProgressStream,
  mode: ProgressMode = progressModeFromEnv(process.env.DIRQ_PROGRESS),
): ProgressReporter {
  // Asked on the first phase: telling a terminal costs an fstat, which a statement that reads
  // no table need not pay.
  let enabled: boolean | undefined;
  return {
    start: () => {
      enabled ??= mode === "always" || (mode === "auto" && stream.isTTY === true);
      return enabled ? new TextPhase(stream, mode) : SILENT_PHASE;
    },
  };
}
