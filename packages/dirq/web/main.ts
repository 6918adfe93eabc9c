import "./styles.css";
import { type QueryFailure, type QueryResult, runQuery } from "./api.js";
import { createEditor } from "./editor.js";
import { type ConnectionState, EventFeed } from "./event-feed.js";
import { count, milliseconds } from "./format.js";
import { ResultTable } from "./result-table.js";
import { loadSchema, renderSchema } from "./schema.js";

const STORED_SQL = "dirq-console:sql";
const STORED_RERUN = "dirq-console:auto-rerun";
const DEFAULT_SQL = "SELECT path, size, mtime FROM './' ORDER BY mtime DESC LIMIT 100";
/** Row changes come in bursts: one re-run after the burst settles. */
const RERUN_DELAY_MS = 250;

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`the page lacks #${id}`);
  return found as T;
}

const runButton = element<HTMLButtonElement>("run");
const resultStatus = element("result-status");
const queryError = element("query-error");
const degradedBanner = element("degraded");
const connection = element("connection");
const schemaBody = element("schema-body");
const pauseButton = element<HTMLButtonElement>("events-pause");
const autoRerun = element<HTMLInputElement>("auto-rerun");
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

const editor = createEditor(
  element("editor"),
  storedText(STORED_SQL) ?? DEFAULT_SQL,
  () => void run(editor.text()),
  (text) => store(STORED_SQL, text),
);

/* Running statements --------------------------------------------------------------------- */

let lastSql: string | null = null;
let inFlight: AbortController | null = null;
let runs = 0;

function showDegraded(message: string | null): void {
  degradedBanner.hidden = message === null;
  degradedBanner.textContent = message === null ? "" : `The server is degraded: ${message}`;
}

function showFailure(failure: QueryFailure): void {
  if (failure.status === 503) showDegraded(failure.message);
  queryError.hidden = false;
  queryError.replaceChildren();
  const status = document.createElement("strong");
  status.textContent = failure.status === 0 ? "Error" : `Error (HTTP ${failure.status})`;
  const message = document.createElement("span");
  message.className = "message";
  message.textContent = failure.message;
  queryError.append(status, " ", message);
  resultStatus.textContent = `failed after ${milliseconds(failure.elapsedMs)}`;
}

function showResult(result: QueryResult, keepScroll: boolean): void {
  showDegraded(null);
  queryError.hidden = true;
  const renderStart = performance.now();
  table.show(result.columns, result.rows, keepScroll);
  const renderMs = performance.now() - renderStart;
  const rows = result.rows.length;
  resultStatus.textContent = `${count(rows)} row${rows === 1 ? "" : "s"} · ${milliseconds(result.elapsedMs)}`;
  resultStatus.title = `query and transfer ${milliseconds(result.elapsedMs)}, rendering ${milliseconds(renderMs)}`;
}

/** Runs `sql`; a newer run cancels an older one still waiting for its answer. */
async function run(sql: string, options: { rerun?: boolean } = {}): Promise<void> {
  if (sql.trim() === "") {
    showFailure({ ok: false, status: 0, message: "Type a statement first.", elapsedMs: 0 });
    return;
  }
  inFlight?.abort();
  const controller = new AbortController();
  inFlight = controller;
  lastSql = sql;
  const id = ++runs;
  performance.mark(`dirq:run-start:${id}`);
  resultStatus.textContent = options.rerun ? "re-running…" : "running…";
  runButton.setAttribute("aria-busy", "true");
  const answer = await runQuery(sql, controller.signal);
  if (controller.signal.aborted) {
    performance.clearMarks(`dirq:run-start:${id}`);
    return;
  }
  inFlight = null;
  runButton.removeAttribute("aria-busy");
  if (answer.ok) showResult(answer, options.rerun === true);
  else showFailure(answer);
  // For the benchmark and curious users: from the keypress to the rows on screen.
  performance.clearMeasures("dirq:run");
  performance.measure("dirq:run", `dirq:run-start:${id}`);
  performance.clearMarks(`dirq:run-start:${id}`);
  document.body.dataset.runs = String(id);
}

runButton.addEventListener("click", () => void run(editor.text()));
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
}

element("schema-refresh").addEventListener("click", () => void refreshSchema());

/* Live changes ---------------------------------------------------------------------------- */

const CONNECTION_TEXT: Record<ConnectionState, string> = {
  connecting: "connecting…",
  live: "live",
  reconnecting: "reconnecting…",
  closed: "no live changes (stream closed)",
};

let rerunTimer = 0;
let schemaTimer = 0;
const feed = new EventFeed({
  list: element<HTMLOListElement>("event-list"),
  note: element("events-note"),
  onConnection(state) {
    connection.textContent = CONNECTION_TEXT[state];
    connection.dataset.state = state;
  },
  onRowsChanged() {
    if (autoRerun.checked && lastSql !== null) {
      clearTimeout(rerunTimer);
      const sql = lastSql;
      rerunTimer = window.setTimeout(() => void run(sql, { rerun: true }), RERUN_DELAY_MS);
    }
    // A change can add columns to a table without a schema.
    clearTimeout(schemaTimer);
    schemaTimer = window.setTimeout(() => void refreshSchema(), 2_000);
  },
});

pauseButton.addEventListener("click", () => {
  const paused = !feed.isPaused();
  pauseButton.setAttribute("aria-pressed", String(paused));
  pauseButton.textContent = paused ? "Resume" : "Pause";
  feed.setPaused(paused);
});
element("events-clear").addEventListener("click", () => feed.clear());
autoRerun.checked = storedText(STORED_RERUN) === "1";
autoRerun.addEventListener("change", () => store(STORED_RERUN, autoRerun.checked ? "1" : "0"));

/* Start ------------------------------------------------------------------------------------ */

feed.connect();
void refreshSchema();
