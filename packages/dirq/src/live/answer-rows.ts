/**
 * The rows of a JSON answer as a query process writes it (`[{...},{...}]`, compact), each as
 * its own text, without parsing the values: a live query compares rows by their text, and
 * sends them as the bytes `POST /query` would.
 */

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const COMMA = 44;

/** The index just past the JSON string that starts at `start` (a quote). */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  for (;;) {
    const code = text.charCodeAt(i);
    if (Number.isNaN(code)) throw new Error("unterminated string in a query answer");
    if (code === BACKSLASH) i += 2;
    else if (code === QUOTE) return i + 1;
    else i++;
  }
}

/** The elements of a JSON array of objects, each as its text. */
export function answerRows(answer: string | Uint8Array): string[] {
  const text = typeof answer === "string" ? answer : Buffer.from(answer).toString();
  const rows: string[] = [];
  let depth = 0;
  let start = -1;
  for (let i = 0; i < text.length;) {
    const code = text.charCodeAt(i);
    if (code === QUOTE) {
      i = stringEnd(text, i);
      continue;
    }
    if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (depth === 1) start = i;
      depth++;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth--;
      if (depth === 1) rows.push(text.slice(start, i + 1));
    } else if (code === COMMA && depth === 1) {
      start = -1;
    }
    i++;
  }
  return rows;
}

/**
 * A row text whose first field is `name` (a string): that string and the row without it.
 * What a live query reads with each row's file first.
 */
export function splitFirstField(row: string, name: string): { value: string; row: string } {
  const head = `{${JSON.stringify(name)}:`;
  if (!row.startsWith(head)) throw new Error(`a live query's row lacks its ${name} field`);
  const end = stringEnd(row, head.length);
  const value = JSON.parse(row.slice(head.length, end)) as string;
  const rest = row.slice(end);
  return { value, row: rest.startsWith(",") ? `{${rest.slice(1)}` : "{}" };
}
