import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { openSqlite, quoteIdentifier } from "../../src/indexer/database.js";
import { pathRowJsonSql } from "../../src/indexer/folder-moves.js";
import { rowJson } from "../../src/indexer/row-changes.js";

/** Every code point (surrogates alone included: SQLite gets them as U+FFFD), a run each. */
function textsOfEveryCharacter(): string[] {
  const texts: string[] = [];
  for (let start = 0; start <= 0x10ffff; start += 0x1000) {
    let text = "";
    for (let code = start; code < Math.min(start + 0x1000, 0x110000); code++) {
      text += String.fromCodePoint(code);
    }
    texts.push(text);
  }
  return texts;
}

describe("a moved path-table row's JSON made by SQLite", () => {
  it("is the text rowJson makes of the row's values, for every character and integer", () => {
    const db = openSqlite(":memory:");
    // A path-table's columns and types, a capture among them, and names JSON must escape.
    const columns = ["path", "dir", "size", "mtime", "cap", 'odd "name"\\\n'];
    const types = ["TEXT", "TEXT", "INTEGER", "INTEGER", "TEXT", "TEXT"];
    const create = columns.map((name, i) => `${quoteIdentifier(name)} ${types[i]}`).join(", ");
    db.exec(`CREATE TABLE t (${create}) STRICT`);
    const insert = db.prepare(`INSERT INTO t VALUES (${columns.map(() => "?").join(", ")})`);
    const integers = [0n, -1n, 1n, 2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n), null];
    textsOfEveryCharacter().forEach((text, i) => {
      insert.run(
        text,
        `d/${text}`,
        integers[i % integers.length],
        1_700_000_000_123_456_789n,
        null,
        "é😀",
      );
    });
    const list = columns.map(quoteIdentifier).join(", ");
    const values = db.prepare(`SELECT ${list} FROM t`).raw(true).safeIntegers(true).all();
    const json = pathRowJsonSql(columns);
    assert.notEqual(json, null);
    const made = db.prepare(`SELECT ${json} FROM t`).pluck().all();
    assert.equal(made.length, values.length);
    values.forEach((row, i) => assert.equal(made[i], rowJson(columns, row as unknown[])));
    db.close();
  });

  it("is left to rowJson past SQLite's limit on a function's arguments", () => {
    const columns = Array.from({ length: 64 }, (_, i) => `c${i}`);
    assert.equal(pathRowJsonSql(columns), null);
    assert.notEqual(pathRowJsonSql(columns.slice(0, 63)), null);
  });
});
