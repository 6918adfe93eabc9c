import "./styles.css";
import { type QueryFailure, type QueryResult, runQuery } from "./api.js";
import { createEditor } from "./editor.js";
import { type ConnectionState, EventFeed } from "./event-feed.js";
import { count, milliseconds, toCsv, toJsonText } from "./format.js";
import { LiveAnswer, type LiveUpdate } from "./live-answer.js";
import { ResultTable } from "./result-table.js";
import { loadSchema, renderSchema, type Schema, tableReference } from "./schema.js";

const STORED_SQL = "dirq-console:sql";
const STORED_RERUN = "dirq-console:auto-rerun";
const STORED_HISTORY = "dirq-console:history";
/** Statements kept in the history (newest first, each once). */
const HISTORY_SIZE = 50;
/** The URL fragment that carries a statement: `#sql=<percent-encoded>`. */
const LINK_PREFIX = "#sql=";
const DEFAULT_SQL = "SELECT path, size, mtime FROM './' ORDER BY mtime DESC LIMIT 100";

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`the page lacks #${id}`);
  return found as T;
}

const runButton = element<HTMLButtonElement>("run");
const cancelButton = element<HTMLButtonElement>("cancel");
const csvButton = element<HTMLButtonElement>("export-csv");
const jsonButton = element<HTMLButtonElement>("export-json");
const historyList = element<HTMLOListElement>("history-list");
const eventsEmpty = element("events-empty");
const resultStatus = element("result-status");
const queryError = element("query-error");
const degradedBanner = element("degraded");
const connection = element("connection");
const schemaBody = element("schema-body");
const pauseButton = element<HTMLButtonElement>("events-pause");
const liveToggle = element<HTMLInputElement>("auto-rerun");
const dialog = element<HTMLDialogElement>("cell-dialog");

function storedText(key: string): string | null {
  try {
    return localStorage.getItem(key);
  } catch {
    return null;
  }
}

function store(key: string, value: string): void {
  try {
    localStorage.setItem(key, value);
  } catch {
    // Storage may be off (private windows); the page works without it.
  }
}

const table = new ResultTable(element("results"), (column, rowNumber, text) => {
  element("cell-dialog-title").textContent = `${column}, row ${rowNumber}`;
  element("cell-dialog-value").textContent = text;
  dialog.showModal();
});
element("cell-dialog-copy").addEventListener("click", () => {
  void navigator.clipboard?.writeText(element("cell-dialog-value").textContent ?? "");
});

/** The statement a link carries (`#sql=...`), or `null`. */
function linkedSql(): string | null {
  if (!location.hash.startsWith(LINK_PREFIX)) return null;
  try {
    return decodeURIComponent(location.hash.slice(LINK_PREFIX.length));
  } catch {
    return null;
  }
}

const sqlFromLink = linkedSql();
const editor = createEditor(
  element("editor"),
  sqlFromLink ?? storedText(STORED_SQL) ?? DEFAULT_SQL,
  () => runStatement(editor.text()),
  (text) => store(STORED_SQL, text),
);

/* History and links ------------------------------------------------------------------------ */

function storedHistory(): string[] {
  try {
    const list = JSON.parse(storedText(STORED_HISTORY) ?? "[]") as unknown;
    return Array.isArray(list) ? list.filter((item) => typeof item === "string") : [];
  } catch {
    return [];
  }
}

function renderHistory(): void {
  const items = storedHistory().map((sql) => {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "history-entry";
    // One line in the list; the whole statement on hover and in the editor.
    button.textContent = sql.replace(/\s+/g, " ").slice(0, 200);
    button.title = sql;
    button.addEventListener("click", () => {
      editor.setText(sql);
      editor.focus();
    });
    item.append(button);
    return item;
  });
  if (items.length === 0) {
    const none = document.createElement("li");
    none.className = "hint";
    none.textContent = "Statements you run appear here.";
    items.push(none);
  }
  historyList.replaceChildren(...items);
}

function remember(sql: string): void {
  const list = [sql, ...storedHistory().filter((item) => item !== sql)].slice(0, HISTORY_SIZE);
  store(STORED_HISTORY, JSON.stringify(list));
  renderHistory();
}

/** The address of this page with `sql` in its fragment: opening it runs the statement. */
function linkFor(sql: string): string {
  return `${location.origin}${location.pathname}${LINK_PREFIX}${encodeURIComponent(sql)}`;
}

element("history-clear").addEventListener("click", () => {
  store(STORED_HISTORY, "[]");
  renderHistory();
});
element("copy-link").addEventListener("click", () => {
  const link = linkFor(editor.text());
  history.replaceState(null, "", link);
  void navigator.clipboard?.writeText(link).catch(() => {});
  resultStatus.textContent = "link copied (it is also in the address bar)";
});
window.addEventListener("hashchange", () => {
  const sql = linkedSql();
  if (sql === null) return;
  editor.setText(sql);
  runStatement(sql);
});
renderHistory();

/* Running statements --------------------------------------------------------------------- */

/*
 * The newest statement always wins. A statement the user runs (Run, Ctrl-Enter, a link)
 * becomes the current statement and supersedes every older run: the run under way is abandoned
 * (the server stops its statement) and the live answer of the statement before it is closed.
 * Only the newest run's answer, rows or error, is ever shown. With "live" on, the current
 * statement's answer, once shown, is followed with `GET /live` (live-answer.ts): the server
 * sends its changes and the page applies them; it never runs the statement again itself.
 */

/** The statement the user ran last: what "live" follows. */
let currentSql: string | null = null;
/** The number of the newest run; the answer of any older run is dropped unseen. */
let newestRun = 0;
/** The newest run's request, while it waits for its answer. */
let inFlight: AbortController | null = null;
/** The statement whose rows the table shows (after its own run, not an older one's). */
let shownSql: string | null = null;
/** The live answer of the current statement, while "live" is on and its answer shown. */
let live: LiveAnswer | null = null;
/** A live update that came while the feed was paused: shown on Resume. */
let heldUpdate: LiveUpdate | null = null;

function showDegraded(message: string | null): void {
  degradedBanner.hidden = message === null;
  degradedBanner.textContent = message === null ? "" : `The server is degraded: ${message}`;
}

function showFailure(failure: QueryFailure, title = "Error"): void {
  if (failure.status === 503) showDegraded(failure.message);
  queryError.hidden = false;
  queryError.replaceChildren();
  const status = document.createElement("strong");
  status.textContent = failure.status === 0 ? title : `${title} (HTTP ${failure.status})`;
  const message = document.createElement("span");
  message.className = "message";
  message.textContent = failure.message;
  queryError.append(status, " ", message);
  if (table.shown().columns.length > 0) {
    // The rows under the error are not this statement's: say so, and grey them out.
    const stale = document.createElement("span");
    stale.className = "stale-note";
    stale.textContent = "The rows below are from an earlier statement.";
    queryError.append(" ", stale);
    table.setStale(true);
    // An export would pass the earlier rows off as this statement's.
    csvButton.disabled = true;
    jsonButton.disabled = true;
  }
  resultStatus.textContent = `${title === "Error" ? "failed" : "cancelled"} after ${milliseconds(failure.elapsedMs)}`;
}

function showResult(result: QueryResult, keepScroll: boolean): void {
  showDegraded(null);
  queryError.hidden = true;
  table.setStale(false);
  const renderStart = performance.now();
  table.show(result.columns, result.rows, keepScroll);
  const renderMs = performance.now() - renderStart;
  const rows = result.rows.length;
  csvButton.disabled = false;
  jsonButton.disabled = false;
  resultStatus.textContent = `${count(rows)} row${rows === 1 ? "" : "s"} · ${milliseconds(result.elapsedMs)}`;
  resultStatus.title = `query and transfer ${milliseconds(result.elapsedMs)}, rendering ${milliseconds(renderMs)}`;
}

function setRunning(running: boolean): void {
  if (running) runButton.setAttribute("aria-busy", "true");
  else runButton.removeAttribute("aria-busy");
  cancelButton.hidden = !running;
}

/** Runs a statement the user asked for; it also goes into the history and the address bar. */
function runStatement(sql: string): void {
  stopLive();
  if (sql.trim() === "") {
    // Nothing to run, and no older answer may replace the message.
    supersede();
    currentSql = null;
    showFailure({ ok: false, status: 0, message: "Type a statement first.", elapsedMs: 0 });
    return;
  }
  currentSql = sql;
  remember(sql);
  if (linkedSql() !== sql) history.replaceState(null, "", linkFor(sql));
  void run(sql);
}

/** Follows the current statement's answer, if "live" is on and that answer is shown. */
function startLive(): void {
  stopLive();
  const sql = currentSql;
  if (!liveToggle.checked || sql === null || shownSql !== sql || inFlight !== null) return;
  const following: LiveAnswer = new LiveAnswer(sql, {
    onUpdate(update) {
      if (live !== following) return;
      if (feed.isPaused()) heldUpdate = update;
      else showLiveUpdate(update);
    },
    onError(message) {
      if (live !== following) return;
      resultStatus.textContent = `live: the statement failed on a later run (${message}); the rows are its last good answer`;
    },
    onClosed() {
      if (live !== following) return;
      live = null;
      document.body.dataset.live = "closed";
      resultStatus.textContent += " · no longer live (the stream closed)";
    },
  });
  live = following;
  document.body.dataset.live = "on";
}

function stopLive(): void {
  live?.close();
  live = null;
  heldUpdate = null;
  delete document.body.dataset.live;
}

/** Shows the rows a live update holds, in place: the reader's place and sort are kept. */
function showLiveUpdate(update: LiveUpdate): void {
  heldUpdate = null;
  showDegraded(null);
  queryError.hidden = true;
  table.setStale(false);
  table.show(update.columns, update.rows, true);
  csvButton.disabled = false;
  jsonButton.disabled = false;
  const rows = update.rows.length;
  const change =
    update.change === null
      ? ""
      : ` · +${update.change.added} −${update.change.removed}${update.change.updated > 0 ? ` ~${update.change.updated}` : ""} at ${new Date().toLocaleTimeString()}`;
  resultStatus.textContent = `${count(rows)} row${rows === 1 ? "" : "s"} · live, commit ${update.commit}${change}`;
  document.body.dataset.liveCommit = String(update.commit);
}

/** Abandons the run under way, if any (its answer will be dropped); numbers the next run. */
function supersede(): number {
  inFlight?.abort();
  inFlight = null;
  setRunning(false);
  return ++newestRun;
}

/** Runs `sql` as the newest run and shows its answer, unless a newer run comes first. */
async function run(sql: string): Promise<void> {
  const id = supersede();
  const controller = new AbortController();
  inFlight = controller;
  const started = performance.now();
  const mark = `dirq:run-start:${id}`;
  performance.mark(mark);
  resultStatus.textContent = "running…";
  setRunning(true);
  const answer = await runQuery(sql, controller.signal);
  if (id !== newestRun) {
    // Superseded: a newer statement (or a newer run of this one) owns the screen.
    performance.clearMarks(mark);
    return;
  }
  inFlight = null;
  setRunning(false);
  // Only the Cancel button aborts the newest run (a newer run aborts the ones before it).
  if (controller.signal.aborted) showCancelled(performance.now() - started);
  else showAnswer(answer, sql, mark);
  performance.clearMarks(mark);
  document.body.dataset.runs = String(id);
  if (answer.ok) startLive();
}

function showAnswer(answer: QueryResult | QueryFailure, sql: string, startMark: string): void {
  if (answer.ok) {
    showResult(answer, false);
    shownSql = sql;
  } else {
    shownSql = null;
    showFailure(answer);
  }
  // For the benchmark and curious users: from the keypress to the rows on screen.
  performance.clearMeasures("dirq:run");
  performance.measure("dirq:run", startMark);
  // A statement may have built a path-table: the schema and the live panel name it.
  if (answer.ok) scheduleSchemaRefresh(300);
}

function showCancelled(elapsedMs: number): void {
  // Closing the request made the server stop the statement.
  const message = "the statement was stopped; the server ended its query process.";
  showFailure({ ok: false, status: 0, message, elapsedMs }, "Cancelled");
}

cancelButton.addEventListener("click", () => {
  const running = inFlight;
  if (running === null) return;
  inFlight = null;
  setRunning(false);
  running.abort();
});

/** Saves `text` as a file through the browser's download (nothing leaves the page). */
function download(name: string, type: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  link.hidden = true;
  document.body.append(link);
  link.click();
  link.remove();
  // After the browser has taken the file.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

csvButton.addEventListener("click", () => {
  const { columns, rows } = table.shown();
  download("dirq-result.csv", "text/csv;charset=utf-8", toCsv(columns, rows));
});
jsonButton.addEventListener("click", () => {
  const { columns, rows } = table.shown();
  download("dirq-result.json", "application/json", toJsonText(columns, rows));
});

// Ctrl-Enter (Cmd-Enter) runs from anywhere on the page, not only in the editor.
document.addEventListener("keydown", (event) => {
  if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey) || event.defaultPrevented) return;
  if (dialog.open) return;
  event.preventDefault();
  runStatement(editor.text());
});

runButton.addEventListener("click", () => runStatement(editor.text()));
// The shortcut is Mod-Enter: Cmd on a Mac, Ctrl elsewhere; the button says which.
if (/Mac|iPhone|iPad/.test(navigator.platform)) {
  const key = runButton.querySelector("kbd");
  if (key !== null) key.textContent = "⌘";
}

/* Schema ---------------------------------------------------------------------------------- */

async function refreshSchema(): Promise<void> {
  const answer = await loadSchema();
  if (!answer.ok) {
    if (answer.status === 503) showDegraded(answer.message);
    const note = document.createElement("p");
    note.className = "hint";
    note.textContent = `The schema could not be read: ${answer.message}`;
    schemaBody.replaceChildren(note);
    return;
  }
  showDegraded(null);
  renderSchema(schemaBody, answer.schema, (sql) => {
    editor.setText(sql);
    editor.focus();
  });
  editor.setSchema(
    Object.fromEntries(
      answer.schema.named.map((table) => [table.name, table.columns.map((column) => column.name)]),
    ),
  );
  describeFollowed(answer.schema);
}

let schemaTimer = 0;
function scheduleSchemaRefresh(delayMs: number): void {
  clearTimeout(schemaTimer);
  schemaTimer = window.setTimeout(() => void refreshSchema(), delayMs);
}

/**
 * What the empty live panel says: the server follows config tables and the path-tables
 * statements have named, so one without a config follows nothing until a statement names one.
 */
function describeFollowed(schema: Schema): void {
  const followed = [...schema.named.map((table) => table.name), ...schema.pathTables];
  if (followed.length === 0) {
    eventsEmpty.textContent =
      "Nothing is followed yet: this server has no config tables, and it follows a path-table once a statement has named it. Run a statement on one (FROM './' for the whole tree) and its changes appear here.";
  } else {
    eventsEmpty.textContent = `No changes yet. Followed: ${followed.map((name) => tableReference(name)).join(", ")}.`;
  }
}

element("schema-refresh").addEventListener("click", () => void refreshSchema());

/* Live changes ---------------------------------------------------------------------------- */

const CONNECTION_TEXT: Record<ConnectionState, string> = {
  connecting: "connecting…",
  live: "live",
  reconnecting: "reconnecting…",
  closed: "no live changes (stream closed)",
};

const feed = new EventFeed({
  list: element<HTMLOListElement>("event-list"),
  note: element("events-note"),
  empty: eventsEmpty,
  tableFilter: element<HTMLSelectElement>("events-table"),
  actionFilter: element<HTMLSelectElement>("events-action"),
  onConnection(state) {
    connection.textContent = CONNECTION_TEXT[state];
    connection.dataset.state = state;
  },
  onRowsChanged() {
    // A change can add columns to a table without a schema.
    scheduleSchemaRefresh(2_000);
  },
  onReset() {
    // The rows shown follow their own live stream, which resumes by itself.
    scheduleSchemaRefresh(0);
  },
});

pauseButton.addEventListener("click", () => {
  const paused = !feed.isPaused();
  pauseButton.setAttribute("aria-pressed", String(paused));
  pauseButton.textContent = paused ? "Resume" : "Pause";
  feed.setPaused(paused);
  if (!paused && heldUpdate !== null) showLiveUpdate(heldUpdate);
});
element("events-clear").addEventListener("click", () => feed.clear());
liveToggle.checked = storedText(STORED_RERUN) === "1";
liveToggle.addEventListener("change", () => {
  store(STORED_RERUN, liveToggle.checked ? "1" : "0");
  if (liveToggle.checked) startLive();
  else stopLive();
});

/* Start ------------------------------------------------------------------------------------ */

feed.connect();
void refreshSchema();
// A link to a statement runs it at once.
if (sqlFromLink !== null) runStatement(sqlFromLink);
