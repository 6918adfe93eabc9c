/**
 * When a typed statement is complete: the state machine of SQLite's `sqlite3_complete()`
 * (src/complete.c), written anew for JavaScript because better-sqlite3 does not expose it.
 * A `;` ends a statement unless it is inside a string, a quoted identifier, a comment, or the
 * `BEGIN ... END` body of a `CREATE TRIGGER`.
 */

/** Token classes of the state machine. */
const enum Token {
  Semi = 0,
  Space = 1,
  Other = 2,
  Explain = 3,
  Create = 4,
  Temp = 5,
  Trigger = 6,
  End = 7,
}

/**
 * States: 0 nothing seen yet, 1 at a statement boundary, 2 inside a statement, 3 after a
 * leading EXPLAIN, 4 after CREATE (and TEMP), 5 inside a trigger body, 6 after a `;` in a
 * trigger body, 7 after `; END` in a trigger body. Rows: state; columns: token class.
 */
const TRANSITIONS: readonly (readonly number[])[] = [
  /*               SEMI  WS  OTHER  EXPLAIN  CREATE  TEMP  TRIGGER  END */
  /* 0 invalid */ [1, 0, 2, 3, 4, 2, 2, 2],
  /* 1 start   */ [1, 1, 2, 3, 4, 2, 2, 2],
  /* 2 normal  */ [1, 2, 2, 2, 2, 2, 2, 2],
  /* 3 explain */ [1, 3, 3, 2, 4, 2, 2, 2],
  /* 4 create  */ [1, 4, 2, 2, 2, 4, 5, 2],
  /* 5 trigger */ [6, 5, 5, 5, 5, 5, 5, 5],
  /* 6 semi    */ [6, 6, 5, 5, 5, 5, 5, 7],
  /* 7 end     */ [1, 7, 5, 5, 5, 5, 5, 5],
];

const START = 1;

/** Characters of an identifier or keyword as SQLite's tokenizer sees them (any non-ASCII too). */
function isIdChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    code === 0x5f ||
    code === 0x24 ||
    code >= 0x80
  );
}

const KEYWORDS: Readonly<Record<string, Token>> = {
  create: Token.Create,
  temp: Token.Temp,
  temporary: Token.Temp,
  trigger: Token.Trigger,
  end: Token.End,
  explain: Token.Explain,
};

/** One complete statement found in the text: where it ends, and whether it has any token. */
interface Boundary {
  end: number;
  empty: boolean;
}

interface Scan {
  /** Statements ended by a `;`, in order. */
  boundaries: Boundary[];
  /** True when the text ends at a statement boundary (only space and comments after it). */
  complete: boolean;
  /** True when the text after the last boundary holds a token. */
  trailingContent: boolean;
}

/**
 * Where the comment opening at `start` (`/*` or `--`) ends: after its `*\/`, or after its line
 * (a `--` comment on the last line ends with the text); -1 for a block comment left open.
 */
function commentEnd(sql: string, start: number): number {
  if (sql[start] === "/") {
    const close = sql.indexOf("*/", start + 2);
    return close < 0 ? -1 : close + 2;
  }
  const newline = sql.indexOf("\n", start + 2);
  return newline < 0 ? sql.length : newline + 1;
}

/** Runs the state machine over `sql`, noting every place a statement ends. */
function scan(sql: string): Scan {
  const boundaries: Boundary[] = [];
  let state = 0;
  let empty = true;
  let i = 0;
  const step = (token: Token, next: number) => {
    const before = state;
    state = TRANSITIONS[state]?.[token] ?? 2;
    if (token !== Token.Space && token !== Token.Semi) empty = false;
    if (token === Token.Semi && state === START && before !== 5 && before !== 6) {
      boundaries.push({ end: next, empty });
      empty = true;
    }
    i = next;
  };
  const unfinished = (): Scan => ({ boundaries, complete: false, trailingContent: true });
  while (i < sql.length) {
    const ch = sql[i] as string;
    switch (ch) {
      case ";":
        step(Token.Semi, i + 1);
        break;
      case " ":
      case "\r":
      case "\t":
      case "\n":
      case "\f":
        step(Token.Space, i + 1);
        break;
      case "/":
      case "-": {
        if (sql[i + 1] !== (ch === "/" ? "*" : "-")) {
          step(Token.Other, i + 1);
          break;
        }
        const end = commentEnd(sql, i);
        if (end < 0) return unfinished();
        step(Token.Space, end);
        break;
      }
      case "[": {
        const close = sql.indexOf("]", i + 1);
        if (close < 0) return unfinished();
        step(Token.Other, close + 1);
        break;
      }
      case "`":
      case '"':
      case "'": {
        // A doubled quote inside is simply a closed string followed by a new one.
        const close = sql.indexOf(ch, i + 1);
        if (close < 0) return unfinished();
        step(Token.Other, close + 1);
        break;
      }
      default: {
        if (!isIdChar(ch.charCodeAt(0))) {
          step(Token.Other, i + 1);
          break;
        }
        let end = i + 1;
        while (end < sql.length && isIdChar(sql.charCodeAt(end))) end++;
        const word = sql.slice(i, end).toLowerCase();
        step(KEYWORDS[word] ?? Token.Other, end);
      }
    }
  }
  return { boundaries, complete: state === START, trailingContent: !empty };
}

/**
 * True when `sql` ends with a complete statement: what `sqlite3_complete()` answers. Text with
 * only spaces and comments is not complete.
 */
export function isCompleteStatement(sql: string): boolean {
  return scan(sql).complete;
}

/** True when `sql` holds at least one token (it is not only spaces, comments and `;`). */
export function hasStatementContent(sql: string): boolean {
  const { boundaries, trailingContent } = scan(sql);
  return trailingContent || boundaries.some((boundary) => !boundary.empty);
}

/**
 * Splits complete input into its statements, each with its `;`, leaving out empty ones
 * (a lone `;`). Comments after the last `;` are dropped.
 */
export function splitStatements(sql: string): string[] {
  const { boundaries } = scan(sql);
  const statements: string[] = [];
  let start = 0;
  for (const boundary of boundaries) {
    if (!boundary.empty) statements.push(sql.slice(start, boundary.end).trim());
    start = boundary.end;
  }
  return statements;
}
