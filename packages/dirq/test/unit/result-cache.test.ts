import assert from "node:assert/strict";
import { test } from "node:test";
import { isCacheable, ResultCache } from "../../src/server/result-cache.js";

test("statements with volatile functions are never cached", () => {
  assert.equal(isCacheable("SELECT path FROM './'"), true);
  assert.equal(isCacheable("SELECT random()"), false);
  assert.equal(isCacheable("SELECT DATETIME('now')"), false);
  assert.equal(isCacheable("SELECT 'random()' AS text_only"), true);
});

test("an answer holds only at the generation it was computed at", () => {
  const cache = new ResultCache(1000);
  cache.set("SELECT 1", "5", "[1]");
  assert.equal(cache.get("SELECT 1", "5"), "[1]");
  assert.equal(cache.get("SELECT 1", "6"), undefined);
  assert.equal(cache.get("SELECT 1", "5"), undefined, "a stale entry is dropped");
});

test("the cache stays within its size, least recently used out", () => {
  const cache = new ResultCache(100);
  cache.set("a", "1", "x".repeat(20));
  cache.set("b", "1", "y".repeat(20));
  cache.get("a", "1");
  for (let i = 0; i < 4; i++) cache.set(`c${i}`, "1", "z".repeat(20));
  assert.equal(cache.get("a", "1"), "x".repeat(20));
  assert.equal(cache.get("b", "1"), undefined);
});
