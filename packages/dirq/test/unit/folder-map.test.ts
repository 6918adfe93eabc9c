import assert from "node:assert/strict";
import { test } from "node:test";
import { FolderMap } from "../../src/watch/folder-map.js";
import { harnessSeed, pick, seededRandom } from "../differential.js";

const KEYS = ["", "a", "a/b", "a/b/c", "a/bc", "ab", "b", "b/a", "b/a/a", "c/d/e"];

/** What `deleteTree` should delete: the key itself and every key under it. */
function expectedTree(keys: Iterable<string>, key: string): string[] {
  return [...keys].filter((each) => each === key || key === "" || each.startsWith(`${key}/`));
}

test("FolderMap deletes a key's tree as a scan of every key would", () => {
  const random = seededRandom(harnessSeed(66));
  for (let round = 0; round < 200; round++) {
    const map = new FolderMap<number>();
    const plain = new Map<string, number>();
    for (let step = 0; step < 30; step++) {
      const key = pick(random, KEYS);
      const action = random();
      if (action < 0.5) {
        map.set(key, step);
        plain.set(key, step);
      } else if (action < 0.7) {
        assert.equal(map.delete(key), plain.delete(key));
      } else if (action < 0.95) {
        const expected = expectedTree(plain.keys(), key);
        assert.equal(
          map.hasUnder(key),
          expected.some((each) => each !== key),
          `hasUnder(${key})`,
        );
        const deleted = map.deleteTree(key);
        assert.deepEqual(deleted.map(([each]) => each).sort(), expected.sort(), `tree of ${key}`);
        for (const [each, value] of deleted) assert.equal(value, plain.get(each));
        for (const each of expected) plain.delete(each);
      } else {
        map.clear();
        plain.clear();
      }
      assert.deepEqual([...map].sort(), [...plain].sort());
    }
  }
});
