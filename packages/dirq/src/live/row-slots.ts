import type { AnswerDiff, PlacedRow, RowDelta, RowUpdate } from "./live-diff.js";

/** A row that left: its place in the answer before, and its slot. */
interface LeavingRow extends PlacedRow {
  slot: number;
}

/**
 * The slots are packed again once the vacant ones outnumber both this and the rows held: a
 * pack costs the answer, so it comes only after as many runs took rows out.
 */
const VACANT_SLOTS_KEPT = 1024;

/**
 * An answer without an order of its own (rows that joined go at the end), held so that taking
 * in a few rows that left and joined costs those rows, not the answer: the file-by-file way of
 * a live query changes a few rows of answers of any size. Each row sits in a slot; slots are
 * only added at the end, so their order is the order clients hold the rows in. A Fenwick tree
 * over the slots counts the rows before a slot (a row's place), and each row text knows its
 * slots. The diff it makes is the one `unorderedDiff` and `pairByKey` make of the same answer
 * (a unit test compares them): the rows that left from their last places, rows that joined at
 * the end in the order of their text, an update in the place of the row it replaces.
 */
export class RowSlots {
  /** The row in each slot; `undefined`: a slot whose row left. */
  private texts: (string | undefined)[] = [];
  /** Fenwick tree (1-based) over the slots: 1 for a slot that holds a row. */
  private tree = new Int32Array(1);
  /** The slots of each row text, lowest first (a number for a text in one slot). */
  private slotsOf = new Map<string, number | number[]>();
  private held = 0;

  constructor(rows: readonly string[] = []) {
    this.texts = [...rows];
    this.rebuild(rows.length);
  }

  /** How many rows it holds. */
  get length(): number {
    return this.held;
  }

  /** The rows, in the order clients hold them (a new array). */
  rows(): string[] {
    const rows: string[] = [];
    for (const text of this.texts) if (text !== undefined) rows.push(text);
    return rows;
  }

  /**
   * Takes in the rows that left and joined (multisets, each as often as it left or joined;
   * every row that left is held); `keyOf`: pair a row that left with one that joined under
   * the same key into an update. Returns the diff from the rows held before.
   */
  take(delta: RowDelta, keyOf: ((row: string) => string) | null): AnswerDiff {
    this.makeRoom(delta.joined.length);
    const leaving = this.leaving(delta.gone);
    const added = [...delta.joined].sort();
    const pairing = keyOf !== null && leaving.length > 0 && added.length > 0;
    const { removed, updated, unpaired } = pairing
      ? this.pair(leaving, added, keyOf)
      : { removed: leaving, updated: [], unpaired: added };
    for (const row of removed) this.vacate(row.slot);
    // An update keeps its slot: its place is counted once the rows that left are gone.
    for (const { slot, update } of updated) update.at = this.before(slot);
    const placed = unpaired.map((row, n) => ({ at: this.held + n, row }));
    for (const row of unpaired) this.append(row);
    return {
      removed: removed.map(({ at, row }) => ({ at, row })),
      added: placed,
      updated: updated.map(({ update }) => update),
    };
  }

  /** The slots of the rows that left (the last ones of each text), lowest first, placed. */
  private leaving(gone: readonly string[]): LeavingRow[] {
    const rows: LeavingRow[] = [];
    for (const row of gone) {
      const slot = this.takeHighest(row);
      if (slot !== undefined) rows.push({ slot, at: 0, row });
    }
    rows.sort((a, b) => a.slot - b.slot);
    for (const row of rows) row.at = this.before(row.slot);
    return rows;
  }

  /**
   * Pairs each row that left (lowest slot first) with the first row that joined under its key
   * not yet paired: that row takes its slot (its `at` is set once the unpaired rows left).
   */
  private pair(
    leaving: LeavingRow[],
    added: string[],
    keyOf: (row: string) => string,
  ): { removed: LeavingRow[]; updated: { slot: number; update: RowUpdate }[]; unpaired: string[] } {
    const byKey = new Map<string, number[]>();
    added.forEach((row, n) => {
      const key = keyOf(row);
      const list = byKey.get(key);
      if (list === undefined) byKey.set(key, [n]);
      else list.push(n);
    });
    const paired = new Set<number>();
    const removed: LeavingRow[] = [];
    const updated: { slot: number; update: RowUpdate }[] = [];
    for (const gone of leaving) {
      const match = byKey.get(keyOf(gone.row))?.shift();
      if (match === undefined) {
        removed.push(gone);
        continue;
      }
      paired.add(match);
      const row = added[match] as string;
      this.texts[gone.slot] = row;
      this.addSlot(row, gone.slot);
      updated.push({ slot: gone.slot, update: { from: gone.at, at: 0, oldRow: gone.row, row } });
    }
    return { removed, updated, unpaired: added.filter((_, n) => !paired.has(n)) };
  }

  /** Rows held in the slots before `slot`. */
  private before(slot: number): number {
    let count = 0;
    for (let i = slot; i > 0; i -= i & -i) count += this.tree[i] as number;
    return count;
  }

  private count(slot: number, change: number): void {
    for (let i = slot + 1; i < this.tree.length; i += i & -i) {
      this.tree[i] = (this.tree[i] as number) + change;
    }
  }

  private vacate(slot: number): void {
    this.texts[slot] = undefined;
    this.count(slot, -1);
    this.held--;
  }

  private append(row: string): void {
    const slot = this.texts.length;
    this.texts.push(row);
    this.addSlot(row, slot);
    this.count(slot, 1);
    this.held++;
  }

  /** Takes the highest slot of `row` out of its list; `undefined` when no slot holds it. */
  private takeHighest(row: string): number | undefined {
    const slots = this.slotsOf.get(row);
    if (typeof slots === "number" || slots === undefined) {
      this.slotsOf.delete(row);
      return slots;
    }
    const slot = slots.pop();
    if (slots.length === 1) this.slotsOf.set(row, slots[0] as number);
    return slot;
  }

  private addSlot(row: string, slot: number): void {
    const slots = this.slotsOf.get(row);
    if (slots === undefined) {
      this.slotsOf.set(row, slot);
      return;
    }
    const list = typeof slots === "number" ? [slots] : slots;
    let at = list.length;
    while (at > 0 && (list[at - 1] as number) > slot) at--;
    list.splice(at, 0, slot);
    if (typeof slots === "number") this.slotsOf.set(row, list);
  }

  /** Packs the slots when most are vacant, and grows the tree for `joining` more rows. */
  private makeRoom(joining: number): void {
    const vacant = this.texts.length - this.held;
    if (vacant > VACANT_SLOTS_KEPT && vacant > this.held) {
      this.texts = this.rows();
      this.rebuild(this.texts.length + joining);
    } else if (this.texts.length + joining >= this.tree.length) {
      this.rebuild(this.texts.length + joining);
    }
  }

  /** The tree and the slots of each text again, from `texts`, with room for `slots` slots. */
  private rebuild(slots: number): void {
    const tree = new Int32Array(Math.max(64, 2 * slots) + 1);
    const slotsOf = new Map<string, number | number[]>();
    this.slotsOf = slotsOf;
    this.held = 0;
    this.texts.forEach((text, slot) => {
      if (text === undefined) return;
      tree[slot + 1] = 1;
      this.held++;
      this.addSlot(text, slot);
    });
    for (let i = 1; i < tree.length; i++) {
      const parent = i + (i & -i);
      if (parent < tree.length) tree[parent] = (tree[parent] as number) + (tree[i] as number);
    }
    this.tree = tree;
  }
}
