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

const WORD_START = /[A-Za-z_\u0080-\uffff]/;
const WORD_PART = /[A-Za-z0-9_$\u0080-\uffff]/;
const SPACE = /\s/;
const DIGIT = /[0-9]/;

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

function scanWhile(sql: string, start: number, pattern: RegExp): number {
  let i = start;
  while (i < sql.length && pattern.test(sql[i] as string)) i++;
  return i;
}

function readNumber(sql: string, start: number): number {
  if (sql[start] === "0" && /[xX]/.test(sql[start + 1] ?? "")) {
    return scanWhile(sql, start + 2, /[0-9A-Fa-f_]/);
  }
  let i = scanWhile(sql, start, /[0-9_]/);
  if (sql[i] === ".") i = scanWhile(sql, i + 1, /[0-9_]/);
  if (/[eE]/.test(sql[i] ?? "")) {
    const signed = /[+-]/.test(sql[i + 1] ?? "") ? i + 2 : i + 1;
    if (DIGIT.test(sql[signed] ?? "")) i = scanWhile(sql, signed, /[0-9_]/);
  }
  return i;
}

const TWO_CHAR_OPERATORS = new Set(["||", "<=", ">=", "==", "!=", "<>", "<<", ">>", "->"]);

function readToken(sql: string, i: number): { kind: TokenKind; end: number; value?: string } {
  const ch = sql[i] as string;
  const next = sql[i + 1] ?? "";
  if (SPACE.test(ch)) return { kind: "space", end: scanWhile(sql, i, SPACE) };
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
  if (DIGIT.test(ch) || (ch === "." && DIGIT.test(next))) {
    return { kind: "number", end: readNumber(sql, i) };
  }
  if (WORD_START.test(ch)) return { kind: "word", end: scanWhile(sql, i + 1, WORD_PART) };
  if (ch === "?") return { kind: "variable", end: scanWhile(sql, i + 1, /[0-9]/) };
  if (ch === ":" || ch === "@" || ch === "$") {
    return { kind: "variable", end: scanWhile(sql, i + 1, WORD_PART) };
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
