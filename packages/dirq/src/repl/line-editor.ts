import { createInterface, type Interface, type Key } from "node:readline";
import type { Readable, Writable } from "node:stream";

/** What one read from the terminal gives. */
export type EditorInput =
  | { kind: "line"; text: string }
  /** Ctrl-C at the prompt: the line was abandoned. */
  | { kind: "interrupt" }
  /** Ctrl-D on an empty line, or the end of input. */
  | { kind: "end" };

/** The parts of node:readline's Interface this module drives beyond its typed API. */
interface EditableInterface extends Interface {
  line: string;
  cursor: number;
  history: string[];
  /** Where Up/Down stand in `history`: -1 is the line being typed. */
  historyIndex: number;
  isCompletionEnabled: boolean;
}

/** Which way a kill removed text from the cursor: consecutive kills join in that order. */
type KillDirection = "backward" | "forward";

/** Keys that kill text (readline's bindings), and which way. */
function killDirection(key: Key): KillDirection | null {
  if (key.ctrl && key.shift) {
    if (key.name === "backspace") return "backward";
    if (key.name === "delete") return "forward";
    return null;
  }
  if (key.ctrl) {
    if (key.name === "w" || key.name === "backspace" || key.name === "u") return "backward";
    if (key.name === "k" || key.name === "delete") return "forward";
    return null;
  }
  if (key.meta) {
    if (key.name === "backspace") return "backward";
    if (key.name === "d" || key.name === "delete") return "forward";
  }
  return null;
}

/** Kills kept for Ctrl-Y and Alt-Y, as in GNU readline. */
const KILL_RING_SIZE = 32;

/** An incremental search of the history (Ctrl-R), as in bash and sqlite3. */
interface Search {
  query: string;
  /** Index of the shown entry in the history (newest first), or -1. */
  index: number;
  savedLine: string;
  savedCursor: number;
}

function isPrintable(text: string | undefined, key: Key): text is string {
  return typeof text === "string" && !key.ctrl && !key.meta && text.length > 0 && text >= " ";
}

/**
 * The terminal line editor: node:readline (history on Up/Down, Ctrl-A/E, Alt-B/F, the word and
 * line kills Ctrl-W/K/U, Ctrl-D) plus what it lacks or gets wrong: Ctrl-R reverse search of
 * the history; a kill ring that every kill feeds (readline's own misses the word kills, so
 * Ctrl-W then Ctrl-Y pasted an older kill); and a history position that goes back to the
 * newest entry once a line is entered or abandoned (with `historySize: 0` readline never
 * resets it). `history` is shared, newest first; the caller adds entries (a multi-line
 * statement is one entry).
 */
export class LineEditor {
  private readonly rl: EditableInterface;
  private readonly forward: (text: string | undefined, key: Key) => void;
  private readonly onKeypress = (text: string | undefined, key: Key | undefined) =>
    this.handleKey(text, key ?? {});
  private waiter: ((input: EditorInput) => void) | null = null;
  private readonly queued: EditorInput[] = [];
  private prompt = "";
  private search: Search | null = null;
  /** Killed text, newest first. */
  private readonly killRing: string[] = [];
  /** How the previous key killed, so that the next kill joins it (`null`: it did not). */
  private lastKill: KillDirection | null = null;
  /** The text the previous key yanked and where it starts, for Alt-Y to replace. */
  private lastYank: { start: number; length: number; ringIndex: number } | null = null;
  /** Called on Ctrl-C while no line is being read (a statement is running). */
  onBusyInterrupt: (() => void) | null = null;

  constructor(
    private readonly input: Readable,
    output: Writable,
    history: string[],
  ) {
    this.rl = createInterface({
      input,
      output,
      terminal: true,
      history,
      // The caller adds whole statements; readline would add each line of one.
      historySize: 0,
      tabSize: 4,
    }) as EditableInterface;
    // Readline listens to keypresses itself; stand in front of it to see Ctrl-R.
    const readlineListeners = input.listeners("keypress") as ((...args: unknown[]) => void)[];
    input.removeAllListeners("keypress");
    input.on("keypress", this.onKeypress);
    this.forward = (text, key) => {
      for (const listener of readlineListeners) listener.call(input, text, key);
    };
    this.rl.on("line", (text) => {
      this.rl.historyIndex = -1;
      this.deliver({ kind: "line", text });
    });
    this.rl.on("SIGINT", () => {
      if (this.waiter === null) {
        this.onBusyInterrupt?.();
        return;
      }
      this.rl.line = "";
      this.rl.cursor = 0;
      this.rl.historyIndex = -1;
      this.write("^C\n");
      this.deliver({ kind: "interrupt" });
    });
    this.rl.on("close", () => this.deliver({ kind: "end" }));
  }

  private write(text: string): void {
    (this.rl as unknown as { output: Writable }).output.write(text);
  }

  private deliver(input: EditorInput): void {
    const waiter = this.waiter;
    if (waiter === null) {
      // A line typed ahead while a statement runs waits for its turn.
      if (input.kind !== "interrupt") this.queued.push(input);
      return;
    }
    this.waiter = null;
    waiter(input);
  }

  /** Shows `prompt` and resolves with the next line, interrupt or end. */
  read(prompt: string): Promise<EditorInput> {
    const next = this.queued.shift();
    if (next !== undefined) return Promise.resolve(next);
    this.prompt = prompt;
    this.rl.setPrompt(prompt);
    this.rl.prompt(true);
    return new Promise((resolve) => {
      this.waiter = resolve;
    });
  }

  close(): void {
    this.input.off("keypress", this.onKeypress);
    this.rl.close();
  }

  private handleKey(text: string | undefined, key: Key): void {
    // Readline turns this off for every key but the last of a chunk (a paste, or keys typed
    // faster than they are read), and then inserts at the end of the line whatever the
    // cursor position. It only guards tab completion, which the REPL does not use.
    this.rl.isCompletionEnabled = true;
    if (this.search !== null) {
      this.handleSearchKey(text, key);
      return;
    }
    if (key.ctrl && key.name === "r") {
      this.search = { query: "", index: -1, savedLine: this.rl.line, savedCursor: this.rl.cursor };
      this.showSearch();
      return;
    }
    const kill = killDirection(key);
    const yank = key.ctrl && !key.meta && key.name === "y";
    const yankPop = key.meta && !key.ctrl && key.name === "y";
    const previousKill = this.lastKill;
    const previousYank = this.lastYank;
    this.lastKill = null;
    this.lastYank = null;
    if (yank) this.yank();
    else if (yankPop) this.yankPop(previousYank);
    else if (kill !== null) this.kill(text, key, kill, previousKill);
    else this.forward(text, key);
  }

  /** Lets readline kill, then keeps what went in the ring (joined to a kill just before). */
  private kill(
    text: string | undefined,
    key: Key,
    direction: KillDirection,
    previous: KillDirection | null,
  ): void {
    const before = this.rl.line;
    this.forward(text, key);
    const after = this.rl.line;
    const removed = before.slice(this.rl.cursor, this.rl.cursor + before.length - after.length);
    this.lastKill = direction;
    if (removed === "") return;
    if (previous !== null && this.killRing.length > 0) {
      const joined = this.killRing[0] as string;
      this.killRing[0] = direction === "backward" ? removed + joined : joined + removed;
    } else {
      this.killRing.unshift(removed);
      if (this.killRing.length > KILL_RING_SIZE) this.killRing.length = KILL_RING_SIZE;
    }
    // A line emptied by Ctrl-U is abandoned: Up starts again from the newest entry.
    if (after === "") this.rl.historyIndex = -1;
  }

  /** Ctrl-Y: inserts the newest kill at the cursor. */
  private yank(): void {
    const text = this.killRing[0];
    if (text === undefined) return;
    const start = this.rl.cursor;
    this.rl.write(text);
    this.lastYank = { start, length: text.length, ringIndex: 0 };
  }

  /** Alt-Y right after a yank: replaces the yanked text with the next older kill. */
  private yankPop(previous: { start: number; length: number; ringIndex: number } | null): void {
    if (previous === null || this.killRing.length === 0) return;
    const ringIndex = (previous.ringIndex + 1) % this.killRing.length;
    const text = this.killRing[ringIndex] as string;
    const line = this.rl.line;
    this.rl.line =
      line.slice(0, previous.start) + text + line.slice(previous.start + previous.length);
    this.rl.cursor = previous.start + text.length;
    this.rl.prompt(true);
    this.lastYank = { start: previous.start, length: text.length, ringIndex };
  }

  /** The newest entry at or after `from` that contains the query. */
  private find(query: string, from: number): number {
    const history = this.rl.history;
    for (let i = Math.max(0, from); i < history.length; i++) {
      if ((history[i] as string).includes(query)) return i;
    }
    return -1;
  }

  private showSearch(): void {
    const search = this.search as Search;
    const entry = search.index >= 0 ? (this.rl.history[search.index] as string) : "";
    const failing = search.index < 0 && search.query !== "" ? "failing " : "";
    this.rl.setPrompt(`(${failing}reverse-i-search)'${search.query}': `);
    this.rl.line = search.index >= 0 ? entry : search.savedLine;
    const at = search.index >= 0 ? entry.indexOf(search.query) : search.savedCursor;
    this.rl.cursor = Math.max(0, at);
    this.rl.prompt(true);
  }

  /** Leaves the search showing `line` at the normal prompt. */
  private endSearch(line: string, cursor: number): void {
    this.search = null;
    this.rl.setPrompt(this.prompt);
    this.rl.line = line;
    this.rl.cursor = cursor;
    this.rl.prompt(true);
  }

  private handleSearchKey(text: string | undefined, key: Key): void {
    const search = this.search as Search;
    if (key.ctrl && key.name === "r") {
      const next = this.find(search.query, search.index + 1);
      if (next >= 0) search.index = next;
      this.showSearch();
      return;
    }
    if (key.name === "backspace") {
      search.query = search.query.slice(0, -1);
      search.index = search.query === "" ? -1 : this.find(search.query, 0);
      this.showSearch();
      return;
    }
    if ((key.ctrl && key.name === "g") || key.name === "escape") {
      this.endSearch(search.savedLine, search.savedCursor);
      return;
    }
    if (isPrintable(text, key)) {
      search.query += text;
      search.index = this.find(search.query, Math.max(0, search.index));
      this.showSearch();
      return;
    }
    // Any other key takes the match (or, for Ctrl-C, abandons it) and then does its own work.
    const line = this.rl.line;
    const cursor = this.rl.cursor;
    if (key.ctrl && key.name === "c") this.endSearch(search.savedLine, search.savedCursor);
    else this.endSearch(line, cursor);
    this.handleKey(text, key);
  }
}
