/**
 * Malformed files of several megabytes fail as fast as well-formed ones are read, and name
 * their line: a CSV quote left open must not make each piece of the file be searched again
 * from its start. The bound below is a sanity bound only, far above a linear read and far
 * below a quadratic one; timings are bench/dirq-malformed.mjs's.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { closeSync, openSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";
import { DIRQ_BIN, tempTree } from "./helpers.js";

/** Far above a run of the files below (about a second), far below the quadratic search's. */
const BOUND_MS = 60_000;

/** Writes `name` in `root`: `head`, then `record(i)` up to about `bytes`, then `tail`. */
function writeLarge(
  root: string,
  name: string,
  bytes: number,
  parts: { head: string; record: (i: number) => string; tail: string },
): number {
  const fd = openSync(join(root, name), "w");
  let chunk = parts.head;
  let written = 0;
  let lines = 0;
  for (let i = 0; written + chunk.length < bytes; i++) {
    const record = parts.record(i);
    chunk += record;
    lines += record.split("\n").length - 1;
    if (chunk.length >= 1 << 20) {
      written += writeSync(fd, chunk);
      chunk = "";
    }
  }
  writeSync(fd, chunk + parts.tail);
  closeSync(fd);
  return lines;
}

/** Runs `dirq` over one file, stopped after `BOUND_MS`: its exit code and stderr. */
function runBounded(
  root: string,
  file: string,
  format: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; stderr: string; killed: boolean }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [DIRQ_BIN, `SELECT count(*) FROM './${file}'`, "--parse", format],
      {
        cwd: root,
        env: { ...process.env, DIRQ_PROGRESS: "never", ...env },
        timeout: BOUND_MS,
        killSignal: "SIGKILL",
      },
      (error, _stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : null;
        resolve({ code, stderr, killed: error?.killed === true });
      },
    );
  });
}

async function assertSkipped(
  root: string,
  file: string,
  format: string,
  reason: RegExp,
  env: Record<string, string> = {},
): Promise<void> {
  const result = await runBounded(root, file, format, env);
  assert.equal(result.killed, false, `${file} still running after ${BOUND_MS} ms`);
  assert.equal(result.code, 23, result.stderr);
  assert.match(result.stderr, new RegExp(`skipped ${file}: ${reason.source}`));
}

const MB = 1 << 20;
const OPEN = /a quoted field is still open at the end of the file/;

describe("a quote left open in a large CSV or TSV file", () => {
  const root = tempTree({});
  const csvRecord = (i: number) => (i === 1 ? `${i},"open,1\n` : `${i},name ${i},${i * 1.5}\n`);
  writeLarge(root, "open.csv", 16 * MB, { head: "id,name,n\n", record: csvRecord, tail: "" });
  const tsvRecord = (i: number) => `${i}\tname ${i}\t${i * 1.5}\n`;
  const tsvLines = writeLarge(root, "cut.tsv", 12 * MB, {
    head: "id\tname\tn\n",
    record: tsvRecord,
    tail: '-1\t"cut sho',
  });

  test("is the file's error, naming the line the quote opened on", async () => {
    await assertSkipped(root, "open.csv", "csv", new RegExp(`line 3: ${OPEN.source}`));
  });

  test("a TSV file cut short inside a quoted field: its last line", async () => {
    const line = tsvLines + 2;
    await assertSkipped(root, "cut.tsv", "tsv", new RegExp(`line ${line}: ${OPEN.source}`));
  });

  test("read by the JavaScript reader (on worker threads), as fast", async () => {
    await assertSkipped(root, "open.csv", "csv", new RegExp(`line \\d+: ${OPEN.source}`), {
      DIRQ_NATIVE_FS: "0",
    });
  });
});

describe("other formats broken at their end", () => {
  const root = tempTree({});
  const object = (i: number) => `{"id": ${i}, "name": "name ${i}", "n": ${i * 1.5}}`;
  const jsonLines = writeLarge(root, "cut.json", 4 * MB, {
    head: "[\n",
    record: (i) => `${object(i)},\n`,
    tail: '{"id": -1, "na',
  });
  const jsonlLines = writeLarge(root, "broken.jsonl", 12 * MB, {
    head: "",
    record: (i) => `${object(i)}\n`,
    tail: '{"id": -1, "na\n',
  });

  test("a JSON text cut short names its line", async () => {
    await assertSkipped(root, "cut.json", "json", new RegExp(`line ${jsonLines + 2}, column`));
  });

  test("a JSON Lines file's broken last line is named", async () => {
    await assertSkipped(
      root,
      "broken.jsonl",
      "jsonl",
      new RegExp(`line ${jsonlLines + 1}, column`),
    );
  });
});
