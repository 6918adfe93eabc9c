/**
 * `rowShaper`: captures added (the path's value replaces a key of the same name), a `columns`
 * mapping as the whole projection (dot paths into JSON text, array positions, a key holding
 * dots taken whole, big integers exact) and `strict` (extra and missing keys, a capture
 * counting as a key) on rows built directly.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { HookRow } from "../../src/parse/hook-rows.js";
import { rowShaper, type RowShape } from "../../src/parse/row-shape.js";

const row = (entries: Record<string, unknown>): HookRow =>
  new Map(Object.entries(entries)) as HookRow;
const plain = (rows: HookRow[]) => rows.map((r) => Object.fromEntries(r));
const shape = (over: Partial<RowShape>): RowShape => ({
  glob: "data/{region}/*.json",
  columns: null,
  strict: false,
  schema: null,
  origin: "c.toml: table[0]",
  ...over,
});

test("captures come first and replace a key of the file with the same name (any case)", () => {
  const shaped = rowShaper(shape({}))("data/eu/a.json", [row({ n: 1n, REGION: "file" })]);
  assert.deepEqual(plain(shaped), [{ region: "eu", n: 1n }]);
});

test("columns: dot paths, array positions, a dotted key, big integers, captures, NULL", () => {
  const columns: [string, string][] = [
    ["name", "meta.author.name"],
    ["second", "items.1"],
    ["dotted", "a.b"],
    ["big", "meta.big"],
    ["where", "region"],
    ["none", "meta.nothing.here"],
  ];
  const shaped = rowShaper(shape({ columns }))("data/us/a.json", [
    row({
      meta: '{"author":{"name":"Ann"},"big":9223372036854775807}',
      items: "[10,20]",
      "a.b": "whole",
      region: "the file's",
    }),
  ]);
  assert.deepEqual(plain(shaped), [
    {
      name: "Ann",
      second: 20n,
      dotted: "whole",
      big: 9223372036854775807n,
      where: "us",
      none: null,
    },
  ]);
});

test("strict: extra and missing keys throw with the file's reason; a capture counts", () => {
  const schema: [string, string][] = [
    ["region", "TEXT"],
    ["Title", "TEXT"],
  ];
  const shaper = rowShaper(shape({ strict: true, schema }));
  assert.deepEqual(plain(shaper("data/eu/a.json", [row({ title: "t" })])), [
    { region: "eu", title: "t" },
  ]);
  assert.throws(
    () => shaper("data/eu/a.json", [row({ title: "t" }), row({ color: "red" })]),
    /^Error: row 1 has keys outside the schema: color and lacks schema columns: Title \(strict = true in c\.toml: table\[0\]/,
  );
});
