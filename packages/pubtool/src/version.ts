import { readFileSync } from "node:fs";

let cached: string | null = null;

/** The version from pubtool's own package.json. */
export function readVersion(): string {
  if (cached === null) {
    const url = new URL("../../package.json", import.meta.url);
    cached = (JSON.parse(readFileSync(url, "utf8")) as { version: string }).version;
  }
  return cached;
}
