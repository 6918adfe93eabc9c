import assert from "node:assert/strict";
import { test } from "node:test";
import { ResultCache } from "../../src/server/result-cache.js";

/** Stamps from per-table counts, as the index keeps them. */
function stamps(counts: Record<string, number>) {
  return (tables: readonly string[]) => tables.map((table) => counts[table] ?? 0).join(":");
}

test("an answer holds while the tables it read are unchanged, whatever else changes", () => {
  const counts: Record<string, number> = {};
  const stampOf = stamps(counts);
  const cache = new ResultCache(1000);
  cache.set("SELECT * FROM a", ["a"], stampOf(["a"]), "[1]");
  counts.b = 1;
  assert.equal(cache.get("SELECT * FROM a", stampOf), "[1]");
  counts.a = 1;
  assert.equal(cache.get("SELECT * FROM a", stampOf), undefined);
  counts.a = 0;
  assert.equal(cache.get("SELECT * FROM a", stampOf), undefined, "a stale entry is dropped");
});

test("the cache stays within its size, least recently used out", () => {
  const stampOf = stamps({});
  const cache = new ResultCache(100);
  cache.set("a", [], "", "x".repeat(20));
  cache.set("b", [], "", "y".repeat(20));
  cache.get("a", stampOf);
  for (let i = 0; i < 4; i++) cache.set(`c${i}`, [], "", "z".repeat(20));
  assert.equal(cache.get("a", stampOf), "x".repeat(20));
  assert.equal(cache.get("b", stampOf), undefined);
});

test("an answer computed again replaces the stale one, which is never given again", () => {
  const counts: Record<string, number> = {};
  const stampOf = stamps(counts);
  const cache = new ResultCache(1000);
  cache.set("q", ["t"], stampOf(["t"]), "old");
  counts.t = 1;
  assert.equal(cache.get("q", stampOf), undefined);
  cache.set("q", ["t"], stampOf(["t"]), "new");
  assert.equal(cache.get("q", stampOf), "new");
  counts.t = 2;
  assert.equal(cache.get("q", stampOf), undefined);
  counts.t = 1;
  assert.equal(cache.get("q", stampOf), undefined, "a stale answer stays stale");
});

test("answers used often stay while many others come and go", () => {
  const stampOf = stamps({});
  const cache = new ResultCache(1000, (sql, answer) => sql.length + answer.length);
  cache.set("hot", [], "", "h");
  for (let i = 0; i < 10_000; i++) {
    cache.set(`SELECT ${i}`, [], "", String(i));
    assert.equal(cache.get("hot", stampOf), "h", `after ${i} others`);
  }
  assert.equal(cache.get("SELECT 9999", stampOf), "9999");
  assert.equal(cache.get("SELECT 0", stampOf), undefined);
});
