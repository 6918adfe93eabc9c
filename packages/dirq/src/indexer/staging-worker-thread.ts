import { parentPort, workerData } from "node:worker_threads";
import type { Extractor } from "../parse/extractor.js";
import { formatExtractor } from "../parse/format-extractor.js";
import { shapedExtractor } from "../parse/row-shape.js";
import { openSqlite } from "./database.js";
import { failureOf } from "./fill-worker.js";
import type { RowChange } from "./row-changes.js";
import type { ParsedTableSpec } from "./parsed-tables.js";
import {
  clearRows,
  dropStage,
  fillOneFile,
  type LeavingRows,
  leavingRows,
  stageFile,
  swapStaged,
} from "./staged-refresh.js";
import {
  changeSlices,
  type StagedTable,
  type StagingAnswer,
  type StagingRequest,
  type StagingWorkerData,
} from "./staging-worker.js";

/**
 * The thread of `StagingWorker`: its own connection to the index file, the staging tables in
 * that connection's temporary schema, one request at a time in the order they come.
 */
const { databasePath, synchronous, changes: changesPort } = workerData as StagingWorkerData;

const db = openSqlite(databasePath);
db.pragma(`synchronous = ${Number(synchronous)}`);

/** The columns each staging table holds, as its file brought them. */
const staged = new Map<string, string[]>();
/** The rows of a file leaving a table, read before the writer is taken, by stage name. */
const leaving = new Map<string, LeavingRows>();

function post(answer: StagingAnswer): void {
  parentPort?.postMessage(answer);
}

function extractorOf(table: StagedTable): Extractor {
  const reader = formatExtractor(table.format, table.each);
  return table.shape === null ? reader : shapedExtractor(reader, table.shape);
}

function specOf(table: StagedTable): ParsedTableSpec {
  return {
    name: table.name,
    label: table.label,
    selection: null,
    extractor: extractorOf(table),
    schema: table.schema,
    ddl: null,
    origin: table.origin,
  };
}

/** Fills one file of a table build into the table, in one transaction (see `fillOneFile`). */
function fill(request: Extract<StagingRequest, { kind: "fill" }>): void {
  const filled = db
    .transaction(() => fillOneFile(db, specOf(request.table), request.path, request.root))
    .immediate();
  post({ id: request.id, kind: "filled", ...filled });
}

/**
 * Sends `changes` back a slice at a time on the changes port, before the request's answer: the
 * receiving thread takes each slice in one short task.
 */
function postChanges(id: number, changes: readonly RowChange[]): void {
  for (const slice of changeSlices(id, changes)) changesPort.postMessage(slice);
}

function handle(request: StagingRequest): void {
  if (request.kind === "fill") return fill(request);
  if (request.kind === "leaving") {
    const spec = specOf(request.table);
    leaving.set(request.stage, db.transaction(() => leavingRows(db, spec, request.path))());
    post({ id: request.id, kind: "staged", reason: null });
    return;
  }
  if (request.kind === "clear") {
    const [spec, read] = [specOf(request.table), leaving.get(request.stage)];
    leaving.delete(request.stage);
    const clear = () => clearRows(db, spec, request.path, read);
    postChanges(request.id, db.transaction(clear).immediate());
    post({ id: request.id, kind: "done" });
    return;
  }
  if (request.kind === "checkpoint") {
    db.pragma("wal_checkpoint(PASSIVE)");
    post({ id: request.id, kind: "done" });
    return;
  }
  if (request.kind === "exec") {
    db.transaction(() => {
      for (const statement of request.statements) db.exec(statement);
    })();
    post({ id: request.id, kind: "done" });
    return;
  }
  if (request.kind === "stage") {
    const read = stageFile(db, specOf(request.table), request.path, request.root, request.stage);
    if (typeof read === "string") {
      dropStage(db, request.stage);
      post({ id: request.id, kind: "staged", reason: read });
      return;
    }
    staged.set(request.stage, read);
    post({ id: request.id, kind: "staged", reason: null });
    return;
  }
  if (request.kind === "swap") {
    const columns = staged.get(request.stage);
    if (columns === undefined) throw new Error(`no staging table ${request.stage}`);
    const spec = specOf(request.table);
    const changes = db
      .transaction(() => swapStaged(db, spec, request.path, request.stage, columns))
      .immediate();
    postChanges(request.id, changes);
  }
  staged.delete(request.stage);
  leaving.delete(request.stage);
  dropStage(db, request.stage);
  post({ id: request.id, kind: "done" });
}

parentPort?.on("message", (request: StagingRequest) => {
  try {
    handle(request);
  } catch (caught) {
    if ("stage" in request) {
      staged.delete(request.stage);
      leaving.delete(request.stage);
      try {
        dropStage(db, request.stage);
      } catch {
        // The connection's own failure: the request's error says it.
      }
    }
    post({ id: request.id, kind: "failed", error: failureOf(caught) });
  }
});
