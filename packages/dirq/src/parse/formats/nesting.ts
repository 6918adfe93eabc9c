import { stringEnd } from "../exact-json.js";
import { RowsError } from "./document-rows.js";

/**
 * How deep arrays and objects (JSON), flow sequences and mappings (YAML) may nest. The parsers
 * recurse, and JavaScript's stack ends somewhere between about 800 levels (YAML) and a few
 * thousand (JSON), depending on the Node version: a fixed limit under both makes the refusal
 * the same everywhere and names it. Python's json and PyYAML stop near 1,000 levels too.
 */
export const MAX_NESTING = 512;

/** The index after a YAML single-quoted string opening at `open` (`''` is a quote inside). */
function singleQuotedEnd(text: string, open: number): number {
  for (let at = open + 1; ;) {
    const close = text.indexOf("'", at);
    if (close === -1) return text.length;
    if (text[close + 1] !== "'") return close + 1;
    at = close + 2;
  }
}

/**
 * Refuses a text whose brackets (`[`, `{`) outside quoted strings nest deeper than
 * `MAX_NESTING`, naming the line where the limit is passed. `yaml`: YAML's single-quoted
 * strings and comments are skipped too. One pass, before the parser runs.
 */
export function refuseDeepNesting(text: string, firstLine: number, yaml: boolean): void {
  // Each level takes a bracket: a text of no more characters than the limit cannot pass it
  // (a JSON Lines line, typically), and is not scanned.
  if (text.length <= MAX_NESTING) return;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === 34) {
      i = stringEnd(text, i) - 1;
    } else if (yaml && code === 39) {
      i = singleQuotedEnd(text, i) - 1;
    } else if (yaml && code === 35 && (i === 0 || /\s/.test(text[i - 1] as string))) {
      const end = text.indexOf("\n", i);
      i = end === -1 ? text.length : end - 1;
    } else if (code === 91 || code === 123) {
      if (++depth > MAX_NESTING) {
        let line = firstLine;
        for (let at = text.indexOf("\n"); at !== -1 && at < i; at = text.indexOf("\n", at + 1))
          line++;
        throw new RowsError(
          `line ${line}: nested deeper than ${MAX_NESTING} levels (dirq's limit for arrays and objects)`,
        );
      }
    } else if (code === 93 || code === 125) {
      depth = Math.max(0, depth - 1);
    }
  }
}
