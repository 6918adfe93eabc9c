#!/usr/bin/env node
// Benchmarks dirq's `--format table` against `--format json` on the same rows: every column
// of a generated 100k-file tree, and a wide result (200 columns of text, numbers, NULLs and
// some non-ASCII text) from a recursive CTE. Target: table within 1.5x the JSON time. See
// bench/README.md.
import { existsSync, readdirSync } from "node:fs";
import { loadavg } from "node:os";
import {
  addRatios,
  benchOptionsUsage,
  DIRQ_BIN,
  DIRQ_ENV,
  fileTreeMarker,
  fileTreePaths,
  formatNumber,
  formatRatio,
  generateFileTree,
  log,
  markerMatches,
  parseBenchOptions,
  positiveInteger,
  renderTable,
  requireDirqBuilt,
  resultToJson,
  timeCommands,
  verdict,
} from "./lib.mjs";

const TABLE_VS_JSON = 1.5;

const USAGE = `usage: node bench/dirq-table.mjs [options]

Times \`dirq query --format table\` against \`--format json\` on the same statement.

  --runs N      timed runs of each command (default 3)
  --wide-rows N rows of the 200-column case (default 20000)
${benchOptionsUsage(14, "the 100k-file tree (shared with dirq-walk)")}`;

const options = parseBenchOptions(
  process.argv.slice(2),
  { runs: { type: "string", default: "3" }, "wide-rows": { type: "string", default: "20000" } },
  USAGE,
);
const runs = positiveInteger(options.runs, "--runs");
const wideRows = positiveInteger(options["wide-rows"], "--wide-rows");
requireDirqBuilt();

/** The same tree as bench/dirq-walk.mjs's `100k`, reused when it is there. */
function ensureTree(tree) {
  const { root, marker } = fileTreePaths(options.dir, "files", tree);
  const complete =
    markerMatches(marker, fileTreeMarker(tree)) &&
    existsSync(root) &&
    readdirSync(root).length === tree.dirs;
  if (complete) {
    log(`tree ${tree.name}: reusing ${root}`);
    return root;
  }
  log(`tree ${tree.name}: generating ${tree.files} files in ${tree.dirs} directories at ${root}`);
  generateFileTree(root, marker, tree);
  return root;
}

/** 200 columns: a quarter each text, integers, reals, and text that is NULL or not ASCII. */
function wideStatement(rows) {
  const columns = Array.from({ length: 200 }, (_, i) => {
    switch (i % 4) {
      case 0:
        return `printf('name-%d-%d', x, ${i}) AS t${i}`;
      case 1:
        return `x * ${i + 1} AS i${i}`;
      case 2:
        return `x / ${i + 0.5} AS r${i}`;
      default:
        return `CASE WHEN x % 3 = 0 THEN NULL ELSE printf('é日本-%d', x) END AS u${i}`;
    }
  });
  return `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < ${rows}) SELECT ${columns.join(", ")} FROM n`;
}

function commands(sql, rows) {
  const checkJson = (stdout) => {
    const count = JSON.parse(stdout).length;
    return count === rows ? null : `${count} rows, expected ${rows}`;
  };
  const checkTable = (stdout) => {
    const expected = `(${rows} ${rows === 1 ? "row" : "rows"})\n`;
    return stdout.endsWith(expected) ? null : `does not end with ${JSON.stringify(expected)}`;
  };
  return [
    {
      label: "dirq --format json",
      short: "json",
      kind: "baseline",
      executable: process.execPath,
      args: [DIRQ_BIN, sql, "--format", "json"],
      env: DIRQ_ENV,
      check: checkJson,
    },
    {
      label: "dirq --format table",
      short: "table",
      kind: "table",
      executable: process.execPath,
      args: [DIRQ_BIN, sql, "--format", "table"],
      env: DIRQ_ENV,
      check: checkTable,
    },
  ];
}

const tree = { name: "100k", files: 100_000, dirs: 1_000 };
const treeRoot = ensureTree(tree);
const cases = [
  {
    name: `every column of the 100k-file tree (${tree.files} rows)`,
    cwd: treeRoot,
    commands: commands("SELECT * FROM './'", tree.files),
  },
  {
    name: `200 columns x ${wideRows} rows (a recursive CTE)`,
    cwd: treeRoot,
    commands: commands(wideStatement(wideRows), wideRows),
  },
];

const load = loadavg().map((value) => value.toFixed(2));
log(`load average: ${load.join(" ")}`);
const report = [];
for (const benchCase of cases) {
  log(`case: ${benchCase.name}`);
  const results = timeCommands(benchCase.commands, benchCase.cwd, runs, { onProgress: log });
  addRatios(results, "baseline");
  const table = results.find((result) => result.command.kind === "table");
  report.push({
    name: benchCase.name,
    results,
    target: verdict(table?.ratio ?? null, TABLE_VS_JSON, "x"),
  });
}

if (options.json) {
  process.stdout.write(
    `${JSON.stringify(
      {
        loadAverage: load.map(Number),
        cases: report.map(({ name, results, target }) => ({
          name,
          results: results.map((result) => resultToJson(result)),
          tableVsJson: target,
        })),
      },
      null,
      2,
    )}\n`,
  );
} else {
  const columns = [
    { header: "median ms", cell: (result) => formatNumber(result.medianMs, 0) },
    { header: "min ms", cell: (result) => formatNumber(result.minMs, 0) },
    { header: "vs json", cell: (result) => formatRatio(result.ratio) },
  ];
  const out = [`load average at start: ${load.join(" ")}`];
  for (const { name, results, target } of report) {
    out.push("", renderTable(name, columns, results));
    out.push(`table <= ${TABLE_VS_JSON}x json: ${target.text}`);
  }
  process.stdout.write(`${out.join("\n")}\n`);
}
process.exitCode = report.every(({ target }) => target.met !== false) ? 0 : 1;
