/**
 * The built-in formats' differential comparison (diff-formats.test.ts) on any folder of real
 * files: every file of the format under the folder (hidden folders and files left out, as a
 * `**` glob leaves them out) is read by dirq in one run and by Python's parsers, and with
 * `--duckdb` also by DuckDB (JSON, JSON Lines, CSV, TSV), and every row, value and type is
 * compared.
 *
 *   node packages/dirq/dist/test/diff-formats-real.js <folder> <format> [--each a.b] [--duckdb]
 *        [--per-dir]
 *
 * <format>: json, jsonl, csv, tsv, yaml, toml, markdown or auto. Prints the disagreements (or
 * that there are none) and exits 1 when there is one. Build first (`npm run build -w dirq`).
 * `--per-dir`: one dirq run per folder (`./<folder>/*.<ext>`) instead of one for the whole
 * tree, for trees whose files have so many different columns that one table of all of them
 * would pass SQLite's column limit; taken by itself when the whole tree's table is too wide.
 */
import { lstatSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import {
  compareAnswer,
  type DirqAnswer,
  describeDisagreements,
  dirqAnswer,
  type Disagreement,
  duckdbConnection,
  duckdbCsvRows,
  duckdbJsonRows,
  EXTENSIONS,
  type Format,
  FORMATS,
  pythonReference,
  type ReferenceFile,
  sqlString,
} from "./format-diff.js";

function usage(message: string): never {
  process.stderr.write(
    `${message}\nusage: diff-formats-real.js <folder> <format> [--each a.b] [--duckdb] [--per-dir]\n`,
  );
  process.exit(2);
}

/**
 * Whether a symlink is a file as dirq lists one: its target a regular file inside the root
 * (docs/path-tables.md, "Symlinks and unusual files"); a broken link is no file.
 */
function linkedFileInside(root: string, path: string): boolean {
  try {
    const target = realpathSync(join(root, path));
    const inside = relative(realpathSync(root), target);
    return statSync(target).isFile() && !inside.startsWith("..") && !inside.startsWith("/");
  } catch {
    return false;
  }
}

/** Files under `root` (relative paths) whose extension is one of `extensions`. */
function findFiles(root: string, extensions: readonly string[]): string[] {
  const found: string[] = [];
  const visit = (dir: string) => {
    for (const name of readdirSync(join(root, dir)).sort()) {
      if (name.startsWith(".")) continue;
      const path = dir === "" ? name : `${dir}/${name}`;
      const stats = lstatSync(join(root, path));
      if (stats.isDirectory()) visit(path);
      else if (!extensions.some((ext) => name.endsWith(`.${ext}`))) continue;
      else if (stats.isFile() || (stats.isSymbolicLink() && linkedFileInside(root, path))) {
        found.push(path);
      }
    }
  };
  visit("");
  return found;
}

/** A folder's name as a glob matches it literally. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]{}\\]/g, (ch) => `\\${ch}`);
}

/** dirq's answer, one run per folder of `paths`, merged. */
async function perFolder(
  root: string,
  paths: readonly string[],
  pattern: string,
  format: string,
): Promise<DirqAnswer> {
  const folders = new Map<string, string[]>();
  for (const path of paths) {
    const dir = path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
    folders.set(dir, [...(folders.get(dir) ?? []), path]);
  }
  const merged: DirqAnswer = {
    code: 0,
    stderr: "",
    columns: [],
    rows: new Map(),
    skipped: new Map(),
  };
  for (const [dir, files] of folders) {
    const glob = `./${dir === "" ? "" : `${globEscape(dir)}/`}${pattern}`;
    const answer = await dirqAnswer(root, sqlString(glob), ["--parse", format], files);
    if (answer.code !== 0) merged.code = answer.code;
    merged.stderr += answer.stderr;
    // The union of the folders' columns, one spelling per name as SQLite compares them.
    const fold = (name: string) => name.replace(/[A-Z]/g, (c) => c.toLowerCase());
    const known = new Set(merged.columns.map(fold));
    for (const name of answer.columns) {
      if (!known.has(fold(name))) merged.columns.push(name);
      known.add(fold(name));
    }
    for (const [path, rows] of answer.rows) merged.rows.set(path, rows);
    for (const [path, reason] of answer.skipped) merged.skipped.set(path, reason);
  }
  return merged;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const [folder, format] = args;
  if (folder === undefined || format === undefined) usage("a folder and a format are needed");
  if (format !== "auto" && !(FORMATS as readonly string[]).includes(format)) {
    usage(`unknown format ${format}`);
  }
  const eachAt = args.indexOf("--each");
  const each = eachAt === -1 ? undefined : args[eachAt + 1];
  const withDuckdb = args.includes("--duckdb");
  const root = resolve(folder);
  const extensions =
    format === "auto"
      ? Object.values(EXTENSIONS).flat()
      : EXTENSIONS[format as keyof typeof EXTENSIONS];
  const paths = findFiles(root, extensions);
  if (paths.length === 0) usage(`no .${extensions.join("/.")} file under ${root}`);
  const pattern = `*.${extensions.length === 1 ? extensions[0] : `{${extensions.join(",")}}`}`;
  const glob = `./**/${pattern}`;

  const started = Date.now();
  const reference = pythonReference(root, format as Format, paths, each);
  const perDir = args.includes("--per-dir");
  let answer;
  if (each === undefined && perDir) {
    answer = await perFolder(root, paths, pattern, format);
  } else if (each === undefined) {
    try {
      answer = await dirqAnswer(root, sqlString(glob), ["--parse", format], paths);
    } catch (error) {
      // A statement naming every column of a very wide table is too long for one argument.
      if ((error as NodeJS.ErrnoException).code !== "E2BIG") throw error;
      process.stderr.write("the tree's table is too wide for one statement: one run per folder\n");
      answer = await perFolder(root, paths, pattern, format);
    }
  } else {
    // `each` is a config table's key: a config file outside the folder names the table.
    const { mkdtempSync, writeFileSync, rmSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const scratch = mkdtempSync(join(tmpdir(), "dirq-real-"));
    const config = join(scratch, "dirq.toml");
    writeFileSync(
      config,
      `[[table]]\nname = "t"\nglob = ${JSON.stringify(glob.slice(2))}\nformat = "${format}"\neach = ${JSON.stringify(each)}\n`,
    );
    try {
      answer = await dirqAnswer(root, "t", ["-c", config], paths);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }
  const disagreements: Disagreement[] = compareAnswer(reference, answer, {
    checkLines: ["json", "jsonl", "csv", "tsv"].includes(format),
  });

  if (withDuckdb && ["json", "jsonl", "csv", "tsv"].includes(format) && each === undefined) {
    const connection = await duckdbConnection();
    const duck = new Map<string, ReferenceFile>();
    for (const [path, file] of reference) {
      if (file.error !== undefined) continue;
      try {
        if (format === "json" || format === "jsonl") {
          duck.set(path, {
            path,
            rows: await duckdbJsonRows(connection, join(root, path), format),
          });
        } else {
          const text = readFileSync(join(root, path), "utf8").replace(/^\uFEFF/, "");
          if (new Set(text.match(/\r\n|\r|\n/g) ?? []).size > 1) continue;
          if ((file.columns ?? []).length === 0) continue;
          const read = await duckdbCsvRows(
            connection,
            join(root, path),
            format === "csv" ? "," : "\t",
            (file.columns ?? []).length,
          );
          duck.set(path, { path, ...read });
        }
      } catch (error) {
        disagreements.push({
          path,
          what: `DuckDB cannot read a file Python reads: ${(error as Error).message.split("\n")[0]}`,
        });
      }
    }
    for (const d of compareAnswer(duck, answer, { subset: true })) {
      disagreements.push({ ...d, what: `[duckdb] ${d.what.replaceAll("python", "duckdb")}` });
    }
  }

  const files = [...reference.values()];
  const rows = files.reduce((n, file) => n + (file.rows?.length ?? 0), 0);
  const refused = files.filter((file) => file.error !== undefined).length;
  const disagreeing = new Set(disagreements.map((d) => d.path)).size;
  process.stdout.write(
    `${root}: ${paths.length} ${format} files, ${rows} rows (Python), ${refused} files Python cannot read, ` +
      `dirq exit ${answer.code}, ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
  );
  if (disagreements.length === 0) {
    process.stdout.write("dirq agrees with every reference on every file.\n");
    return;
  }
  process.stdout.write(
    `${disagreeing} files disagree.\n${describeDisagreements(root, disagreements, Number(process.env.DIRQ_REPORT_LIMIT ?? 200))}\n`,
  );
  process.exitCode = 1;
}

await main();
