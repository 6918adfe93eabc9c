/**
 * The two CSV readers (native/dirq-csv.c and csv-parse, `DIRQ_NATIVE_FS=0`) on any folder of
 * real files: for the folder and each folder in it, its CSV and TSV files are read both ways
 * through the CLI, and every value with its type and every skipped file's reason are compared
 * (native-csv.test.ts does the same on seeded files).
 *
 *   node packages/dirq/dist/test/compare-csv-readers.js <folder>
 *
 * Prints each group that differs and a count, and exits 1 when one does. Build first
 * (`npm run build -w dirq`).
 */
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { readdirSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { DIRQ_BIN } from "./helpers.js";

/** Columns a compared statement names at most: each takes about 150 bytes of its text. */
const MAX_COLUMNS = 600;

function dirq(cwd: string, args: string[], env: Record<string, string> = {}) {
  return spawnSync(process.execPath, [DIRQ_BIN, ...args], {
    cwd,
    env: { ...process.env, DIRQ_PROGRESS: "never", ...env },
    encoding: "utf8",
    maxBuffer: 1 << 30,
  });
}

/** Skipped files' reasons, the line of a quote left open aside (each reader names its own). */
function skipped(stderr: string): string {
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("dirq: skipped "))
    .map((line) => line.replace(/: line \d+: (a quoted field is still open)/, ": line N: $1"))
    .sort()
    .join("\n");
}

/** Every cell of the table with its type, exactly, in file and row order. */
function typedQuery(columns: readonly string[], table: string): string {
  const cells = columns.map((column) => {
    const c = `"${column.replaceAll('"', '""')}"`;
    return `typeof(${c}) || ':' || CASE typeof(${c}) WHEN 'real' THEN printf('%!.17g', ${c}) ELSE quote(${c}) END`;
  });
  return `SELECT ${["_dirq_file_path", "_dirq_row_index", ...cells].join(", ")} FROM ${table} ORDER BY 1, 2`;
}

function differs(native: SpawnSyncReturns<string>, js: SpawnSyncReturns<string>): string | null {
  if (native.status !== js.status)
    return `exit ${native.status} natively, ${js.status} by csv-parse`;
  if (skipped(native.stderr) !== skipped(js.stderr)) {
    return `skipped files:\n  native: ${skipped(native.stderr)}\n  csv-parse: ${skipped(js.stderr)}`;
  }
  if (native.stdout === js.stdout) return null;
  const a = native.stdout.split("\n");
  const b = js.stdout.split("\n");
  const line = a.findIndex((text, i) => text !== b[i]);
  return `rows differ at line ${line}:\n  native: ${a[line]?.slice(0, 300)}\n  csv-parse: ${b[line]?.slice(0, 300)}`;
}

const folder = process.argv[2];
if (folder === undefined || process.argv.length > 3) {
  process.stderr.write("usage: compare-csv-readers.js <folder>\n");
  process.exit(2);
}
const root = resolve(folder);
const groups = [
  ".",
  ...readdirSync(root).filter((name) => statSync(join(root, name)).isDirectory()),
];
let compared = 0;
let different = 0;
for (const group of groups) {
  for (const format of ["csv", "tsv"]) {
    const table = group === "." ? `'./*.${format}'` : `'./${group}/**/*.${format}'`;
    const args = ["--parse", format, "--no-ignore", "--format", "tsv"];
    const first = dirq(root, [`SELECT * FROM ${table} LIMIT 1`, ...args.slice(0, 3)]);
    if (first.status !== 0 && first.status !== 23) continue; // no such files
    const columns = Object.keys((JSON.parse(first.stdout) as object[])[0] ?? {});
    if (columns.length > MAX_COLUMNS) {
      process.stdout.write(`${group} ${format}: left out, ${columns.length} columns\n`);
      continue;
    }
    const sql = typedQuery(columns, table);
    const native = dirq(root, [sql, ...args]);
    const js = dirq(root, [sql, ...args], { DIRQ_NATIVE_FS: "0" });
    compared++;
    const difference = differs(native, js);
    if (difference !== null) {
      different++;
      process.stdout.write(`${group} ${format}: ${difference}\n`);
    }
  }
}
process.stdout.write(`${root}: ${compared} groups compared, ${different} differ\n`);
process.exitCode = different > 0 ? 1 : 0;
