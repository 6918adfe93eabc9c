/** The page's client of the JSON API: `POST /query` (same origin, relative to the page). */

/** A cell as the page keeps it: JSON values, with integers beyond 2^53 kept as exact digits. */
export type Cell = string | number | boolean | null | ExactNumber | object;
export type Row = Record<string, Cell>;

/** An integer JSON number too large for a double, kept as the digits the server sent. */
export class ExactNumber {
  constructor(readonly digits: string) {}
  toString(): string {
    return this.digits;
  }
}

export interface QueryResult {
  ok: true;
  columns: string[];
  rows: Row[];
  /** From sending the request to having parsed rows, in milliseconds. */
  elapsedMs: number;
}

export interface QueryFailure {
  ok: false;
  /** The HTTP status, or 0 when the server could not be reached. */
  status: number;
  /** The server's diagnostic (`{"error": ...}`), or what went wrong on the way. */
  message: string;
  elapsedMs: number;
}

/** JSON.parse, keeping integers that a double cannot hold exactly (where the browser tells). */
export function parseJson(text: string): unknown {
  // A reviver costs on every value; only an integer of 16 or more digits can need one.
  if (!/\d{16}/.test(text)) return JSON.parse(text);
  return JSON.parse(text, function (
    this: unknown,
    _key: string,
    value: unknown,
    context?: { source?: string },
  ) {
    if (
      typeof value === "number" &&
      context?.source !== undefined &&
      Number.isInteger(value) &&
      !Number.isSafeInteger(value) &&
      /^-?\d+$/.test(context.source)
    ) {
      return new ExactNumber(context.source);
    }
    return value;
  } as (key: string, value: unknown) => unknown);
}

/** Column names in result order: the keys of the first row (every row has the same keys). */
function columnsOf(rows: readonly Row[]): string[] {
  const first = rows[0];
  return first === undefined ? [] : Object.keys(first);
}

/** Runs one statement. Never throws: a failure is a `QueryFailure` with the server's message. */
export async function runQuery(
  sql: string,
  signal?: AbortSignal,
): Promise<QueryResult | QueryFailure> {
  const started = performance.now();
  let response: Response;
  let text: string;
  try {
    response = await fetch("/query", {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify({ sql }),
      signal,
    });
    text = await response.text();
  } catch (error) {
    const message =
      error instanceof DOMException && error.name === "AbortError"
        ? "cancelled"
        : `the dirq server could not be reached (${(error as Error).message})`;
    return { ok: false, status: 0, message, elapsedMs: performance.now() - started };
  }
  const elapsed = () => performance.now() - started;
  if (!response.ok) {
    return {
      ok: false,
      status: response.status,
      message: errorMessage(response.status, text),
      elapsedMs: elapsed(),
    };
  }
  let body: unknown;
  try {
    body = parseJson(text);
  } catch {
    return {
      ok: false,
      status: response.status,
      message: "the server's answer is not JSON",
      elapsedMs: elapsed(),
    };
  }
  if (!Array.isArray(body)) {
    return {
      ok: false,
      status: response.status,
      message: "the server's answer is not an array of rows",
      elapsedMs: elapsed(),
    };
  }
  const rows = body as Row[];
  return { ok: true, columns: columnsOf(rows), rows, elapsedMs: elapsed() };
}

/** The diagnostic of an error answer: the `error` of a JSON body, else the plain text. */
export function errorMessage(status: number, text: string): string {
  try {
    const body = JSON.parse(text) as { error?: unknown };
    if (typeof body.error === "string") return body.error;
  } catch {
    // Not JSON (a 405 is plain text): show the text itself.
  }
  const trimmed = text.trim();
  return trimmed === "" ? `HTTP ${status}` : trimmed;
}

/** Quotes a string as an SQL literal. */
export function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}
