import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { after, before, test } from "node:test";
import { BatchStatter, STAT_FIELDS, statPaths } from "../../src/scan/file-stats.js";
import { PathBatch } from "../../src/scan/path-batch.js";
import { StatHelper } from "../../src/scan/stat-helper.js";

// The helper thread stats a share of the batches once it is up: whichever thread stats a
// batch, the numbers and their order are those of stat'ing on the calling thread.

const BATCH = 64;
let root = "";
const paths: string[] = [];
const rawPaths = new Map<string, Buffer>();

before(() => {
  root = mkdtempSync(join(tmpdir(), "dirq-statter-"));
  for (let d = 0; d < 10; d++) {
    mkdirSync(join(root, `d${d}`));
    for (let f = 0; f < 100; f++) {
      writeFileSync(join(root, `d${d}`, `f${f}`), "x".repeat(d * 100 + f));
      paths.push(`d${d}/f${f}`);
    }
  }
  symlinkSync("d1/f1", join(root, "link"));
  paths.push("link", "gone", "d2");
  // A name that is not valid UTF-8 is stat'ed through its raw bytes.
  const raw = Buffer.from(`${root}/caf\xe9`, "latin1");
  writeFileSync(raw, "raw bytes");
  paths.push("caf\uFFFD");
  rawPaths.set("caf\uFFFD", raw);
});
after(() => rmSync(root, { recursive: true, force: true }));

function batches(): PathBatch[] {
  const out: PathBatch[] = [];
  for (let at = 0; at < paths.length; at += BATCH) {
    out.push(PathBatch.of(paths.slice(at, at + BATCH), rawPaths));
  }
  return out;
}

async function statAll(statter: BatchStatter): Promise<number[]> {
  const numbers: number[] = [];
  const take = () => {
    for (const batch of statter.takeReady()) numbers.push(...(batch.stats as Float64Array));
  };
  for (const batch of batches()) {
    statter.submit(batch);
    take();
  }
  while (statter.pending > 0) {
    statter.helpOrWait(10);
    take();
    await sleep(0);
  }
  return numbers;
}

async function readyHelper(): Promise<StatHelper> {
  const helper = new StatHelper(root);
  helper.start();
  while (!helper.ready) await sleep(5);
  return helper;
}

test("the helper's stats equal the calling thread's, in order", async () => {
  const expected = [...statPaths(root, paths, rawPaths)];
  assert.equal(expected.length, paths.length * STAT_FIELDS);
  assert.equal(expected[(paths.length - 1) * STAT_FIELDS], "raw bytes".length);
  assert.ok(Number.isNaN(expected[paths.indexOf("gone") * STAT_FIELDS]));
  assert.ok(Number.isNaN(expected[paths.indexOf("d2") * STAT_FIELDS]));
  const helper = await readyHelper();
  try {
    const actual = await statAll(new BatchStatter(root, helper));
    assert.ok(helper.answered > 0, "the helper stat'ed some batches");
    assert.deepEqual(actual, expected);
  } finally {
    await helper.close();
  }
});

test("batches go on on the calling thread when the helper is gone", async () => {
  const expected = [...statPaths(root, paths, rawPaths)];
  const helper = await readyHelper();
  const statter = new BatchStatter(root, helper);
  const [first, ...rest] = batches();
  statter.submit(first as PathBatch);
  await helper.close();
  for (const batch of rest) statter.submit(batch);
  const numbers: number[] = [];
  while (statter.pending > 0) {
    statter.helpOrWait(10);
    for (const batch of statter.takeReady()) numbers.push(...(batch.stats as Float64Array));
    await sleep(0);
  }
  assert.deepEqual(numbers, expected);
});

test("a batch is stat'ed by exactly one thread when the caller takes batches back", async () => {
  const helper = await readyHelper();
  try {
    // Every request is claimed back at once: the caller wins those the helper has not begun,
    // and the helper answers those `null`; the rest it answers with their stats.
    const requests = batches().map((batch) => {
      const entry = { batch, answered: null as Float64Array | null, claimed: false, done: false };
      helper.ask({ paths: batch.joined, rawPaths }, (answer) => {
        entry.answered = answer.stats;
        entry.done = true;
      });
      return entry;
    });
    requests.forEach((entry, id) => {
      entry.claimed = helper.claim(id);
    });
    while (requests.some((entry) => !entry.done)) helper.wait(10);
    for (const entry of requests) {
      assert.equal(entry.claimed, entry.answered === null, "one thread, not both or neither");
      if (entry.answered !== null) {
        assert.deepEqual([...entry.answered], [...statPaths(root, entry.batch.paths, rawPaths)]);
      }
    }
  } finally {
    await helper.close();
  }
});

test("stats are whole and in order when the caller helps the helper", async () => {
  const expected = [...statPaths(root, paths, rawPaths)];
  const helper = await readyHelper();
  try {
    // All batches are posted before any is taken, so the caller's helpOrWait takes back the
    // ones the helper has not begun.
    const statter = new BatchStatter(root, helper);
    for (const batch of batches()) statter.submit(batch);
    const numbers: number[] = [];
    while (statter.pending > 0) {
      statter.helpOrWait(10);
      for (const batch of statter.takeReady()) numbers.push(...(batch.stats as Float64Array));
    }
    assert.deepEqual(numbers, expected);
  } finally {
    await helper.close();
  }
});
