import { randomBytes } from "node:crypto";
import type { PreparedStatement, RawRows } from "../engine.js";
import { DirqError, isDirqError } from "../errors.js";
import { FrameSlabs } from "./event-history.js";
import type { Commit } from "../indexer/row-changes.js";
import { type BoundArguments, bindArguments, type QueryParameters } from "../query/parameters.js";
import { answerRows, splitFirstField } from "./answer-rows.js";
import {
  FILE_ALIAS,
  filesReader,
  type IncrementalPlan,
  incrementalPlan,
  rowsOfFiles,
} from "./incremental.js";
import type { DiffThread } from "./large-diff.js";
import { LiveAnswer } from "./live-answer.js";
import { type AnswerDiff, isEmptyDiff, type RowDelta, rowDelta } from "./live-diff.js";
import type { LiveSession } from "./live-session.js";
import { threadCpuMicros } from "./thread-cpu.js";
import { type IdleAlarm, Waiters } from "./waiters.js";

/** One live query: a statement, the values of its parameters and the key its rows pair by. */
export interface LiveQueryRequest {
  sql: string;
  /** Values of the statement's parameters (an array, or an object for named ones). */
  params?: QueryParameters;
  /** Columns whose values identify a row: a row that left and one that joined with the same key are an `update`. */
  key?: readonly string[];
  /** `false`: re-run the whole statement after every commit even when it could go file by file. */
  incremental?: boolean;
  /**
   * With the watcher running, take in every change made before the first run (default
   * `false`; the SDK asks for it, so that a program that wrote a file sees it).
   */
  settle?: boolean;
}

/** How a live query runs and what it keeps. */
export interface LiveQueryLimits {
  /** Time limit of each run of the statement (ms). */
  timeoutMs: number;
  /** Diff frames kept for clients that resume, at most... */
  historyFrames: number;
  /** ...and at most this many bytes of them (the newest frame is always kept)... */
  historyBytes: number;
  /** ...and none older than this many milliseconds (see `HistoryBounds.ms`). */
  historyMs: number;
  /** Whole answers from this many bytes up are cut and diffed on the diff thread. */
  diffThreadBytes: number;
  /** What the histories of every live query of a server keep together. */
  historyBudget: HistoryBudget;
  /**
   * Whether file-by-file runs read their own CPU time (`byFileCpuMs`, for `GET /live/stats`):
   * two reads of the thread's scheduler statistics a run, which only a benchmark needs.
   */
  measureCpu?: boolean;
}

/**
 * One bound on the history every live query of a server keeps (as `/events` has one): each
 * query's own bound times a hundred statements would be gigabytes. A query over it gives up
 * its own oldest frames (it keeps its newest), so a busy one cannot keep a quiet one's away.
 */
export class HistoryBudget {
  /** Bytes of frame data kept now, all live queries together. */
  kept = 0;
  constructor(readonly chars: number) {}
}

/** A frame of a live query's stream (its `data` is JSON text, see docs/live-queries.md). */
export interface LiveFrame {
  readonly event: "snapshot" | "diff" | "error" | "ready";
  readonly id: string;
  readonly data: string;
  /** The whole SSE frame as its bytes, when kept so: a socket writes them as they are. */
  readonly encoded?: Buffer;
}

/**
 * A numbered frame kept in a live query's history: the SSE frame's bytes in one of the
 * query's blocks, named by place rather than held as a view or a string. A hundred live
 * queries keep a hundred thousand frames; as strings and views they were tens of MB of
 * long-lived heap, and V8 grows its heap with what it keeps (about twice to four times
 * over), so the server's memory grew with the histories several times over.
 */
interface KeptFrame {
  readonly n: number;
  readonly event: "snapshot" | "diff" | "error";
  /** When it was made (`Date.now()`). */
  readonly at: number;
  readonly block: ArrayBufferLike;
  /** Where the frame starts in `block`, where its data starts, and where both end. */
  readonly start: number;
  readonly dataStart: number;
  readonly end: number;
}

/** The first and largest size of a live query's history blocks (`FrameSlabs`). */
const FIRST_BLOCK_BYTES = 4096;
const BLOCK_BYTES = 64 * 1024;

/**
 * A kept frame as a stream frame: its bytes, and its data decoded only when asked for. A class,
 * so that the getter is its prototype's: one defined on each frame made cost more than the
 * rest of taking the frame.
 */
class KeptLiveFrame implements LiveFrame {
  readonly event: KeptFrame["event"];
  readonly encoded: Buffer;
  /** Where the data starts in `encoded`. */
  private readonly dataAt: number;

  constructor(
    frame: KeptFrame,
    readonly id: string,
  ) {
    this.event = frame.event;
    this.encoded = Buffer.from(frame.block, frame.start, frame.end - frame.start);
    this.dataAt = frame.dataStart - frame.start;
  }

  get data(): string {
    // The data line lies between `data: ` and the blank line that ends the frame.
    return this.encoded.toString("utf8", this.dataAt, this.encoded.length - 2);
  }
}

/**
 * A whole new answer (a re-run, or a file-by-file query's first run), cut into rows (the
 * file-by-file way's) or as the query process wrote it.
 */
type Outcome =
  { rows: string[]; columns: string[] } | { body: string | Uint8Array; columns: string[] };

/** The JSON text of a diff, rows as their texts. */
function diffJson(commit: number, diff: AnswerDiff): string {
  const placed = (list: { at: number; row: string }[]) =>
    list.map((row) => `{"at":${row.at},"row":${row.row}}`).join(",");
  const updated = diff.updated
    .map((u) => `{"from":${u.from},"at":${u.at},"old_row":${u.oldRow},"row":${u.row}}`)
    .join(",");
  return `{"commit":${commit},"removed":[${placed(diff.removed)}],"added":[${placed(diff.added)}],"updated":[${updated}]}`;
}

function keyError(column: string, columns: readonly string[]): DirqError {
  return new DirqError(
    "REQUEST_INVALID",
    `key column ${JSON.stringify(column)} is not a column of the answer (its columns: ${columns.join(", ") || "none"}): name columns the statement selects`,
  );
}

/**
 * One evaluator of a live query, shared by every subscriber to the same statement, values
 * and key. It holds the current answer (row texts in the order clients hold them) and a
 * bounded history of numbered frames. After a commit that moved the stamp of a table the
 * statement reads it evaluates again: over the rows of the changed files (`incremental.ts`)
 * when the statement allows, else the whole statement in a query process. At most one run is
 * in flight; commits meanwhile are folded into the next. A failing run is an `error` frame,
 * and the next good answer is diffed against the last good one.
 */
export class LiveQuery {
  readonly run = randomBytes(8).toString("hex");
  /** Whether the answer keeps the statement's order (else rows join at the end). */
  readonly ordered: boolean;
  private readonly current: LiveAnswer;
  private columns: string[] = [];
  /** Row texts of each file (the incremental way only). */
  private byFile = new Map<string, string[]>();
  private commit = 0;
  /** The newest commit handed to this query (its runs read at least that one). */
  private seen = 0;
  private stamp = "";
  private version = 0;
  private readonly frames: KeptFrame[] = [];
  private readonly blocks = new FrameSlabs(BLOCK_BYTES, FIRST_BLOCK_BYTES);
  private keptBytes = 0;
  /** Frames its history dropped for its bounds so far. */
  private droppedFrames = 0;
  private running = false;
  private pending = false;
  /** Whether a diff to a new answer is being made (on the diff thread, the main one awaiting it). */
  private makingDiff = false;
  /** Evaluations after the first answer (whole or file by file, failed or not). */
  private evaluations = 0;
  private byFileCpuMicros = 0;
  /** Files changed since the last run; `null`: the next run must be whole. */
  private changedFiles: Set<string> | null = new Set();
  private readonly waiters = new Waiters();
  private readonly stops: (() => void)[] = [];
  /** The names (lower case) of the tables it reads, as written and as SQLite has them. */
  private readonly tableNames: Set<string>;
  private isClosed = false;
  /** Reads the rows of some files (the incremental way), with statements prepared once. */
  private readonly readFiles: ((files: readonly string[]) => RawRows) | null;

  private constructor(
    private readonly session: LiveSession,
    private readonly request: LiveQueryRequest,
    private readonly limits: LiveQueryLimits,
    private readonly prepared: PreparedStatement,
    private readonly args: BoundArguments,
    private readonly plan: IncrementalPlan | null,
    eligible: boolean,
    diffThread: DiffThread | null,
  ) {
    this.ordered = !eligible;
    // The file-by-file way reads and diffs a few files' rows here, against rows held here.
    this.current = new LiveAnswer(
      { ordered: this.ordered, key: request.key ?? null },
      plan === null ? diffThread : null,
      limits.diffThreadBytes,
    );
    this.readFiles =
      plan === null
        ? null
        : filesReader(plan, args, (sql) => session.index.rowReader(sql, prepared));
    const written = prepared.analysis.tableNames.map((name) => name.token.value);
    this.tableNames = new Set([...written, ...prepared.tables].map((n) => n.toLowerCase()));
  }

  /** Checks and prepares the statement, runs it once, and starts following commits. */
  static async start(
    session: LiveSession,
    request: LiveQueryRequest,
    limits: LiveQueryLimits,
    diffThread: DiffThread | null = null,
  ): Promise<LiveQuery> {
    const args = bindArguments(request.sql, request.params);
    const deadline = deadlineOf(limits.timeoutMs);
    const prepared = await session.prepare(request.sql, {
      parameters: true,
      deadline,
      settle: request.settle === true,
    });
    const read = (sql: string, values?: readonly unknown[]) => session.index.readRows(sql, values);
    const plan = incrementalPlan(prepared, read, args);
    const used = request.incremental === false ? null : plan;
    const query = new LiveQuery(
      session,
      request,
      limits,
      prepared,
      args,
      used,
      plan !== null,
      diffThread,
    );
    try {
      await query.begin();
    } catch (error) {
      query.close();
      throw error;
    }
    return query;
  }

  private async begin(): Promise<void> {
    const { session, prepared } = this;
    this.stops.push(session.pinTables(prepared.tables));
    this.stops.push(session.subscribe((_, commit) => this.onCommit(commit)));
    this.columns = session.index.columnsOf(prepared);
    for (const column of this.request.key ?? []) {
      if (!this.columns.includes(column)) throw keyError(column, this.columns);
    }
    this.commit = session.commitSeq;
    this.seen = this.commit;
    this.stamp = session.tableStamp(prepared.tables);
    // Commits during the first run are taken in after it, as one more run.
    this.running = true;
    try {
      await this.next(await this.wholeAnswer(), true);
    } finally {
      this.running = false;
    }
    if (this.pending) void this.followCommits();
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Whether rows come file by file after each commit (else the whole statement re-runs). */
  get incremental(): boolean {
    return this.plan !== null;
  }

  /** How many times it evaluated again after its first answer (`GET /live/stats`). */
  get runs(): number {
    return this.evaluations;
  }

  /**
   * CPU milliseconds the main thread spent in file-by-file runs, from reading the changed files'
   * rows to the frame (`GET /live/stats`; 0 unless `measureCpu`); whole re-runs spend theirs in
   * query processes.
   */
  get byFileCpuMs(): number {
    return this.byFileCpuMicros / 1000;
  }

  /**
   * Whether a diff is being made now (`GET /live/stats`): a request can see it only while the
   * diff runs off the main thread, since one made on it ends before any request is read.
   */
  get diffing(): boolean {
    return this.makingDiff;
  }

  /** Bytes (UTF-8) of the frames' data its history keeps for clients that resume. */
  get historyChars(): number {
    return this.keptBytes;
  }

  /**
   * The memory its history holds: the blocks its frames lie in, whole (a block is freed with its
   * last frame). It walks every frame: for statistics only.
   */
  get historyHeldBytes(): number {
    let total = 0;
    for (const block of new Set(this.frames.map((frame) => frame.block))) total += block.byteLength;
    return total;
  }

  /** Frames its history dropped so far: once it drops, it holds what its bounds let it. */
  get historyDropped(): number {
    return this.droppedFrames;
  }

  /** The number of the newest frame (0 before the first diff). */
  get head(): number {
    return this.version;
  }

  /** The SSE id of frame `n`. */
  idOf(n: number): string {
    return `${this.run}-${n}`;
  }

  /** Whether a client that read up to frame `n` can be given every frame after it. */
  canResumeAfter(n: number): boolean {
    const oldest = this.frames[0]?.n ?? this.version + 1;
    return n <= this.version && n >= oldest - 1;
  }

  /** The frame after `n`; `undefined` when there is none yet or it is no longer kept. */
  frameAfter(n: number): LiveFrame | undefined {
    const oldest = this.frames[0]?.n;
    if (oldest === undefined || n + 1 < oldest) return undefined;
    const frame = this.frames[n + 1 - oldest];
    return frame && new KeptLiveFrame(frame, this.idOf(frame.n));
  }

  /** The whole current answer, as of the newest frame. */
  snapshot(): LiveFrame {
    return { event: "snapshot", id: this.idOf(this.version), data: this.snapshotJson() };
  }

  /** The `ready` frame of a client that resumes after frame `n`. */
  ready(n: number): LiveFrame {
    return { event: "ready", id: this.idOf(n), data: `{"commit":${this.commit}}` };
  }

  /** The current answer's columns and rows (row texts), in the order clients hold them. */
  get answer(): { columns: readonly string[]; rows: readonly string[]; commit: number } {
    return { columns: this.columns, rows: this.current.current, commit: this.commit };
  }

  private snapshotJson(): string {
    const key = this.request.key === undefined ? "null" : JSON.stringify(this.request.key);
    return `{"commit":${this.commit},"columns":${JSON.stringify(this.columns)},"key":${key},"ordered":${this.ordered},"incremental":${this.incremental},"rows":[${this.current.text}]}`;
  }

  /** Resolves at the next frame, when `alarm` rings (it is set now), or at close. */
  waitForFrame(alarm: IdleAlarm): Promise<void> {
    return this.isClosed ? Promise.resolve() : this.waiters.wait(alarm);
  }

  /** Stops following commits and wakes every waiting reader. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    // Its frames go with it: they leave the server's budget now.
    this.limits.historyBudget.kept -= this.keptBytes;
    for (const stop of this.stops.splice(0)) stop();
    this.current.close();
    this.wake();
  }

  /** Wakes every reader waiting for a frame (a subscription that closes re-checks). */
  wake(): void {
    this.waiters.wakeAll();
  }

  private onCommit(commit: Commit): void {
    if (this.isClosed) return;
    this.seen = Math.max(this.seen, commit.seq);
    if (this.plan !== null && this.changedFiles !== null) {
      // File by file, each commit's own files count: the stamp may already include later
      // commits, not handed over yet, whose files must still be read when they are.
      const files = this.changedFiles;
      let touched = false;
      for (const change of commit.changes) {
        if (change.table !== null && !this.reads(change.table)) continue;
        files.add(change.file_path);
        touched = true;
      }
      if (!touched) return;
    } else if (this.session.tableStamp(this.prepared.tables) === this.stamp) {
      return;
    }
    this.pending = true;
    if (!this.running) void this.followCommits();
  }

  /** Whether a row change's table (the name it was written with) is the one this reads. */
  private reads(table: string): boolean {
    const name = table.toLowerCase();
    return this.tableNames.has(name);
  }

  /** Runs until no commit is left to take in: one run at a time, commits meanwhile folded. */
  private async followCommits(): Promise<void> {
    this.running = true;
    try {
      while (this.pending && !this.isClosed) {
        this.pending = false;
        const waiting = this.evaluate();
        if (waiting !== undefined) await waiting;
      }
    } finally {
      this.running = false;
    }
  }

  /**
   * One run. A file-by-file run ends here, frame made (no promise: it runs after every change,
   * and a promise and its resumption per run cost it more than its diff); a promise while
   * the whole statement runs.
   */
  private evaluate(): Promise<void> | undefined {
    // Commits reach listeners in order, after they are made: what a run reads is at least
    // the newest one handed over (the one `/events` frames have carried so far).
    const commit = this.seen;
    this.evaluations++;
    // Taken in now, before the run reads: a commit while it runs that leaves these tables
    // alone needs no run of its own (the stamp it would compare with is this one, not the
    // last run's), and one that touches them moves the stamp again. A file-by-file query
    // follows its commits' files instead: it compares stamps only after a failed run, whose
    // stamp is cleared.
    if (this.plan === null) this.stamp = this.session.tableStamp(this.prepared.tables);
    const files = this.changedFiles;
    this.changedFiles = new Set();
    const byFile = this.plan !== null && files !== null;
    const measured = byFile && this.limits.measureCpu === true;
    const started = measured ? threadCpuMicros() : 0;
    try {
      const delta = byFile ? this.changedRows([...files]) : null;
      if (delta !== null) {
        // Rows that left and joined are taken in here, without waiting: the frame follows.
        this.moveTo(commit, this.columns, this.current.apply(delta));
        // The file-by-file way runs on this thread to its frame, so this is its own cost.
        if (measured) this.byFileCpuMicros += threadCpuMicros() - started;
        return undefined;
      }
    } catch (error) {
      this.failed(commit, error);
      return undefined;
    }
    return this.rerun(commit, measured ? started : null);
  }

  /** Runs the whole statement and moves to its answer (`started`: the CPU clock to count from). */
  private async rerun(commit: number, started: number | null): Promise<void> {
    try {
      const outcome = await this.wholeAnswer();
      if (this.isClosed) return;
      await this.take(commit, outcome);
      if (started !== null) this.byFileCpuMicros += threadCpuMicros() - started;
    } catch (error) {
      this.failed(commit, error);
    }
  }

  /** A run failed: an `error` frame, and the next run reads the whole statement again. */
  private failed(commit: number, error: unknown): void {
    if (this.isClosed) return;
    // Rows of files changed meanwhile were not taken in: the next run reads them all.
    this.changedFiles = null;
    this.stamp = "";
    this.append("error", `{"commit":${commit},"error":${JSON.stringify(messageOf(error))}}`);
  }

  /** Moves to a new answer: a diff frame (none when nothing changed), or a new snapshot. */
  private async take(commit: number, outcome: Outcome): Promise<void> {
    const columns = outcome.columns;
    this.makingDiff = true;
    let diff: AnswerDiff | null;
    try {
      diff = await this.next(outcome, columns.join("\0") !== this.columns.join("\0"));
    } finally {
      this.makingDiff = false;
    }
    if (this.isClosed) return;
    this.moveTo(commit, columns, diff);
  }

  /** Holds the answer as of `commit`; its frame: `diff`, or a snapshot when it is `null`. */
  private moveTo(commit: number, columns: string[], diff: AnswerDiff | null): void {
    this.columns = columns;
    this.commit = commit;
    if (diff === null) this.append("snapshot", this.snapshotJson());
    else if (!isEmptyDiff(diff)) this.append("diff", diffJson(commit, diff));
  }

  /** The diff to `outcome`, or `null` when it replaces the answer (`reset`) without one. */
  private next(outcome: Outcome, reset: boolean): Promise<AnswerDiff | null> | AnswerDiff | null {
    if ("body" in outcome) return this.current.whole(outcome.body, reset);
    return this.current.replace(outcome.rows, reset);
  }

  /**
   * Reads the rows of `files` again; what left and joined, and each file's rows kept. `null`
   * when the answer's columns changed (a file brought a new key to a `*`): the whole statement
   * runs then, and its answer goes out as a new snapshot.
   */
  private changedRows(files: string[]): RowDelta | null {
    const read = this.readFiles as (files: readonly string[]) => RawRows;
    const fresh = rowsOfFiles(files, read, this.columns);
    if (fresh === null) return null;
    const gone: string[] = [];
    const joined: string[] = [];
    for (const [file, rows] of fresh) {
      const delta = rowDelta(this.byFile.get(file) ?? [], rows);
      gone.push(...delta.gone);
      joined.push(...delta.joined);
      if (rows.length === 0) this.byFile.delete(file);
      else this.byFile.set(file, rows);
    }
    return { gone, joined };
  }

  /** Runs the whole statement in a query process; with the incremental way, by file too. */
  private async wholeAnswer(): Promise<Outcome & { columns: string[] }> {
    const sql = this.plan?.withFiles ?? this.prepared.sql;
    const body = await this.session.run(
      { ...this.prepared, sql },
      {
        // Without values the query process writes the answer in SQLite, the fast way.
        args: this.args.length === 0 ? undefined : this.args,
        deadline: deadlineOf(this.limits.timeoutMs),
      },
    );
    const columns = this.session.index.columnsOf(this.prepared);
    if (this.plan === null) return { body, columns };
    const texts = answerRows(body);
    const byFile = new Map<string, string[]>();
    const rows = texts.map((text) => {
      const { value, row } = splitFirstField(text, FILE_ALIAS);
      const list = byFile.get(value);
      if (list === undefined) byFile.set(value, [row]);
      else list.push(row);
      return row;
    });
    this.byFile = byFile;
    return { rows, columns };
  }

  /** Counts `bytes` more (fewer when negative) kept, here and in the server's budget. */
  private keep(bytes: number): void {
    this.keptBytes += bytes;
    this.limits.historyBudget.kept += bytes;
  }

  private append(event: KeptFrame["event"], data: string): void {
    const n = ++this.version;
    // Frames' data is JSON, where a raw line break can only be white space between tokens:
    // one data line, whatever made the text.
    const broken = data.includes("\n") || data.includes("\r");
    const line = broken ? data.replace(/\r\n?|\n/g, " ") : data;
    const head = `id: ${this.idOf(n)}\nevent: ${event}\ndata: `;
    const { block, start, textStart: dataStart, end } = this.blocks.place(head, line, "\n\n");
    const at = Date.now();
    const frame: KeptFrame = { n, event, at, block, start, dataStart, end };
    this.frames.push(frame);
    this.keep(keptBytesOf(frame));
    this.evict(at - this.limits.historyMs);
    this.wake();
  }

  /** Drops its oldest frames past its bounds, and those made before `since` (the newest stays). */
  private evict(since: number): void {
    const { historyFrames, historyBytes, historyBudget: budget } = this.limits;
    while (this.frames.length > 1) {
      const over =
        this.frames.length > historyFrames ||
        this.keptBytes > historyBytes ||
        budget.kept > budget.chars;
      if (!over && (this.frames[0] as KeptFrame).at >= since) break;
      this.keep(-keptBytesOf(this.frames.shift() as KeptFrame));
      this.droppedFrames++;
    }
  }
}

/** The bytes of a kept frame's data (what the histories' bounds count). */
function keptBytesOf(frame: KeptFrame): number {
  return frame.end - 2 - frame.dataStart;
}

/** When a run started now must have answered; none without a limit. */
function deadlineOf(timeoutMs: number): number | undefined {
  return Number.isFinite(timeoutMs) ? Date.now() + timeoutMs : undefined;
}

function messageOf(error: unknown): string {
  if (isDirqError(error)) return error.message;
  return error instanceof Error ? error.message : String(error);
}
