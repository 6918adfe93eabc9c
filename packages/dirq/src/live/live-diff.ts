/**
 * Diffs of a live query's answer. An answer is a list of rows, each its JSON object text (as
 * `POST /query` writes it); two rows are the same row when their texts are equal. A diff says
 * which rows left (`removed`, by their place in the previous answer), which joined (`added`,
 * by their place in the new one) and, with a key, which changed in place (`updated`: both).
 * Every client applies it the same way (`applyDiff`): take out the rows at `removed[].at` and
 * `updated[].from`, then put `added` and `updated` rows in at their `at`, lowest first.
 */

/** A row and its place: in the previous answer for a removed row, in the new one else. */
export interface PlacedRow {
  at: number;
  row: string;
}

/** A row whose key stayed while its other values changed: where it was, where it is now. */
export interface RowUpdate {
  from: number;
  at: number;
  oldRow: string;
  row: string;
}

export interface AnswerDiff {
  removed: PlacedRow[];
  added: PlacedRow[];
  updated: RowUpdate[];
}

/** The rows that left and joined, as multisets (each as often as it left or joined). */
export interface RowDelta {
  gone: string[];
  joined: string[];
}

export function isEmptyDiff(diff: AnswerDiff): boolean {
  return diff.removed.length === 0 && diff.added.length === 0 && diff.updated.length === 0;
}

function counts(rows: readonly string[]): Map<string, number> {
  const counted = new Map<string, number>();
  for (const row of rows) counted.set(row, (counted.get(row) ?? 0) + 1);
  return counted;
}

/** `next` minus `old` and `old` minus `next`, as multisets. */
export function rowDelta(old: readonly string[], next: readonly string[]): RowDelta {
  const left = counts(old);
  const joined: string[] = [];
  for (const row of next) {
    const n = left.get(row) ?? 0;
    if (n > 0) left.set(row, n - 1);
    else joined.push(row);
  }
  const gone: string[] = [];
  for (const [row, n] of left) for (let i = 0; i < n; i++) gone.push(row);
  return { gone, joined };
}

/**
 * The diff of an answer without an order of its own (no ORDER BY): the rows `delta` says left
 * are taken from their last places in `old`, and the rows that joined go at the end, sorted
 * by their text. It depends on nothing but `old` and the multisets, so a re-run of the whole
 * statement and a re-read of some files' rows give the same diff.
 */
export function unorderedDiff(old: readonly string[], delta: RowDelta): AnswerDiff {
  const wanted = counts(delta.gone);
  let left = delta.gone.length;
  const removed: PlacedRow[] = [];
  for (let i = old.length - 1; i >= 0 && left > 0; i--) {
    const row = old[i] as string;
    const n = wanted.get(row) ?? 0;
    if (n === 0) continue;
    wanted.set(row, n - 1);
    left--;
    removed.push({ at: i, row });
  }
  removed.reverse();
  const kept = old.length - removed.length;
  const added = [...delta.joined].sort().map((row, i) => ({ at: kept + i, row }));
  return { removed, added, updated: [] };
}

/** Indexes into `sequence` of one longest strictly increasing subsequence. */
function longestIncreasing(sequence: readonly number[]): Set<number> {
  const tails: number[] = [];
  const previous = new Array<number>(sequence.length).fill(-1);
  for (let i = 0; i < sequence.length; i++) {
    const value = sequence[i] as number;
    let low = 0;
    let high = tails.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if ((sequence[tails[middle] as number] as number) < value) low = middle + 1;
      else high = middle;
    }
    if (low > 0) previous[i] = tails[low - 1] as number;
    tails[low] = i;
  }
  const chosen = new Set<number>();
  for (let i = tails.length === 0 ? -1 : (tails.at(-1) as number); i !== -1; i = previous[i]!) {
    chosen.add(i);
  }
  return chosen;
}

/**
 * The diff of an ordered answer: applied to `old` it gives `next` exactly, order included.
 * Rows equal in both are kept when they stay in the same order relative to each other (the
 * most of them that can: a longest increasing run); a row that moved among equals of its sort
 * key leaves and joins again.
 */
export function orderedDiff(old: readonly string[], next: readonly string[]): AnswerDiff {
  let start = 0;
  while (start < old.length && start < next.length && old[start] === next[start]) start++;
  let endOld = old.length;
  let endNext = next.length;
  while (endOld > start && endNext > start && old[endOld - 1] === next[endNext - 1]) {
    endOld--;
    endNext--;
  }
  const places = new Map<string, number[]>();
  for (let i = endOld - 1; i >= start; i--) {
    const row = old[i] as string;
    const list = places.get(row);
    if (list === undefined) places.set(row, [i]);
    else list.push(i);
  }
  const pairs: [number, number][] = [];
  for (let j = start; j < endNext; j++) {
    const i = places.get(next[j] as string)?.pop();
    if (i !== undefined) pairs.push([i, j]);
  }
  const kept = longestIncreasing(pairs.map(([i]) => i));
  const keptOld = new Set<number>();
  const keptNext = new Set<number>();
  pairs.forEach(([i, j], n) => {
    if (!kept.has(n)) return;
    keptOld.add(i);
    keptNext.add(j);
  });
  const removed: PlacedRow[] = [];
  for (let i = start; i < endOld; i++) {
    if (!keptOld.has(i)) removed.push({ at: i, row: old[i] as string });
  }
  const added: PlacedRow[] = [];
  for (let j = start; j < endNext; j++) {
    if (!keptNext.has(j)) added.push({ at: j, row: next[j] as string });
  }
  return { removed, added, updated: [] };
}

/**
 * Pairs a removed and an added row with the same key (the first unpaired added row for each
 * removed one, in order) into an update. In an answer without an order (`inPlace`) an update
 * keeps the place of the row it replaces, and the added rows still go at the end.
 */
export function pairByKey(
  diff: AnswerDiff,
  keyOf: (row: string) => string,
  inPlace: boolean,
  oldLength: number,
): AnswerDiff {
  if (diff.removed.length === 0 || diff.added.length === 0) return diff;
  const byKey = new Map<string, PlacedRow[]>();
  for (const row of diff.added) {
    const key = keyOf(row.row);
    const list = byKey.get(key);
    if (list === undefined) byKey.set(key, [row]);
    else list.push(row);
  }
  const paired = new Set<PlacedRow>();
  const removed: PlacedRow[] = [];
  const updated: RowUpdate[] = [];
  for (const gone of diff.removed) {
    const match = byKey.get(keyOf(gone.row))?.shift();
    if (match === undefined) {
      removed.push(gone);
      continue;
    }
    paired.add(match);
    updated.push({ from: gone.at, at: match.at, oldRow: gone.row, row: match.row });
  }
  const added = diff.added.filter((row) => !paired.has(row));
  if (!inPlace) return { removed, added, updated };
  return placeInOrder(removed, added, updated, oldLength);
}

/** Places for an answer without an order: kept and updated rows where they were, then new ones. */
function placeInOrder(
  removed: PlacedRow[],
  added: PlacedRow[],
  updated: RowUpdate[],
  oldLength: number,
): AnswerDiff {
  const gone = new Set(removed.map((row) => row.at));
  const updateAt = new Map(updated.map((update) => [update.from, update]));
  let place = 0;
  for (let i = 0; i < oldLength; i++) {
    if (gone.has(i)) continue;
    const update = updateAt.get(i);
    if (update !== undefined) update.at = place;
    place++;
  }
  const placed = added.map((row, n) => ({ at: place + n, row: row.row }));
  return { removed, added: placed, updated };
}

/** A diff's places for a client: rows to take out (highest first) and to put in (lowest first). */
export function diffSteps(diff: AnswerDiff): {
  out: number[];
  in: { at: number; row: string }[];
} {
  const out = [...diff.removed.map((row) => row.at), ...diff.updated.map((u) => u.from)];
  const put = [...diff.added, ...diff.updated.map((u) => ({ at: u.at, row: u.row }))];
  return { out: out.sort((a, b) => b - a), in: put.sort((a, b) => a.at - b.at) };
}

/**
 * The answer a diff makes of the one it was made against (a new array; `wrap` turns a row
 * text into T). Linear in the answer's length however many rows change.
 */
export function applyDiff<T>(rows: readonly T[], diff: AnswerDiff, wrap: (row: string) => T): T[] {
  const steps = diffSteps(diff);
  const out = new Set(steps.out);
  const result: T[] = [];
  let next = 0;
  // The rows put in whose place is the next one to fill.
  const putDue = (): void => {
    for (let put = steps.in[next]; put !== undefined && put.at === result.length;) {
      result.push(wrap(put.row));
      put = steps.in[++next];
    }
  };
  rows.forEach((row, i) => {
    if (out.has(i)) return;
    putDue();
    result.push(row);
  });
  putDue();
  for (const put of steps.in.slice(next)) result.push(wrap(put.row));
  return result;
}

/** How a live query's answers are diffed: in the statement's order or not, paired by a key or not. */
export interface DiffShape {
  ordered: boolean;
  /** Columns whose values identify a row; `null`: rows are not paired. */
  key: readonly string[] | null;
}

/**
 * What a new answer (its rows, or the rows that left and joined) makes of `old`: the diff, and
 * the rows clients hold after it (in the statement's order, or `old`'s order with the new rows
 * at the end). The one function both the main thread and the diff thread run, so a frame is
 * the same whichever made it.
 */
export function diffAnswers(
  old: readonly string[],
  next: { rows: string[] } | { delta: RowDelta },
  shape: DiffShape,
): { diff: AnswerDiff; rows: readonly string[] } {
  const made = shape.ordered
    ? orderedDiff(old, (next as { rows: string[] }).rows)
    : unorderedDiff(old, "delta" in next ? next.delta : rowDelta(old, next.rows));
  const key = shape.key;
  const diff =
    key === null || key.length === 0
      ? made
      : pairByKey(made, (row) => keyOf(row, key), !shape.ordered, old.length);
  if (isEmptyDiff(diff)) return { diff, rows: old };
  const rows = "rows" in next && shape.ordered ? next.rows : applyDiff(old, diff, String);
  return { diff, rows };
}

/** A row's key: the JSON of its values in the key's columns. */
export function keyOf(row: string, key: readonly string[]): string {
  const values = JSON.parse(row) as Record<string, unknown>;
  return JSON.stringify(key.map((column) => values[column]));
}
