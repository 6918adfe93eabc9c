import { RowsError } from "./document-rows.js";

/**
 * What smol-toml lets by that TOML 1.0 refuses, as Python's `tomllib` refuses it: dates that do
 * not exist (`2100-02-29`, which the parser would roll over into March) and TOML 1.1's syntax
 * (a time without seconds, `\e` and `\xHH` escapes, a line break or a trailing comma inside an
 * inline table). One pass over the text before the parser runs; strings and comments are
 * skipped, and only the parser judges everything else.
 */

const TOML_10 = "not valid TOML 1.0, which dirq reads, as Python's tomllib";

/** Where a TOML string starts at `i`, its quote; else `null`. */
function quoteAt(text: string, i: number): string | null {
  for (const quote of ['"""', "'''", '"', "'"]) if (text.startsWith(quote, i)) return quote;
  return null;
}

/** The index just after the string opening with `quote` at `i` (the text's end if unclosed). */
function stringEnd(text: string, i: number, quote: string): number {
  const escapes = quote[0] === '"';
  for (let at = i + quote.length; ;) {
    const close = text.indexOf(quote, at);
    if (close === -1) return text.length;
    let backslashes = 0;
    while (escapes && text.charCodeAt(close - 1 - backslashes) === 92) backslashes++;
    if (backslashes % 2 === 0) return close + quote.length;
    at = close + 1;
  }
}

/** How many line feeds `text` holds from `start` up to `end`. */
function lineFeeds(text: string, start: number, end: number): number {
  let count = 0;
  for (let at = text.indexOf("\n", start); at !== -1 && at < end; at = text.indexOf("\n", at + 1))
    count++;
  return count;
}

const ESCAPE = /\\([\s\S])/g;

/** Refuses TOML 1.1's `\e` and `\xHH` inside a basic string (`body` is what the quotes hold). */
function refuseNewEscapes(body: string, line: number): void {
  ESCAPE.lastIndex = 0;
  for (let match = ESCAPE.exec(body); match !== null; match = ESCAPE.exec(body)) {
    if (match[1] !== "e" && match[1] !== "x") continue;
    const at = line + lineFeeds(body, 0, match.index);
    const instead = match[1] === "e" ? "\\u001B" : "\\u00 and the two hex digits";
    throw new RowsError(
      `line ${at}: the escape \\${match[1]} is TOML 1.1, ${TOML_10} (write ${instead})`,
    );
  }
}

const DATE_LITERAL = /(\d{4})-(\d{2})-(\d{2})(?![\w-]*\s*[=.])/y;
const TIME_LITERAL = /\d{2}:\d{2}(:\d{2}(?:\.\d+)?)?(?:[zZ]|[-+]\d{2}:\d{2})?/y;

/** Days in a month of the proleptic Gregorian calendar (month 1 to 12). */
function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** The length of a date or time literal starting at `i` (checked), or 0 where none starts. */
function checkedDateOrTime(text: string, i: number, line: number): number {
  DATE_LITERAL.lastIndex = i;
  const date = DATE_LITERAL.exec(text);
  if (date !== null) {
    const [, year, month, day] = date.map(Number) as [number, number, number, number];
    if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) {
      throw new RowsError(`line ${line}: ${date[0]} is not a date (not valid TOML)`);
    }
    return date[0].length;
  }
  TIME_LITERAL.lastIndex = i;
  const time = TIME_LITERAL.exec(text);
  if (time === null) return 0;
  if (time[1] === undefined) {
    const written = time[0].slice(0, 5);
    throw new RowsError(
      `line ${line}: the time ${written} has no seconds, ${TOML_10} (write ${written}:00)`,
    );
  }
  return time[0].length;
}

/** Refuses what TOML 1.1 allows inside an inline table and TOML 1.0 does not, at `i`. */
function refuseInlineTableSyntax(text: string, i: number, line: number): void {
  if (text.charCodeAt(i) === 10) {
    throw new RowsError(
      `line ${line}: a line break inside an inline table { }, ${TOML_10} (keep it on one line, or use a [table])`,
    );
  }
  let before = i - 1;
  while (text[before] === " " || text[before] === "\t") before--;
  if (text.charCodeAt(i) === 125 && text.charCodeAt(before) === 44) {
    throw new RowsError(
      `line ${line}: a comma after an inline table's last value, ${TOML_10} (remove it)`,
    );
  }
}

/** Refuses a text smol-toml would read and TOML 1.0 refuses, naming the line. */
export function refuseBeyondToml10(text: string, firstLine: number): void {
  const open: number[] = [];
  let line = firstLine;
  for (let i = 0; i < text.length;) {
    const code = text.charCodeAt(i);
    const quote = quoteAt(text, i);
    if (quote !== null) {
      const end = stringEnd(text, i, quote);
      if (quote[0] === '"') refuseNewEscapes(text.slice(i + quote.length, end), line);
      line += lineFeeds(text, i, end);
      i = end;
      continue;
    }
    if (code === 35) {
      const end = text.indexOf("\n", i);
      i = end === -1 ? text.length : end;
      continue;
    }
    if (open.at(-1) === 123 && (code === 10 || code === 125)) {
      refuseInlineTableSyntax(text, i, line);
    }
    if (code === 10) line++;
    else if (code === 91 || code === 123) open.push(code);
    else if (code === 93 || code === 125) open.pop();
    const previous = text.charCodeAt(i - 1);
    const digitStarts = code >= 48 && code <= 57 && !(previous >= 48 && previous <= 57);
    const literal = digitStarts ? checkedDateOrTime(text, i, line) : 0;
    i += literal > 0 ? literal : 1;
  }
}
