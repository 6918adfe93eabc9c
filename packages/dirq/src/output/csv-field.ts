/**
 * CSV as `sqlite3 -csv -header` writes it: fields separated by `,`, quoted with `"` (a quote
 * inside doubled) exactly where the sqlite3 shell quotes them, records ending in `\n`. Shared
 * by `dirq --format csv` (csv.ts) and the web console's CSV export (web/format.ts), so both
 * write the same bytes; it uses nothing of Node's, as the console's bundle takes it as it is.
 */

/**
 * Text that sqlite3's `.mode csv` quotes: empty (so it differs from NULL), or holding a comma,
 * a quote, an apostrophe, a space or control character, or anything beyond ASCII.
 */
const QUOTED = /^$|[\u0000-\u0020"',\u007f-\uffff]/;

/** One field: `null` (SQL NULL) is an empty field; text is quoted where sqlite3 quotes it. */
export function csvField(text: string | null): string {
  if (text === null) return "";
  return QUOTED.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** One record (a header or a row) with its line end. */
export function csvRecord(fields: readonly (string | null)[]): string {
  return `${fields.map(csvField).join(",")}\n`;
}
