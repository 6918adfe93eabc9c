import assert from "node:assert/strict";
import { test } from "node:test";
import { extensionOf } from "../../src/indexer/path-fill.js";
import { toJson } from "../../src/output/json.js";
import stringWidth from "string-width";
import { cellText, displayWidth, renderTable } from "../../src/output/table.js";
import { parseHookCommand, expandHookCommand } from "../../src/parse/hook-command.js";
import { inferColumns, parseHookOutput } from "../../src/parse/hook-rows.js";
import { formatDuration, progressModeFromEnv } from "../../src/progress/reporter.js";

test("JSON keeps exact integers, nulls non-finite reals and hex-encodes blobs", () => {
  const json = toJson(
    ["i", "r", "n", "b"],
    [[9223372036854775807n, Infinity, null, Buffer.from([171, 255])]],
  );
  assert.equal(json, '[{"i":9223372036854775807,"r":null,"n":null,"b":"abff"}]\n');
  assert.equal(toJson(["a"], []), "[]\n");
});

test("table cells escape control characters and truncate at 60 characters", async () => {
  assert.equal(cellText("a\nb\tc\u001b"), "a\\nb\\tc\\u{1b}");
  assert.equal(cellText("x".repeat(61)), `${"x".repeat(59)}…`);
  assert.equal(cellText(null), "NULL");
  assert.equal(
    await renderTable(
      ["n", "s"],
      [
        [10n, "a"],
        [2n, null],
      ],
    ),
    "n   s\n--  ----\n10  a\n 2  NULL\n(2 rows)\n",
  );
});

test("ext is the last extension, NULL without one", () => {
  assert.equal(extensionOf("a.tar.gz"), "gz");
  assert.equal(extensionOf("README.MD"), "MD");
  assert.equal(extensionOf(".env"), null);
  assert.equal(extensionOf("Makefile"), null);
  assert.equal(extensionOf("notes."), null);
});

test("hook commands split like a shell, without one", () => {
  const command = parseHookCommand(`node -e "console.log('a b')" 'x y' a\\ b $HOME {path}`);
  assert.deepEqual(command.argv, [
    "node",
    "-e",
    "console.log('a b')",
    "x y",
    "a b",
    "$HOME",
    "{path}",
  ]);
  assert.deepEqual(
    expandHookCommand(command, { path: "/r/with space.json", root: "/r" }).at(-1),
    "/r/with space.json",
  );
  assert.equal(parseHookCommand("./parse.mjs {path}", "/cfg").argv[0], "/cfg/parse.mjs");
  assert.throws(() => parseHookCommand("cat {path} | jq"), /shell operator '\|'/);
});

test("hook output must be an array of objects; columns are the union in first-seen order", () => {
  const parsed = parseHookOutput(Buffer.from('[{"a":1,"b":true},{"c":[1],"A":2.5}]'));
  assert.ok(parsed.ok);
  assert.deepEqual(
    [...(parsed.ok ? (parsed.rows[0]?.entries() ?? []) : [])],
    [
      ["a", 1n],
      ["b", 1n],
    ],
  );
  assert.deepEqual(inferColumns([parsed.ok ? parsed.rows : []]), ["a", "b", "c"]);
  assert.equal(parseHookOutput(Buffer.from("{}")).ok, false);
  assert.equal(parseHookOutput(Buffer.from("[1]")).ok, false);
  assert.equal(parseHookOutput(Buffer.from("nope")).ok, false);
});

test("DIRQ_PROGRESS values and durations", () => {
  assert.equal(progressModeFromEnv(" ALWAYS "), "always");
  assert.equal(progressModeFromEnv("0"), "never");
  assert.equal(progressModeFromEnv("maybe"), "auto");
  assert.equal(formatDuration(850), "850ms");
  assert.equal(formatDuration(1420), "1.42s");
  assert.equal(formatDuration(125_000), "2m05s");
});

test("displayWidth agrees with string-width: every BMP character, and seeded mixed text", async () => {
  for (let code = 0; code <= 0xffff; code++) {
    if (code >= 0xd800 && code <= 0xdfff) continue;
    const character = String.fromCharCode(code);
    assert.equal(await displayWidth(character), stringWidth(character), `U+${code.toString(16)}`);
  }
  // Characters of each kind the fast paths take, next to ones they must leave to string-width
  // (a combining accent, a variation selector, an emoji, a joiner, a soft hyphen).
  const pool = [
    "a",
    " ",
    "é",
    "ß",
    "Ж",
    "Ω",
    "日",
    "本",
    "カ",
    "한",
    "Ａ",
    "。",
    "\u0301",
    "\ufe0f",
    "😀",
    "\u200d",
    "\u00ad",
    "©",
  ];
  let seed = 7;
  const next = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  for (let i = 0; i < 2000; i++) {
    let text = "";
    const length = Math.floor(next() * 12);
    for (let j = 0; j < length; j++) text += pool[Math.floor(next() * pool.length)];
    assert.equal(await displayWidth(text), stringWidth(text), JSON.stringify(text));
  }
});
