import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";

/** Every error code is documented (docs/errors.md), and the docs name no code that is gone. */

const source = readFileSync(new URL("../../../src/errors.ts", import.meta.url), "utf8");
const docs = readFileSync(new URL("../../../docs/errors.md", import.meta.url), "utf8");
const server = readFileSync(new URL("../../../src/server/app.ts", import.meta.url), "utf8");

function codesInSource(): string[] {
  const union = /export type DirqErrorCode =([^;]+);/.exec(source)?.[1] ?? "";
  return [...union.matchAll(/"([A-Z_]+)"/g)].map((match) => match[1] as string);
}

function codesInDocs(): string[] {
  return [...docs.matchAll(/^### ([A-Z_]+)$/gm)].map((match) => match[1] as string);
}

/** The server's statuses by code (STATUS_BY_CODE in src/server/app.ts). */
function statusesInServer(): Map<string, string> {
  const table = /const STATUS_BY_CODE[^{]*\{([^}]*)\}/.exec(server)?.[1] ?? "";
  return new Map(
    [...table.matchAll(/([A-Z_]+): (\d{3})/g)].map((m) => [m[1] as string, m[2] as string]),
  );
}

/** The summary table's HTTP column by code: a status, or `-` (a request never meets it). */
function statusesInDocs(): Map<string, string> {
  const rows = docs.matchAll(/^\| \[([A-Z_]+)\]\(#[a-z_]+\) *\| *(\S+) *\|/gm);
  return new Map([...rows].map((m) => [m[1] as string, m[2] as string]));
}

describe("error codes and their docs", () => {
  it("finds the codes", () => {
    assert.ok(codesInSource().length >= 30, codesInSource().join(" "));
  });

  it("documents every code of src/errors.ts in docs/errors.md", () => {
    const documented = new Set(codesInDocs());
    assert.deepEqual(
      codesInSource().filter((code) => !documented.has(code)),
      [],
    );
  });

  it("gives every code a row of the summary table, with the server's HTTP status", () => {
    const byServer = statusesInServer();
    assert.ok(byServer.size >= 4, [...byServer].join(" "));
    const documented = statusesInDocs();
    assert.deepEqual([...documented.keys()].sort(), codesInSource().sort());
    for (const [code, status] of documented) {
      assert.equal(status, byServer.get(code) ?? (status === "-" ? "-" : "400"), code);
    }
  });

  it("documents no code that does not exist", () => {
    const known = new Set(codesInSource());
    assert.deepEqual(
      codesInDocs().filter((code) => !known.has(code)),
      [],
    );
  });
});
