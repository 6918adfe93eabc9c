import { objectsAsArrays, parseJson, type Row } from "./api.js";

/** What a live answer tells the page: its rows now, after the snapshot or a diff. */
export interface LiveUpdate {
  columns: string[];
  rows: Row[];
  /** The index's commit the rows are (at least) as of. */
  commit: number;
  /** `+1 −0 ~2`-style counts of the last diff; `null` for a snapshot. */
  change: { added: number; removed: number; updated: number } | null;
}

export interface LiveAnswerHandlers {
  onUpdate(update: LiveUpdate): void;
  /** A later run of the statement failed (the rows stay the last good answer). */
  onError(message: string): void;
  /** The stream is closed for good: the server refused it or is gone. */
  onClosed(): void;
}

/*
 * Frames as `objectsAsArrays` reads them: every object but the outermost becomes the array of
 * its values in the order they are written (docs/live-queries.md gives that order), so a row
 * keeps repeated column names and exact digits, as the page's `POST /query` answers do.
 */
type PlacedRow = [at: number, row: Row];
type UpdatedRow = [from: number, at: number, oldRow: Row, row: Row];
interface SnapshotFrame {
  commit: number;
  columns: string[];
  rows: Row[];
}
interface DiffFrame {
  commit: number;
  removed: PlacedRow[];
  added: PlacedRow[];
  updated: UpdatedRow[];
}

function frameOf<T>(message: Event): T {
  return parseJson(objectsAsArrays((message as MessageEvent<string>).data)) as T;
}

/**
 * One statement followed with `GET /live`: the server's evaluator sends the answer, then a
 * diff per change, and this applies them (docs/live-queries.md, "Applying a diff"); the page
 * never re-runs the statement or compares rows. `EventSource` resumes by itself after a drop
 * (the server replays the missed diffs, or sends a new snapshot).
 */
export class LiveAnswer {
  private readonly source: EventSource;
  private columns: string[] = [];
  private rows: Row[] = [];

  constructor(
    readonly sql: string,
    private readonly handlers: LiveAnswerHandlers,
  ) {
    this.source = new EventSource(`/live?sql=${encodeURIComponent(sql)}`);
    this.source.addEventListener("snapshot", (message) => this.snapshot(frameOf(message)));
    this.source.addEventListener("diff", (message) => this.diff(frameOf(message)));
    this.source.addEventListener("error", (message) => {
      if (message instanceof MessageEvent) {
        const data = parseJson(message.data as string) as { error: string };
        handlers.onError(data.error);
      } else if (this.source.readyState === EventSource.CLOSED) {
        handlers.onClosed();
      }
    });
  }

  private snapshot(frame: SnapshotFrame): void {
    this.columns = frame.columns;
    this.rows = frame.rows;
    // A copy each time: the table holds what it shows while this goes on changing.
    this.handlers.onUpdate({
      columns: this.columns,
      rows: [...this.rows],
      commit: frame.commit,
      change: null,
    });
  }

  private diff(frame: DiffFrame): void {
    const out = [...frame.removed.map(([at]) => at), ...frame.updated.map(([from]) => from)];
    for (const at of out.sort((a, b) => b - a)) this.rows.splice(at, 1);
    const moved = frame.updated.map(([, at, , row]): PlacedRow => [at, row]);
    const put: PlacedRow[] = [...frame.added, ...moved];
    put.sort((a, b) => a[0] - b[0]);
    for (const [at, row] of put) this.rows.splice(at, 0, row);
    const change = {
      added: frame.added.length,
      removed: frame.removed.length,
      updated: frame.updated.length,
    };
    this.handlers.onUpdate({
      columns: this.columns,
      rows: [...this.rows],
      commit: frame.commit,
      change,
    });
  }

  close(): void {
    this.source.close();
  }
}
