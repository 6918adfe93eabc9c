import { readFileSync } from "node:fs";
import { packageFile } from "./package-files.js";

let version: string | undefined;

/** The package version, read from package.json (once) so there is one source of truth. */
export function readVersion(): string {
  version ??= (JSON.parse(readFileSync(packageFile("package.json"), "utf8")) as { version: string })
    .version;
  return version;
}
