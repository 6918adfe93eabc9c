import assert from "node:assert/strict";
import { test } from "node:test";
import {
  isDigit,
  isSpace,
  isWordPart,
  isWordStart,
  significantTokens,
  tokenize,
} from "../../src/query/sql-tokens.js";

// The tokenizer's character classes are code-point tests for start-up's sake; these are the
// regular expressions they stand for, checked over every UTF-16 code unit.
const CLASSES = [
  ["isSpace", isSpace, /\s/],
  ["isDigit", isDigit, /[0-9]/],
  ["isWordStart", isWordStart, /[A-Za-z_\u0080-\uffff]/],
  ["isWordPart", isWordPart, /[A-Za-z0-9_$\u0080-\uffff]/],
] as const;

test("each character class matches its regular expression on every UTF-16 code unit", () => {
  for (const [name, matches, expression] of CLASSES) {
    for (let code = 0; code <= 0xffff; code++) {
      const expected = expression.test(String.fromCharCode(code));
      if (matches(code) !== expected) {
        assert.fail(`${name}(U+${code.toString(16).padStart(4, "0")}) is ${!expected}`);
      }
    }
  }
});

function kindsAndTexts(sql: string): string[] {
  return tokenize(sql).map((token) => `${token.kind}:${token.text}`);
}

test("numbers: decimals, exponents, hex and digit separators", () => {
  assert.deepEqual(kindsAndTexts("1 1.5 .5 1e10 1E+3 2e-7 0x1F 0XaB_c 1_000 3e"), [
    "number:1",
    "space: ",
    "number:1.5",
    "space: ",
    "number:.5",
    "space: ",
    "number:1e10",
    "space: ",
    "number:1E+3",
    "space: ",
    "number:2e-7",
    "space: ",
    "number:0x1F",
    "space: ",
    "number:0XaB_c",
    "space: ",
    "number:1_000",
    "space: ",
    "number:3",
    "word:e",
  ]);
});

test("words, variables and spaces, Unicode included", () => {
  // Past the first character of a word every character from U+0080 on belongs to it.
  assert.deepEqual(kindsAndTexts("\u00a0SELECT été$1, ?12, :a$b, @x, $y,\u3000_z9\u00a0"), [
    "space:\u00a0",
    "word:SELECT",
    "space: ",
    "word:été$1",
    "punct:,",
    "space: ",
    "variable:?12",
    "punct:,",
    "space: ",
    "variable::a$b",
    "punct:,",
    "space: ",
    "variable:@x",
    "punct:,",
    "space: ",
    "variable:$y",
    "punct:,",
    "space:\u3000",
    "word:_z9\u00a0",
  ]);
});

test("significant tokens leave out spaces and comments", () => {
  const tokens = significantTokens("SELECT /* a */ 'it''s' -- b\n, [x y], x'0A' ->> 1");
  assert.deepEqual(
    tokens.map((token) => [token.kind, token.value]),
    [
      ["word", "SELECT"],
      ["string", "it's"],
      ["punct", ","],
      ["identifier", "x y"],
      ["punct", ","],
      ["blob", "0A"],
      ["punct", "->>"],
      ["number", "1"],
    ],
  );
});
