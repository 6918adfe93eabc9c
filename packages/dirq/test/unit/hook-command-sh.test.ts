import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { parseHookCommand } from "../../src/parse/hook-command.js";
import { harnessSeed, pick, seededRandom } from "../differential.js";

/**
 * The on-file splitter against POSIX sh itself: `sh -c 'printf "%s\0" MARK <text>'` prints
 * the words sh makes of <text>. Run in an empty folder, so that nothing could expand.
 */
const emptyFolder = mkdtempSync(join(tmpdir(), "dirq-sh-split-"));
after(() => rmSync(emptyFolder, { recursive: true, force: true }));

const MARK = "dirq-mark";

/** The words sh makes of `text`, or null when sh refuses it (an unclosed quote). */
function shWords(text: string): string[] | null {
  const result = spawnSync("sh", ["-c", `printf '%s\\0' ${MARK} ${text}`], {
    cwd: emptyFolder,
    encoding: "utf8",
  });
  if (result.status !== 0) return null;
  const words = result.stdout.split("\0").slice(0, -1);
  assert.equal(words[0], MARK, `sh output for ${JSON.stringify(text)}: ${result.stdout}`);
  return words.slice(1);
}

/** dirq's words for `text` (after a program name), or null when it refuses the text. */
function dirqWords(text: string): string[] | null {
  try {
    return parseHookCommand(`prog ${text}`).argv.slice(1);
  } catch {
    return null;
  }
}

/** Pieces sh reads differently depending on where they stand; no operators or expansions. */
const PIECES = [
  "a",
  "b",
  "x.sh",
  "--sep=",
  "{path}",
  "{root}",
  "{",
  "}",
  ",",
  "=",
  "é",
  " ",
  "  ",
  "\t",
  "#",
  "'",
  '"',
  "\\",
  "\\\\",
  "\\'",
  '\\"',
  "\\#",
  "\\ ",
  "''",
  '""',
  "'#'",
  '"#"',
  "'a b'",
  '"a b"',
  '"\\a"',
  '"\\\\"',
  '"\\""',
  '"\\$"',
  '"\\`"',
  "'\\'",
  '"a\'b"',
  "'a\"b'",
  "%s",
  "-",
];

function generated(random: () => number): string {
  const length = 1 + Math.floor(random() * 8);
  let text = "";
  for (let i = 0; i < length; i++) text += pick(random, PIECES);
  return text;
}

describe("on-file words split as POSIX sh splits them", () => {
  it("the cases from the issue and the quoting rules, one by one", () => {
    const cases = [
      "--sep=a#b {path}",
      "a #comment {path}",
      "a#b#c # tail",
      "'#' \"#\" \\# #",
      "'' \"\" a''b",
      '"a\\b" "a\\\\b" "a\\"b" \'a\\b\'',
      "a\"b\"c'd'e",
      "\\",
      "a\\",
      "{path}#x",
      "a\tb",
    ];
    for (const text of cases) {
      assert.deepEqual(dirqWords(text), shWords(text), `for ${JSON.stringify(text)}`);
    }
  });

  it("generated seeded strings split to the same words (or are refused by both)", () => {
    const seed = harnessSeed(29_005);
    const random = seededRandom(seed);
    let refused = 0;
    for (let n = 0; n < 400; n++) {
      const text = generated(random);
      const expected = shWords(text);
      if (expected === null) refused++;
      assert.deepEqual(
        dirqWords(text),
        expected,
        `for ${JSON.stringify(text)} (seed ${seed}, case ${n}; DIRQ_TEST_SEED=${seed} replays)`,
      );
    }
    // The generator reaches both sides: some strings sh refuses (unclosed quotes), most not.
    assert.ok(refused > 0 && refused < 400, `sh refused ${refused} of 400`);
  });

  it("line breaks: joined after a backslash, kept inside quotes, a second command refused", () => {
    assert.deepEqual(dirqWords("a\\\nb"), ["ab"]);
    assert.deepEqual(dirqWords("'a\nb' \"c\nd\""), ["a\nb", "c\nd"]);
    assert.deepEqual(dirqWords('"a\\\nb"'), ["ab"]);
    assert.deepEqual(dirqWords("a # note\n"), ["a"]);
    assert.deepEqual(dirqWords("a\n# note\n  \n"), ["a"]);
    assert.throws(
      () => parseHookCommand("prog a\nrm b"),
      /line break would start a second command/,
    );
  });

  it("what sh would expand arrives as written; operators are refused, naming them", () => {
    assert.deepEqual(dirqWords("$HOME ${HOME} *.txt ~ `x` a?b [ab]"), [
      "$HOME",
      "${HOME}",
      "*.txt",
      "~",
      "`x`",
      "a?b",
      "[ab]",
    ]);
    for (const [text, operator] of [
      ["a | b", "|"],
      ["a || b", "||"],
      ["a && b", "&&"],
      ["a;b", ";"],
      ["a > out", ">"],
      ["a >> out", ">>"],
      ["a < in", "<"],
      ["$(id)", "("],
      ["a &", "&"],
    ] as const) {
      assert.throws(
        () => parseHookCommand(`prog ${text}`),
        (error: Error) =>
          error.message.includes(`shell operator '${operator}'`) && error.message.includes("sh -c"),
        `for ${text}`,
      );
    }
    // Quoted, an operator is text.
    assert.deepEqual(dirqWords("'a|b' \"c;d\" e\\&f"), ["a|b", "c;d", "e&f"]);
  });
});
