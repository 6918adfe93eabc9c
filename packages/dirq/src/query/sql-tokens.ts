/**
 * A small SQLite tokenizer: enough to classify a statement (first keyword, PRAGMA form),
 * find statement boundaries and spot names, following SQLite's lexical rules for strings,
 * quoted identifiers, comments and blobs. It never evaluates anything.
 */
export type TokenKind =
  "word" | "identifier" | "string" | "blob" | "number" | "variable" | "punct" | "comment" | "space";

export interface SqlToken {
  kind: TokenKind;
  /** The token as written. */
  text: string;
  /** For strings and quoted identifiers, the content without quotes; otherwise `text`. */
  value: string;
  start: number;
}

// Character classes as code-point tests, not regular expressions: V8 compiles each regular
// expression afresh in every process (a code cache keeps none), a cost paid at every start-up,
// where every statement is tokenized. The classes are those of the expressions they replace
// (a unit test compares them over every UTF-16 code unit):
// WORD_START /[A-Za-z_\u0080-\uffff]/, WORD_PART /[A-Za-z0-9_$\u0080-\uffff]/, SPACE /\s/.

type CharTest = (code: number) => boolean;

export const isDigit: CharTest = (code) => code >= 48 && code <= 57;

const isAsciiLetter: CharTest = (code) => (code | 0x20) >= 97 && (code | 0x20) <= 122;

export const isWordStart: CharTest = (code) =>
  isAsciiLetter(code) || code === 95 || (code >= 0x80 && code <= 0xffff);

export const isWordPart: CharTest = (code) => isWordStart(code) || isDigit(code) || code === 36;

/** JavaScript's `\s`: ASCII tab to carriage return, space, and Unicode's spaces. */
export const isSpace: CharTest = (code) =>
  (code >= 9 && code <= 13) ||
  code === 32 ||
  (code >= 0x80 &&
    (code === 0xa0 ||
      code === 0x1680 ||
      (code >= 0x2000 && code <= 0x200a) ||
      code === 0x2028 ||
      code === 0x2029 ||
      code === 0x202f ||
      code === 0x205f ||
      code === 0x3000 ||
      code === 0xfeff));

const isHexDigit: CharTest = (code) =>
  isDigit(code) || ((code | 0x20) >= 97 && (code | 0x20) <= 102);

/** A digit or `_` (SQLite's digit separator). */
const isDigitPart: CharTest = (code) => isDigit(code) || code === 95;

const isHexPart: CharTest = (code) => isHexDigit(code) || code === 95;

function readQuoted(sql: string, start: number, close: string): { end: number; value: string } {
  let value = "";
  let i = start + 1;
  while (i < sql.length) {
    const ch = sql[i] as string;
    if (ch === close) {
      if (close !== "]" && sql[i + 1] === close) {
        value += close;
        i += 2;
        continue;
      }
      return { end: i + 1, value };
    }
    value += ch;
    i++;
  }
  return { end: sql.length, value };
}

function scanWhile(sql: string, start: number, matches: CharTest): number {
  let i = start;
  while (i < sql.length && matches(sql.charCodeAt(i))) i++;
  return i;
}

function readNumber(sql: string, start: number): number {
  if (sql[start] === "0" && (sql[start + 1] === "x" || sql[start + 1] === "X")) {
    return scanWhile(sql, start + 2, isHexPart);
  }
  let i = scanWhile(sql, start, isDigitPart);
  if (sql[i] === ".") i = scanWhile(sql, i + 1, isDigitPart);
  if (sql[i] === "e" || sql[i] === "E") {
    const signed = sql[i + 1] === "+" || sql[i + 1] === "-" ? i + 2 : i + 1;
    if (isDigit(sql.charCodeAt(signed))) i = scanWhile(sql, signed, isDigitPart);
  }
  return i;
}

const TWO_CHAR_OPERATORS = new Set(["||", "<=", ">=", "==", "!=", "<>", "<<", ">>", "->"]);

function readToken(sql: string, i: number): { kind: TokenKind; end: number; value?: string } {
  const ch = sql[i] as string;
  const code = sql.charCodeAt(i);
  const next = sql[i + 1] ?? "";
  if (isSpace(code)) return { kind: "space", end: scanWhile(sql, i, isSpace) };
  if (ch === "-" && next === "-") {
    const newline = sql.indexOf("\n", i);
    return { kind: "comment", end: newline === -1 ? sql.length : newline + 1 };
  }
  if (ch === "/" && next === "*") {
    const close = sql.indexOf("*/", i + 2);
    return { kind: "comment", end: close === -1 ? sql.length : close + 2 };
  }
  if (ch === "'") return { kind: "string", ...readQuoted(sql, i, "'") };
  if (ch === '"') return { kind: "identifier", ...readQuoted(sql, i, '"') };
  if (ch === "`") return { kind: "identifier", ...readQuoted(sql, i, "`") };
  if (ch === "[") return { kind: "identifier", ...readQuoted(sql, i, "]") };
  if ((ch === "x" || ch === "X") && next === "'") {
    const quoted = readQuoted(sql, i + 1, "'");
    return { kind: "blob", end: quoted.end, value: quoted.value };
  }
  if (isDigit(code) || (ch === "." && isDigit(sql.charCodeAt(i + 1)))) {
    return { kind: "number", end: readNumber(sql, i) };
  }
  if (isWordStart(code)) return { kind: "word", end: scanWhile(sql, i + 1, isWordPart) };
  if (ch === "?") return { kind: "variable", end: scanWhile(sql, i + 1, isDigit) };
  if (ch === ":" || ch === "@" || ch === "$") {
    return { kind: "variable", end: scanWhile(sql, i + 1, isWordPart) };
  }
  if (ch === "-" && next === ">" && sql[i + 2] === ">") return { kind: "punct", end: i + 3 };
  if (TWO_CHAR_OPERATORS.has(ch + next)) return { kind: "punct", end: i + 2 };
  return { kind: "punct", end: i + 1 };
}

/** Splits SQL text into tokens, comments and whitespace included. */
export function tokenize(sql: string): SqlToken[] {
  const tokens: SqlToken[] = [];
  let i = 0;
  while (i < sql.length) {
    const { kind, end, value } = readToken(sql, i);
    const text = sql.slice(i, end);
    tokens.push({ kind, text, value: value ?? text, start: i });
    i = end;
  }
  return tokens;
}

/** The tokens that carry meaning: no whitespace, no comments. */
export function significantTokens(sql: string): SqlToken[] {
  return tokenize(sql).filter((token) => token.kind !== "space" && token.kind !== "comment");
}

/** The upper-cased keyword of a bare word token, or `null` for any other token. */
export function keywordOf(token: SqlToken | undefined): string | null {
  return token?.kind === "word" ? token.text.toUpperCase() : null;
}
