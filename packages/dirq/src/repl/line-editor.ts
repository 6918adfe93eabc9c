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
  isCompletionEnabled: boolean;
}

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
 * The terminal line editor: node:readline (history on Up/Down, Ctrl-A/E, Alt-B/F, Ctrl-W/K/U
 * and its kill ring with Ctrl-Y / Alt-Y, Node 18 and later, Ctrl-D) plus what it lacks:
 * Ctrl-R reverse search of the history. `history` is shared, newest first; the caller adds
 * entries (a multi-line statement is one entry).
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
    this.rl.on("line", (text) => this.deliver({ kind: "line", text }));
    this.rl.on("SIGINT", () => {
      if (this.waiter === null) {
        this.onBusyInterrupt?.();
        return;
      }
      this.rl.line = "";
      this.rl.cursor = 0;
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
    this.forward(text, key);
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
