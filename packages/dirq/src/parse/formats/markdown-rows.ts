import type { HookRow } from "../hook-rows.js";
import { objectRow, RowsError } from "./document-rows.js";
import { storedPlainValue } from "./plain-values.js";
import { tomlTable } from "./toml-rows.js";
import { yamlDocuments } from "./yaml-rows.js";

/**
 * Markdown with front matter, as static-site generators read it: YAML between `---` lines, or
 * TOML between `+++` lines, at the very top of the file. Its keys are columns and `body` is the
 * rest of the text. A file without front matter (or whose opening `---` is never closed: then
 * it is a thematic break) has only `body`.
 */

interface FrontMatter {
  kind: "yaml" | "toml";
  text: string;
  body: string;
}

/** The text of each line up to its end of line (`\n` or `\r\n`), and where the next begins. */
function nextLine(text: string, start: number): { line: string; next: number } {
  const end = text.indexOf("\n", start);
  if (end === -1) return { line: text.slice(start), next: text.length };
  const line = text.slice(start, text.charCodeAt(end - 1) === 13 ? end - 1 : end);
  return { line, next: end + 1 };
}

function isFence(line: string, fence: string): boolean {
  return line.startsWith(fence) && line.slice(fence.length).trim() === "";
}

export function splitFrontMatter(text: string): FrontMatter | null {
  const first = nextLine(text, 0);
  const fence = isFence(first.line, "---") ? "---" : isFence(first.line, "+++") ? "+++" : null;
  if (fence === null || first.next === text.length) return null;
  for (let start = first.next; start < text.length;) {
    const { line, next } = nextLine(text, start);
    if (isFence(line, fence)) {
      return {
        kind: fence === "---" ? "yaml" : "toml",
        text: text.slice(first.next, start),
        body: text.slice(next),
      };
    }
    start = next;
  }
  return null;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return "a list";
  return value === null ? "null" : `a ${typeof value}`;
}

export function markdownRows(text: string, rows: HookRow[]): void {
  const front = splitFrontMatter(text);
  if (front === null) {
    rows.push(new Map([["body", text]]));
    return;
  }
  let data: unknown;
  if (front.kind === "toml") {
    data = tomlTable(front.text, 2);
  } else {
    const documents = yamlDocuments(front.text, 2);
    if (documents.length > 1) throw new RowsError("the front matter holds several YAML documents");
    data = documents[0] ?? null;
  }
  if (data === null || data === undefined) data = {};
  if (typeof data !== "object" || Array.isArray(data)) {
    throw new RowsError(`the front matter holds ${describe(data)}, expected key: value pairs`);
  }
  const row = objectRow(data as Record<string, unknown>, storedPlainValue);
  for (const key of row.keys()) {
    if (key.toLowerCase() === "body") {
      throw new RowsError(
        `the front matter has a key '${key}', which is the column that holds the text after it: rename the key`,
      );
    }
  }
  row.set("body", front.body);
  rows.push(row);
}
