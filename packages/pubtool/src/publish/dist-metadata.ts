import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { unzipSync } from "fflate";
import { extract } from "tar-stream";
import { PubtoolError } from "../errors.js";

/** Core metadata fields that may appear more than once, with the upload API's form name. */
const MULTI_FIELDS: Record<string, string> = {
  classifier: "classifiers",
  "project-url": "project_urls",
  platform: "platform",
  "supported-platform": "supported_platform",
  "requires-dist": "requires_dist",
  "provides-dist": "provides_dist",
  "obsoletes-dist": "obsoletes_dist",
  "requires-external": "requires_external",
  "provides-extra": "provides_extra",
  "license-file": "license_file",
  dynamic: "dynamic",
};

/** Single-use fields the upload API takes (form name = lower case, `-` → `_`). */
const SINGLE_FIELDS = new Set([
  "metadata-version",
  "name",
  "version",
  "summary",
  "description",
  "description-content-type",
  "keywords",
  "home-page",
  "download-url",
  "author",
  "author-email",
  "maintainer",
  "maintainer-email",
  "license",
  "license-expression",
  "requires-python",
]);

/** A distribution's core metadata as upload form fields: `[form name, value]`, in file order. */
export type MetadataFields = [string, string][];

/**
 * Parses core metadata (`METADATA` / `PKG-INFO`, an email-header format): `Key: value` lines,
 * continuation lines indented, and the description either in `Description:` or as the body
 * after the first blank line (metadata 2.1+).
 */
export function parseCoreMetadata(text: string): MetadataFields {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const headers: [string, string][] = [];
  let i = 0;
  for (; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line === "") break;
    const last = headers[headers.length - 1];
    if (/^[ \t]/.test(line) && last) {
      // Continuation: `Description:` in older metadata indents with 8 spaces or `|`.
      const stripped = /^ {8}\|?/.test(line)
        ? line.replace(/^ {8}\|?/, "")
        : line.replace(/^[ \t]+/, "");
      last[1] += `\n${stripped}`;
      continue;
    }
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    headers.push([line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
  }
  const body = lines
    .slice(i + 1)
    .join("\n")
    .replace(/\n+$/, "\n");
  const fields: MetadataFields = [];
  for (const [key, value] of headers) {
    const lower = key.toLowerCase();
    const multi = MULTI_FIELDS[lower];
    if (multi !== undefined) fields.push([multi, value]);
    else if (SINGLE_FIELDS.has(lower)) fields.push([lower.replace(/-/g, "_"), value]);
  }
  if (body.trim() !== "" && !fields.some(([name]) => name === "description")) {
    fields.push(["description", body]);
  }
  return fields;
}

/** The first value of `name` in `fields`. */
export function fieldValue(fields: MetadataFields, name: string): string | undefined {
  return fields.find(([key]) => key === name)?.[1];
}

function wheelMetadata(file: string): string {
  let entries: Record<string, Uint8Array>;
  try {
    entries = unzipSync(readFileSync(file), {
      filter: (entry) => /^[^/]+\.dist-info\/METADATA$/.test(entry.name),
    });
  } catch (error) {
    throw new PubtoolError(
      "PUBLISH_FAILED",
      `${basename(file)}: not a readable wheel (zip): ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const found = Object.values(entries)[0];
  if (found === undefined) {
    throw new PubtoolError(
      "PUBLISH_FAILED",
      `${basename(file)}: no *.dist-info/METADATA in the wheel; rebuild it (python -m build)`,
    );
  }
  return Buffer.from(found).toString("utf8");
}

async function sdistMetadata(file: string): Promise<string> {
  const parser = extract();
  const found = new Promise<string | null>((resolve, reject) => {
    let text: string | null = null;
    parser.on("entry", (header, stream, next) => {
      const chunks: Buffer[] = [];
      // `<name>-<version>/PKG-INFO`: the top-level one, not a vendored package's.
      const wanted = /^[^/]+\/PKG-INFO$/.test(header.name.replace(/^\.\//, "")) && text === null;
      stream.on("data", (chunk: unknown) => {
        if (wanted) chunks.push(chunk as Buffer);
      });
      stream.on("end", () => {
        if (wanted) text = Buffer.concat(chunks).toString("utf8");
        next();
      });
      stream.resume();
    });
    parser.on("finish", () => resolve(text));
    parser.on("error", reject);
  });
  const gunzip = createGunzip();
  gunzip.on("error", (error) => parser.destroy(error));
  Readable.from([readFileSync(file)])
    .pipe(gunzip)
    .pipe(parser);
  let text: string | null;
  try {
    text = await found;
  } catch (error) {
    throw new PubtoolError(
      "PUBLISH_FAILED",
      `${basename(file)}: not a readable sdist (.tar.gz): ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (text === null) {
    throw new PubtoolError(
      "PUBLISH_FAILED",
      `${basename(file)}: no PKG-INFO at the top of the sdist; rebuild it (python -m build --sdist)`,
    );
  }
  return text;
}

/**
 * The core metadata of a built distribution: a wheel's `*.dist-info/METADATA` or an sdist's
 * `<name>-<version>/PKG-INFO`, checked against the package's name and version.
 */
export async function readDistributionMetadata(
  file: string,
  expected: { name: string; version: string },
): Promise<MetadataFields> {
  const text = file.endsWith(".whl") ? wheelMetadata(file) : await sdistMetadata(file);
  const fields = parseCoreMetadata(text);
  const normalize = (name: string) => name.toLowerCase().replace(/[-_.]+/g, "-");
  const name = fieldValue(fields, "name");
  const version = fieldValue(fields, "version");
  if (name === undefined || version === undefined) {
    throw new PubtoolError(
      "PUBLISH_FAILED",
      `${basename(file)}: its metadata has no Name or Version; rebuild it`,
    );
  }
  if (normalize(name) !== normalize(expected.name) || version !== expected.version) {
    throw new PubtoolError(
      "PUBLISH_FAILED",
      `${basename(file)}: its metadata says ${name} ${version}, but pyproject.toml says ${expected.name} ${expected.version}; rebuild the distributions`,
    );
  }
  return fields;
}
