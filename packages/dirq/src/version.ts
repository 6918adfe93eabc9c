import { readFileSync } from "node:fs";

/** The package version, read from package.json so there is one source of truth. */
export function readVersion(): string {
  const url = new URL("../../package.json", import.meta.url);
  const manifest = JSON.parse(readFileSync(url, "utf8")) as { version: string };
  return manifest.version;
}
