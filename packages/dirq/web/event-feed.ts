import { type Cell, parseJson } from "./api.js";

/** A row as an event carries it: an object keyed by column name. */
type Row = Record<string, Cell>;
import { changedFields, previewText, rowSummary } from "./format.js";

/** A `row` frame of `GET /events`. */
export interface RowEvent {
  action: "insert" | "update" | "delete" | "error";
  table: string | null;
  file_path: string;
  row?: Row;
  old_row?: Row | null;
  error?: string;
}

/** Entries kept in the list; older ones are dropped from the page. */
const MAX_ENTRIES = 500;
/** Events kept while paused; beyond this the oldest are dropped (and counted). */
const MAX_HELD = 5_000;

/** The table filter's value for changes tied to no table (an unreadable folder). */
const NO_TABLE = "\u0000";

export type ConnectionState = "connecting" | "live" | "reconnecting" | "closed";

export interface EventFeedOptions {
  list: HTMLOListElement;
  note: HTMLElement;
  /** Shown while the list has no entries (its text is the page's to set). */
  empty: HTMLElement;
  /** Which table's changes to show: `""` all; a table is added as its first change arrives. */
  tableFilter: HTMLSelectElement;
  /** Which action to show: `""` all, else `insert`, `update`, `delete` or `error`. */
  actionFilter: HTMLSelectElement;
  /** Connection changes, for the header. */
  onConnection: (state: ConnectionState) => void;
  /** Row changes (insert, update, delete) that were shown: not called while paused. */
  onRowsChanged: () => void;
  /** Changes were lost to the feed (the server's `reset`): what was shown may be stale. */
  onReset: () => void;
}

/**
 * The live feed of `GET /events`: newest first, pausable. While paused, events are held and
 * shown on resume. The browser's EventSource reconnects by itself after a dropped stream and
 * sends the last frame's id, so the server sends what was missed; when it no longer can (or
 * the feed fell behind), it sends `reset` instead.
 */
export class EventFeed {
  private paused = false;
  private held: RowEvent[] = [];
  private dropped = 0;
  private source: EventSource | null = null;

  /** Tables with an entry in the table filter. */
  private readonly tablesSeen = new Set<string>();

  constructor(private readonly options: EventFeedOptions) {
    const refilter = () => {
      for (const item of options.list.children) this.filter(item as HTMLElement);
      this.updateEmpty();
    };
    options.tableFilter.addEventListener("change", refilter);
    options.actionFilter.addEventListener("change", refilter);
  }

  /** Hides an entry the filters leave out. */
  private filter(item: HTMLElement): void {
    const table = this.options.tableFilter.value;
    const action = this.options.actionFilter.value;
    item.hidden =
      (table !== "" && item.dataset.table !== table) ||
      (action !== "" && item.dataset.action !== action);
  }

  /** The empty panel's note shows until the first change arrives (or after Clear). */
  private updateEmpty(): void {
    this.options.empty.hidden = this.options.list.childElementCount > 0;
  }

  private noteTable(table: string): void {
    if (this.tablesSeen.has(table)) return;
    this.tablesSeen.add(table);
    const option = document.createElement("option");
    option.value = table;
    option.textContent = table === NO_TABLE ? "(no table)" : table;
    this.options.tableFilter.append(option);
  }

  connect(): void {
    this.options.onConnection("connecting");
    const source = new EventSource("/events");
    this.source = source;
    source.addEventListener("ready", () => this.options.onConnection("live"));
    source.addEventListener("row", (message) => {
      let event: RowEvent;
      try {
        event = parseJson((message as MessageEvent<string>).data) as RowEvent;
      } catch {
        return;
      }
      this.receive(event);
    });
    source.addEventListener("reset", () => {
      this.options.note.textContent =
        "Some changes were missed here (the connection was away too long or fell behind); a live result is current again by itself.";
      this.options.onReset();
    });
    source.addEventListener("error", () => {
      // CLOSED: the server refused the stream (503 when degraded) or is gone for good.
      this.options.onConnection(
        source.readyState === EventSource.CLOSED ? "closed" : "reconnecting",
      );
    });
  }

  isPaused(): boolean {
    return this.paused;
  }

  setPaused(paused: boolean): void {
    this.paused = paused;
    if (paused) {
      this.updateNote();
      return;
    }
    const held = this.held;
    this.held = [];
    const dropped = this.dropped;
    this.dropped = 0;
    for (const event of held) this.prepend(event);
    this.trim();
    this.updateEmpty();
    this.options.note.textContent =
      dropped > 0 ? `${dropped} older changes were dropped while paused.` : "";
    if (held.some((event) => event.action !== "error")) this.options.onRowsChanged();
  }

  clear(): void {
    this.options.list.replaceChildren();
    this.held = [];
    this.dropped = 0;
    this.updateNote();
    this.updateEmpty();
  }

  close(): void {
    this.source?.close();
  }

  private receive(event: RowEvent): void {
    if (this.paused) {
      this.held.push(event);
      if (this.held.length > MAX_HELD) {
        this.held.shift();
        this.dropped++;
      }
      this.updateNote();
      return;
    }
    this.prepend(event);
    this.trim();
    this.updateEmpty();
    if (event.action !== "error") this.options.onRowsChanged();
  }

  private updateNote(): void {
    const waiting = this.held.length + this.dropped;
    this.options.note.textContent = this.paused
      ? `Paused: ${waiting} change${waiting === 1 ? "" : "s"} waiting.`
      : "";
  }

  private trim(): void {
    const list = this.options.list;
    while (list.childElementCount > MAX_ENTRIES) list.lastElementChild?.remove();
  }

  private prepend(event: RowEvent): void {
    const item = eventElement(event);
    const table = event.table ?? NO_TABLE;
    item.dataset.table = table;
    item.dataset.action = event.action;
    this.noteTable(table);
    this.filter(item);
    this.options.list.prepend(item);
  }
}

function eventElement(event: RowEvent): HTMLLIElement {
  const item = document.createElement("li");
  item.className = `event ${event.action}`;
  const head = document.createElement("div");
  head.className = "event-head";
  const action = document.createElement("span");
  action.className = "action";
  action.textContent = event.action;
  const table = document.createElement("span");
  table.className = "event-table";
  table.textContent = event.table ?? "(no table)";
  const time = document.createElement("time");
  const now = new Date();
  time.dateTime = now.toISOString();
  time.textContent = now.toLocaleTimeString("en-GB");
  head.append(action, table, time);
  const file = document.createElement("div");
  file.className = "event-file";
  file.textContent = event.file_path;
  file.title = event.file_path;
  item.append(head, file);
  const detail = document.createElement("div");
  detail.className = "event-detail";
  if (event.action === "error") {
    detail.textContent = previewText(event.error ?? "");
    detail.title = event.error ?? "";
  } else if (event.action === "update" && event.old_row && event.row) {
    const changes = changedFields(event.old_row, event.row);
    if (changes.length === 0) detail.textContent = "(no visible change)";
    for (const change of changes.slice(0, 6)) {
      const line = document.createElement("div");
      line.className = "change";
      const column = document.createElement("span");
      column.className = "column-name";
      column.textContent = change.column;
      const before = document.createElement("del");
      before.textContent = previewText(change.before).slice(0, 60);
      const after = document.createElement("ins");
      after.textContent = previewText(change.after).slice(0, 60);
      line.append(column, ": ", before, " → ", after);
      detail.append(line);
    }
    if (changes.length > 6) detail.append(`… and ${changes.length - 6} more columns`);
  } else if (event.row) {
    detail.textContent = rowSummary(event.row);
  }
  item.append(detail);
  return item;
}
