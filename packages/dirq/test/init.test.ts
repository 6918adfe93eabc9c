import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { type Cell, type Format, pythonReference, pythonReferenceMissing } from "./format-diff.js";
import {
  DIRQ_BIN,
  makeTree,
  removeTree,
  type RunResult,
  runDirq,
  type TreeSpec,
} from "./helpers.js";

/* ------------------------------------------------------------------------------------------ */
/* Local helpers                                                                               */
/* ------------------------------------------------------------------------------------------ */

type Row = Record<string, unknown>;

/** A folder of JSON files: an object, an array of objects (nested), and a non-JSON file. */
const JSON_FOLDER: TreeSpec = {
  "a.json": '{"title":"a","n":1}',
  "sub/b.json": '[{"title":"b","n":2},{"title":"c","n":3}]',
  "notes.txt": "not json",
};

/** Only the folder holding `node`: the starter hook must need nothing else (no jq, no sh). */
const NODE_ONLY_PATH = { PATH: dirname(process.execPath) };

/** Runs `fn` over a fresh tree and removes it afterwards. */
async function withTree(tree: TreeSpec, fn: (root: string) => Promise<void>): Promise<void> {
  const root = makeTree(tree);
  try {
    await fn(root);
  } finally {
    removeTree(root);
  }
}

function run(cwd: string, args: readonly string[], env?: Record<string, string>) {
  return runDirq(args, { cwd, env });
}

/** Runs `dirq init ...` expecting exit 0. */
async function init(cwd: string, ...args: string[]): Promise<RunResult> {
  const result = await run(cwd, ["init", ...args]);
  assert.equal(result.code, 0, `dirq init ${args.join(" ")} failed: ${result.stderr}`);
  return result;
}

/** Queries with the given config using a PATH that holds only node; expects exit 0, no stderr. */
async function queryWith(cwd: string, config: string, sql: string): Promise<Row[]> {
  const result = await run(cwd, ["query", "-c", config, sql], NODE_ONLY_PATH);
  assert.equal(result.code, 0, `query failed: ${result.stderr}`);
  assert.equal(result.stderr, "");
  const rows = JSON.parse(result.stdout) as unknown;
  assert.ok(Array.isArray(rows), result.stdout);
  return rows as Row[];
}

/** Exit 1, nothing on stdout, a `dirq: ` diagnostic containing every needle. */
function assertFailure(result: RunResult, ...needles: (string | RegExp)[]): void {
  assert.equal(result.code, 1, `expected exit 1, got ${result.code}; stderr: ${result.stderr}`);
  assert.equal(result.stdout, "");
  assert.match(result.stderr, /^dirq: \S/);
  assert.doesNotMatch(result.stderr, /internal error|^\s+at /m, result.stderr);
  for (const needle of needles) {
    if (typeof needle === "string") {
      assert.ok(result.stderr.includes(needle), `stderr lacks ${needle}: ${result.stderr}`);
    } else {
      assert.match(result.stderr, needle);
    }
  }
}

/**
 * The starter shape: one [[table]] whose name, glob, format (and schema, when asked) are not
 * comments, and an on-file hook only as a commented example.
 */
function assertStarterShape(
  text: string,
  options: { schema: boolean; name?: string; format?: string; glob?: string },
): void {
  assert.equal(text.match(/^\[\[table\]\]$/gm)?.length, 1, "exactly one [[table]]");
  assert.ok(text.includes(`\nname = "${options.name ?? "records"}"\n`), text);
  if (options.glob === undefined) assert.match(text, /^glob = "/m);
  else assert.ok(text.includes(`\nglob = ${JSON.stringify(options.glob)}\n`), text);
  assert.ok(text.includes(`\nformat = "${options.format ?? "json"}"\n`), text);
  assert.doesNotMatch(text, /^on-file = /m, "no hook runs: the format reads the files");
  assert.match(text, /^# on-file = '''node -e /m, "a commented hook for what no format reads");
  if (options.schema) assert.match(text, /^schema = \{/m);
  else assert.doesNotMatch(text, /^schema = /m);
  assert.match(text, /^# /m, "comments that teach the format");
}

/** The config with its commented example table (the on-file hook) uncommented. */
function withHookTable(text: string): string {
  const start = text.lastIndexOf("\n# [[table]]\n");
  assert.ok(start >= 0, text);
  const example = text
    .slice(start + 1)
    .split("\n")
    .map((line) =>
      /^# (\[\[table\]\]|name = |glob = |on-file = )/.test(line) ? line.slice(2) : line,
    )
    .join("\n");
  return text.slice(0, start + 1) + example;
}

/**
 * The spec's starter for a folder with no data: one [[table]] whose glob, schema and on-file
 * hook are all active, and no format.
 */
function assertHookStarter(text: string): void {
  assert.equal(text.match(/^\[\[table\]\]$/gm)?.length, 1, "exactly one [[table]]");
  assert.ok(text.includes('\nname = "records"\n'), text);
  assert.ok(text.includes('\nglob = "**/*.jsonl"\n'), text);
  assert.match(text, /^schema = \{ title = "TEXT", author = "TEXT", words = "INTEGER" \}$/m);
  assert.match(text, /^on-file = '''node -e "[^\n]*" \{path\}'''$/m);
  assert.doesNotMatch(text, /^format = /m, "the hook reads the files");
}

/** Runs `dirq init` in a fresh tree and returns the config it wrote. */
async function initText(root: string): Promise<string> {
  await init(root);
  return readFileSync(join(root, ".dirq.toml"), "utf8");
}

/* ------------------------------------------------------------------------------------------ */
/* The schema init should infer, from Python's reading of the same files                      */
/* ------------------------------------------------------------------------------------------ */

/**
 * The files under `folder` with `extension`, in the order dirq walks a tree: by name (UTF-16
 * order, as JavaScript sorts) within each folder, a folder's contents where its name sorts;
 * dot-names skipped, as `*` and `**` skip them.
 */
function walkOrder(root: string, folder: string, extension: string): string[] {
  const found: string[] = [];
  const visit = (relative: string): void => {
    for (const name of readdirSync(join(root, relative)).sort()) {
      if (name.startsWith(".")) continue;
      const path = relative === "" ? name : `${relative}/${name}`;
      if (statSync(join(root, path)).isDirectory()) visit(path);
      else if (name.endsWith(`.${extension}`)) found.push(path);
    }
  };
  visit(folder);
  return found;
}

type ColumnType = "INTEGER" | "REAL" | "TEXT" | "BLOB";

/** A value's SQLite type; a date and a nested array or object are stored as text. */
function cellType(cell: Cell): ColumnType | null {
  if (cell === null) return null;
  if (cell[0] === "integer") return "INTEGER";
  if (cell[0] === "blob") return "BLOB";
  return cell[0] === "real" ? "REAL" : "TEXT";
}

/**
 * One type for values of both: numbers with a fraction make REAL, bytes BLOB (which converts
 * nothing), text TEXT.
 */
function widened(a: ColumnType | null, b: ColumnType | null): ColumnType | null {
  if (a === null || a === b) return b ?? a;
  if (b === null) return a;
  if (a === "BLOB" || b === "BLOB") return "BLOB";
  return a === "TEXT" || b === "TEXT" ? "TEXT" : "REAL";
}

/**
 * The `schema` line for every key of every row Python's parsers read from `paths` (in that
 * order; test/format-reference.py): first seen first, names compared without ASCII case as
 * SQLite compares them, each typed to hold all its values (only NULLs: TEXT).
 */
function expectedSchema(root: string, format: Format, paths: readonly string[]): string {
  const reference = pythonReference(root, format, paths);
  const columns = new Map<string, { name: string; type: ColumnType | null }>();
  for (const path of paths) {
    const rows = reference.get(path)?.rows;
    assert.ok(rows, `Python could not read ${path}: ${reference.get(path)?.error}`);
    for (const row of rows) {
      for (const [name, cell] of row) {
        const column = columns.get(name.toLowerCase()) ?? { name, type: null };
        column.type = widened(column.type, cellType(cell));
        columns.set(name.toLowerCase(), column);
      }
    }
  }
  const pairs = [...columns.values()].map(({ name, type }) => `${name} = "${type ?? "TEXT"}"`);
  return `schema = { ${pairs.join(", ")} }`;
}

/** Why the Python reference cannot run here, or `false`. */
const NO_PYTHON = pythonReferenceMissing();

/** The active `schema` line of a starter. */
function schemaLine(text: string): string {
  const line = /^schema = .*$/m.exec(text)?.[0];
  assert.ok(line, `no active schema:\n${text}`);
  return line;
}

/** A site's docs as Jekyll's are: the keys of the first 20 files are not all of them. */
function jekyllLikeTree(): TreeSpec {
  const tree: TreeSpec = { "README.txt": "not data\n" };
  for (let i = 0; i < 25; i++) {
    const page = String(i).padStart(2, "0");
    tree[`docs/_docs/page-${page}.md`] =
      `---\ntitle: Page ${i}\npermalink: /docs/${i}/\n---\nText.\n`;
  }
  for (let i = 1; i <= 6; i++) {
    tree[`docs/_posts/2024-01-0${i}-release.md`] =
      `---\ntitle: Release ${i}\nauthor: ann\ndate: 2024-01-0${i}\n` +
      `categories: [release]\nversion: ${i}\n---\nNews.\n`;
  }
  tree["docs/_tutorials/one.md"] = "---\ntitle: One\nAuthor: bo\nversion: 4.5\n---\nSteps.\n";
  tree["docs/index.md"] = "---\nlayout: home\ncategory: \n---\n";
  return tree;
}

/** JSON files whose 20 first hold integers where later ones hold reals, text or nothing. */
function widenedJsonTree(): TreeSpec {
  const tree: TreeSpec = {};
  for (let i = 0; i < 30; i++) {
    const ratio = i === 25 ? "2.5" : String(i);
    const code = i === 22 ? '"A1"' : String(i);
    const extra = [
      i === 5 ? ', "tags": ["a", 1]' : "",
      i === 21 ? ', "tags": {"k": 1}' : "",
      i === 23 ? ', "big": 9007199254740993' : "",
      i === 24 ? ', "whole": 3.0' : i === 26 ? ', "whole": 4' : "",
      i === 29 ? ', "late": 7' : "",
    ].join("");
    const row = `{"id": ${i}, "ratio": ${ratio}, "code": ${code}, "flag": ${i % 2 === 0}, "empty": null${extra}}`;
    const name = `data/f${String(i).padStart(2, "0")}.json`;
    tree[name] = i === 28 ? `[${row}, {"id": 280, "Code": "x", "more": true}]` : row;
  }
  return tree;
}

/* ------------------------------------------------------------------------------------------ */
/* Documented init sequences                                                                   */
/* ------------------------------------------------------------------------------------------ */

const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));

/** The READMEs and docs pages a reader follows. */
function documentationFiles(): string[] {
  const docs = join(PACKAGE_DIR, "docs");
  return [
    join(PACKAGE_DIR, "..", "..", "README.md"),
    join(PACKAGE_DIR, "README.md"),
    ...readdirSync(docs)
      .filter((name) => name.endsWith(".md"))
      .map((name) => join(docs, name)),
  ];
}

/** Every ```sh block that runs `dirq init` (not a usage synopsis), with where it is. */
function documentedInitBlocks(): { where: string; commands: string }[] {
  const blocks: { where: string; commands: string }[] = [];
  for (const path of documentationFiles()) {
    const text = readFileSync(path, "utf8");
    for (const match of text.matchAll(/^```(?:sh|bash)\n([\s\S]*?)^```$/gm)) {
      const commands = match[1] as string;
      if (!/^dirq init(?! \[)/m.test(commands)) continue;
      const line = text.slice(0, match.index).split("\n").length;
      blocks.push({ where: `${path.slice(PACKAGE_DIR.length)}:${line}`, commands });
    }
  }
  return blocks;
}

/** Runs `script` in bash, `set -e`, with the built CLI on PATH as `dirq`. */
function runDocumented(script: string, cwd: string, bin: string): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", `set -e -o pipefail\n${script}`], {
      cwd,
      env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ""}`, DIRQ_PROGRESS: "never" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** What the documented sequences say they run in: a folder whose data files are in posts/. */
const POSTS_FOLDER: TreeSpec = {
  "posts/hello.json": '{"title": "Hello", "words": 120, "author": "ann"}',
  "posts/2024/deep.json": '{"title": "Deep", "words": 900, "author": "bo", "tags": ["x"]}',
  "notes.txt": "not data\n",
};

const ALL_RECORDS = "SELECT title, n FROM records ORDER BY title";
const EXPECTED_RECORDS = [
  { title: "a", n: 1 },
  { title: "b", n: 2 },
  { title: "c", n: 3 },
];

/* ------------------------------------------------------------------------------------------ */
/* Tests                                                                                       */
/* ------------------------------------------------------------------------------------------ */

describe("dirq init", { concurrency: true }, () => {
  it("writes <cwd>/.dirq.toml, and querying records works right away with only node", async () => {
    await withTree(JSON_FOLDER, async (root) => {
      const result = await init(root);
      assert.equal(result.stderr, "");
      assert.match(result.stdout, /\.dirq\.toml/);
      const text = readFileSync(join(root, ".dirq.toml"), "utf8");
      assertStarterShape(text, { schema: true });
      const star = await queryWith(root, ".dirq.toml", "SELECT * FROM records ORDER BY title");
      assert.deepEqual(star, EXPECTED_RECORDS);
      const named = await queryWith(
        root,
        ".dirq.toml",
        "SELECT _dirq_file_path AS file, _dirq_row_index AS i FROM records ORDER BY 1, 2",
      );
      assert.deepEqual(named, [
        { file: "a.json", i: 0 },
        { file: "sub/b.json", i: 0 },
        { file: "sub/b.json", i: 1 },
      ]);
    });
  });

  it("the written config is not auto-loaded", async () => {
    await withTree(JSON_FOLDER, async (root) => {
      await init(root);
      const result = await run(root, ["SELECT * FROM records"]);
      assertFailure(result, "records", /no such table/);
    });
  });

  it("a second init without --force exits 1 and leaves the file byte-identical", async () => {
    await withTree(JSON_FOLDER, async (root) => {
      await init(root);
      const path = join(root, ".dirq.toml");
      const before = readFileSync(path);
      const mtime = statSync(path).mtimeMs;
      const result = await run(root, ["init"]);
      assertFailure(result, ".dirq.toml", /already exists/, "--force");
      assert.deepEqual(readFileSync(path), before);
      assert.equal(statSync(path).mtimeMs, mtime);
    });
  });

  it("an existing hand-written file is never touched without --force", async () => {
    await withTree({ ...JSON_FOLDER, ".dirq.toml": "# my own config\n" }, async (root) => {
      assertFailure(await run(root, ["init"]), /already exists/);
      assert.equal(readFileSync(join(root, ".dirq.toml"), "utf8"), "# my own config\n");
    });
  });

  it("--force overwrites an existing file with a working starter", async () => {
    await withTree({ ...JSON_FOLDER, ".dirq.toml": "# my own config\n" }, async (root) => {
      await init(root, "--force");
      const text = readFileSync(join(root, ".dirq.toml"), "utf8");
      assert.notEqual(text, "# my own config\n");
      assertStarterShape(text, { schema: true });
      assert.deepEqual(await queryWith(root, ".dirq.toml", ALL_RECORDS), EXPECTED_RECORDS);
    });
  });

  it("--force with no existing file just writes it", async () => {
    await withTree(JSON_FOLDER, async (root) => {
      await init(root, "--force");
      assert.ok(existsSync(join(root, ".dirq.toml")));
    });
  });

  it("--root <dir> writes <dir>/.dirq.toml (relative or absolute), not in the cwd", async () => {
    const tree = { "data/a.json": '{"title":"a","n":1}', "data/b.json": '[{"title":"b","n":2}]' };
    await withTree(tree, async (root) => {
      await init(root, "--root", "data");
      assert.ok(existsSync(join(root, "data/.dirq.toml")));
      assert.equal(existsSync(join(root, ".dirq.toml")), false);
      const data = join(root, "data");
      assert.deepEqual(await queryWith(data, ".dirq.toml", ALL_RECORDS), [
        { title: "a", n: 1 },
        { title: "b", n: 2 },
      ]);
    });
    await withTree(tree, async (root) => {
      const elsewhere = makeTree({});
      try {
        await init(elsewhere, "--root", join(root, "data"));
        assert.ok(existsSync(join(root, "data/.dirq.toml")));
        assert.equal(existsSync(join(elsewhere, ".dirq.toml")), false);
      } finally {
        removeTree(elsewhere);
      }
    });
  });

  it("--output <path> writes there (relative to the cwd) and nowhere else", async () => {
    await withTree({ ...JSON_FOLDER, "conf/": "" }, async (root) => {
      const result = await init(root, "--output", "conf/my.toml");
      assert.match(result.stdout, /my\.toml/);
      assert.ok(existsSync(join(root, "conf/my.toml")));
      assert.equal(existsSync(join(root, ".dirq.toml")), false);
      // The root stays the working directory whatever the config's location.
      assert.deepEqual(await queryWith(root, "conf/my.toml", ALL_RECORDS), EXPECTED_RECORDS);
    });
  });

  it("--output to an existing file: exit 1 without --force, overwritten with it", async () => {
    await withTree({ ...JSON_FOLDER, "mine.toml": "# keep\n" }, async (root) => {
      assertFailure(
        await run(root, ["init", "--output", "mine.toml"]),
        "mine.toml",
        /already exists/,
      );
      assert.equal(readFileSync(join(root, "mine.toml"), "utf8"), "# keep\n");
      await init(root, "--output", "mine.toml", "--force");
      assertStarterShape(readFileSync(join(root, "mine.toml"), "utf8"), { schema: true });
    });
  });

  it("--root and --output together: --output wins", async () => {
    await withTree({ ...JSON_FOLDER }, async (root) => {
      await init(root, "--root", "sub", "--output", "out.toml");
      assert.ok(existsSync(join(root, "out.toml")));
      assert.equal(existsSync(join(root, "sub/.dirq.toml")), false);
    });
  });

  it("an unwritable output (inside a missing directory): exit 1 with the I/O error", async () => {
    await withTree(JSON_FOLDER, async (root) => {
      const result = await run(root, ["init", "--output", "no-such-dir/x.toml"]);
      assertFailure(result, "x.toml", /ENOENT|no such file or directory/);
      assert.equal(existsSync(join(root, "no-such-dir")), false);
    });
  });

  it("--root naming a missing directory: exit 1 with the I/O error", async () => {
    await withTree(JSON_FOLDER, async (root) => {
      const result = await run(root, ["init", "--root", "nope"]);
      assertFailure(result, /ENOENT|no such file or directory|not a directory|not found/);
      assert.equal(existsSync(join(root, "nope")), false);
    });
  });

  it("an output that is a directory, even with --force: exit 1 with the I/O error", async () => {
    await withTree({ ...JSON_FOLDER, "adir/": "" }, async (root) => {
      const result = await run(root, ["init", "--output", "adir", "--force"]);
      assertFailure(result, "adir", /EISDIR|directory/);
    });
  });

  it("a folder with no file a format reads gets the spec's starter: glob, active schema, on-file hook", async () => {
    await withTree({ "notes.txt": "hi\n", "logo.png": "png" }, async (root) => {
      const result = await init(root);
      assert.match(result.stdout, /table records: an on-file hook over \*\*\/\*\.jsonl/);
      assertHookStarter(readFileSync(join(root, ".dirq.toml"), "utf8"));
      const empty = await run(root, ["query", "-c", ".dirq.toml", "SELECT * FROM records"]);
      assert.equal(empty.code, 0, empty.stderr);
      assert.equal(empty.stdout, "[]\n");
    });
  });

  it("an empty folder: the starter loads, and reads a .jsonl file added afterwards with only node", async () => {
    await withTree({}, async (root) => {
      await init(root);
      assertHookStarter(readFileSync(join(root, ".dirq.toml"), "utf8"));
      assert.deepEqual(await queryWith(root, ".dirq.toml", "SELECT * FROM records"), []);
      mkdirSync(join(root, "logs"));
      writeFileSync(
        join(root, "logs/posts.jsonl"),
        '{"title": "a", "author": "ann", "words": 9007199254740993, "x": 1}\n\n' +
          '{"title": "b", "words": 2}\r\n',
      );
      const rows = await queryWith(
        root,
        ".dirq.toml",
        "SELECT title, author, CAST(words AS TEXT) AS words FROM records ORDER BY title",
      );
      assert.deepEqual(rows, [
        { title: "a", author: "ann", words: "9007199254740993" },
        { title: "b", author: null, words: "2" },
      ]);
    });
  });

  it("a broken JSON file is skipped by the format: exit 23, other rows stand", async () => {
    await withTree({ ...JSON_FOLDER, "broken.json": "{nope" }, async (root) => {
      await init(root);
      const result = await run(root, ["query", "-c", ".dirq.toml", ALL_RECORDS], NODE_ONLY_PATH);
      assert.equal(result.code, 23, result.stderr);
      assert.deepEqual(JSON.parse(result.stdout), EXPECTED_RECORDS);
      assert.match(result.stderr, /^dirq: skipped broken\.json: line 1, column 2: /m);
    });
  });

  it("init never modifies the JSON files", async () => {
    await withTree(JSON_FOLDER, async (root) => {
      const before = Object.keys(JSON_FOLDER).map((path) => readFileSync(join(root, path), "utf8"));
      await init(root);
      await queryWith(root, ".dirq.toml", ALL_RECORDS);
      const afterwards = Object.keys(JSON_FOLDER).map((path) =>
        readFileSync(join(root, path), "utf8"),
      );
      assert.deepEqual(afterwards, before);
    });
  });

  it("usage errors write nothing: a stray argument, an unknown flag", async () => {
    await withTree(JSON_FOLDER, async (root) => {
      assertFailure(await run(root, ["init", "extra"]), "extra");
      assertFailure(await run(root, ["init", "--bogus"]), "--bogus");
      assert.equal(existsSync(join(root, ".dirq.toml")), false);
    });
  });

  it("init over a folder whose first JSON is not an object still writes a loadable config", async () => {
    const tree = { "0.json": "[1, 2]", "1.json": "null", "a.json": '{"title":"a","n":1}' };
    await withTree(tree, async (root) => {
      await init(root);
      writeFileSync(join(root, "0.json"), "[]");
      writeFileSync(join(root, "1.json"), "[]");
      assert.deepEqual(await queryWith(root, ".dirq.toml", ALL_RECORDS), [{ title: "a", n: 1 }]);
    });
  });

  it("CSV files: a table named after their folder, format csv, a schema typed from a sample", async () => {
    const tree = {
      "data/2023/sales.csv": "id,zip,city,amount\n1,007,Oslo,1.5\n2,12345,Bergen,2\n",
      "data/2024/sales.csv": "id,zip,city,amount\r\n3,08001,,7\r\n",
      "notes.txt": "not data",
    };
    await withTree(tree, async (root) => {
      const text = await initText(root);
      assertStarterShape(text, {
        schema: true,
        name: "data",
        format: "csv",
        glob: "data/**/*.csv",
      });
      assert.match(
        text,
        /^schema = \{ id = "INTEGER", zip = "TEXT", city = "TEXT", amount = "REAL" \}$/m,
      );
      const rows = await queryWith(
        root,
        ".dirq.toml",
        "SELECT id, zip, city, amount, typeof(amount) AS t FROM data ORDER BY id",
      );
      assert.deepEqual(rows, [
        { id: 1, zip: "007", city: "Oslo", amount: 1.5, t: "real" },
        { id: 2, zip: "12345", city: "Bergen", amount: 2, t: "real" },
        { id: 3, zip: "08001", city: null, amount: 7, t: "real" },
      ]);
    });
  });

  it("one data file: the table is named after it and reads just it", async () => {
    await withTree({ "docs/People List.csv": "name,age\nann,31\n", "a.txt": "x" }, async (root) => {
      const text = await initText(root);
      assertStarterShape(text, {
        schema: true,
        name: "People_List",
        format: "csv",
        glob: "docs/People List.csv",
      });
      assert.deepEqual(await queryWith(root, ".dirq.toml", "SELECT * FROM people_list"), [
        { name: "ann", age: 31 },
      ]);
    });
  });

  it("Markdown files: front matter keys and body are the columns", async () => {
    const tree = {
      "content/posts/a.md": "---\ntitle: Hello\ndate: 2024-01-05\ndraft: no\n---\n# Hello\n",
      "content/posts/b.markdown": '+++\ntitle = "TOML"\n+++\ntext\n',
      "content/posts/c.md": "no front matter\n",
      "content/posts/d.json": '{"not": "markdown"}',
    };
    await withTree(tree, async (root) => {
      const text = await initText(root);
      assertStarterShape(text, {
        schema: true,
        name: "posts",
        format: "markdown",
        glob: "content/posts/**/*.{md,markdown}",
      });
      assert.match(
        text,
        /^schema = \{ title = "TEXT", date = "TEXT", draft = "INTEGER", body = "TEXT" \}$/m,
      );
      assert.match(text, /^# Also found: 1 JSON file \(format = "json"\)\.$/m);
      const rows = await queryWith(
        root,
        ".dirq.toml",
        "SELECT _dirq_file_path AS file, title, date, draft, body FROM posts ORDER BY 1",
      );
      assert.deepEqual(rows, [
        {
          file: "content/posts/a.md",
          title: "Hello",
          date: "2024-01-05",
          draft: 0,
          body: "# Hello\n",
        },
        {
          file: "content/posts/b.markdown",
          title: "TOML",
          date: null,
          draft: null,
          body: "text\n",
        },
        {
          file: "content/posts/c.md",
          title: null,
          date: null,
          draft: null,
          body: "no front matter\n",
        },
      ]);
    });
  });

  it("the most common kind wins; ignored files, dot-folders and configs are not counted", async () => {
    const tree = {
      ".gitignore": "exports/\n",
      "exports/1.csv": "a\n1\n",
      "exports/2.csv": "a\n2\n",
      "exports/3.csv": "a\n3\n",
      ".cache/1.yaml": "a: 1\n",
      ".cache/2.yaml": "a: 2\n",
      ".cache/3.yaml": "a: 3\n",
      "dirq.toml": "[dirq]\n",
      "conf/dirq.toml": "[dirq]\n",
      "items/a.jsonl": '{"sku":"x","qty":2}\n{"sku":"y","qty":3}\n',
      "items/b.ndjson": '{"sku":"z","qty":1}\n',
      "README.md": "# readme\n",
    };
    await withTree(tree, async (root) => {
      const text = await initText(root);
      assertStarterShape(text, {
        schema: true,
        name: "items",
        format: "jsonl",
        glob: "items/**/*.{jsonl,ndjson}",
      });
      assert.match(text, /^# Also found: 1 Markdown file \(format = "markdown"\)\.$/m);
      assert.deepEqual(await queryWith(root, ".dirq.toml", "SELECT * FROM items ORDER BY sku"), [
        { sku: "x", qty: 2 },
        { sku: "y", qty: 3 },
        { sku: "z", qty: 1 },
      ]);
    });
  });

  it("a config being overwritten is not counted as data", async () => {
    await withTree({ "0.toml": "# old\n", "a.json": '{"title":"a","n":1}' }, async (root) => {
      await init(root, "--output", "0.toml", "--force");
      const text = readFileSync(join(root, "0.toml"), "utf8");
      assertStarterShape(text, { schema: true, glob: "a.json", name: "a" });
    });
  });

  it("a folder name that is an SQL keyword or holds glob characters still makes a working table", async () => {
    const tree = { "order/a.json": '{"n":1}', "order/b.json": '{"n":2}' };
    await withTree(tree, async (root) => {
      assertStarterShape(await initText(root), { schema: true, glob: "order/**/*.json" });
      assert.deepEqual(await queryWith(root, ".dirq.toml", "SELECT n FROM records ORDER BY n"), [
        { n: 1 },
        { n: 2 },
      ]);
    });
    const odd = { "we[ir]d {x}/a.json": '{"n":1}', "we[ir]d {x}/b.json": '{"n":2}' };
    await withTree(odd, async (root) => {
      assertStarterShape(await initText(root), {
        schema: true,
        name: "we_ir_d_x",
        glob: "we\\[ir\\]d \\{x\\}/**/*.json",
      });
      assert.deepEqual(await queryWith(root, ".dirq.toml", "SELECT n FROM we_ir_d_x ORDER BY n"), [
        { n: 1 },
        { n: 2 },
      ]);
    });
  });

  it("rows held in an array under one key: a commented each that works when uncommented", async () => {
    const tree = {
      "api/p1.json": '{"page":1,"data":[{"id":1},{"id":2}]}',
      "api/p2.json": '{"page":2,"data":[{"id":3}]}',
    };
    await withTree(tree, async (root) => {
      const text = await initText(root);
      assertStarterShape(text, { schema: true, name: "api" });
      assert.match(text, /^# each = "data"$/m);
      assert.deepEqual(await queryWith(root, ".dirq.toml", "SELECT page FROM api ORDER BY page"), [
        { page: 1 },
        { page: 2 },
      ]);
      const edited = text.replace(/^# each = /m, "each = ").replace(/^schema = .*\n/m, "");
      writeFileSync(join(root, "each.toml"), edited);
      assert.deepEqual(await queryWith(root, "each.toml", "SELECT id FROM api ORDER BY id"), [
        { id: 1 },
        { id: 2 },
        { id: 3 },
      ]);
    });
  });

  it("column names that are not identifiers are quoted keys of the schema", async () => {
    const header = 'first name\tISO-4217\t1st\t"say ""hi"""\tage';
    const files = { "t/a.tsv": `${header}\nann\t008\tx\ty\t31\n`, "t/b.tsv": "" };
    await withTree(files, async (root) => {
      const text = await initText(root);
      assertStarterShape(text, { schema: true, name: "t", format: "tsv" });
      assert.match(
        text,
        /^schema = \{ "first name" = "TEXT", ISO-4217 = "TEXT", 1st = "TEXT", "say \\"hi\\"" = "TEXT", age = "INTEGER" \}$/m,
      );
      assert.deepEqual(await queryWith(root, ".dirq.toml", "SELECT * FROM t"), [
        { "first name": "ann", "ISO-4217": "008", "1st": "x", 'say "hi"': "y", age: 31 },
      ]);
    });
  });

  it("column names a schema cannot hold: no schema, every key inferred", async () => {
    await withTree({ "t/a.tsv": "sqlite_x\tage\nann\t31\n", "t/b.tsv": "" }, async (root) => {
      const text = await initText(root);
      assertStarterShape(text, { schema: false, name: "t", format: "tsv" });
      assert.match(text, /"sqlite_x"/);
      assert.deepEqual(await queryWith(root, ".dirq.toml", "SELECT * FROM t"), [
        { sqlite_x: "ann", age: 31 },
      ]);
    });
  });

  it("the commented on-file example works when uncommented, with only node", async () => {
    const tree = { ...JSON_FOLDER, "logs/app.log": "start\n\nstop\n" };
    await withTree(tree, async (root) => {
      const text = await initText(root);
      assert.match(text, /^# glob = "\*\*\/\*\.log"$/m, "the example reads the text files found");
      writeFileSync(join(root, "hook.toml"), withHookTable(text));
      assert.deepEqual(await queryWith(root, "hook.toml", "SELECT * FROM lines ORDER BY n"), [
        { n: 1, line: "start" },
        { n: 3, line: "stop" },
      ]);
      assert.deepEqual(await queryWith(root, "hook.toml", ALL_RECORDS), EXPECTED_RECORDS);
    });
  });

  it(
    "every file's keys are in the schema, not a sample's: keys past the first 20 files, in other folders",
    { skip: NO_PYTHON },
    async () => {
      await withTree(jekyllLikeTree(), async (root) => {
        const result = await init(root);
        const text = readFileSync(join(root, ".dirq.toml"), "utf8");
        assertStarterShape(text, {
          schema: true,
          name: "docs",
          format: "markdown",
          glob: "docs/**/*.md",
        });
        const paths = walkOrder(root, "docs", "md");
        assert.equal(paths.length, 33);
        assert.equal(schemaLine(text), expectedSchema(root, "markdown", paths));
        assert.match(schemaLine(text), /\bauthor = "TEXT", date = "TEXT"/);
        assert.match(
          result.stdout,
          /table docs: docs\/\*\*\/\*\.md, 33 files read as markdown, a schema of 9 columns/,
        );
        assert.match(
          result.stdout,
          /^try: dirq query "SELECT \* FROM docs LIMIT 5" -c \.dirq\.toml$/m,
        );
        const rows = await queryWith(
          root,
          ".dirq.toml",
          "SELECT title, author, date, version, category FROM docs WHERE author IS NOT NULL ORDER BY title LIMIT 2",
        );
        assert.deepEqual(rows, [
          { title: "One", author: "bo", date: null, version: 4.5, category: null },
          {
            title: "Release 1",
            author: "ann",
            date: "2024-01-01",
            version: 1,
            category: null,
          },
        ]);
      });
    },
  );

  it(
    "a YAML !!binary column is a BLOB, and stays one beside text (as PyYAML reads the files)",
    { skip: NO_PYTHON },
    async () => {
      const tree: TreeSpec = {
        "data/a.yaml": "name: one\nicon: !!binary R0lG\nnote: !!binary AAE=\n",
        "data/b.yaml": "name: two\nicon: !!binary /w==\nnote: plain text\n",
      };
      await withTree(tree, async (root) => {
        const text = await initText(root);
        const paths = walkOrder(root, "data", "yaml");
        assert.equal(schemaLine(text), expectedSchema(root, "yaml", paths));
        assert.equal(schemaLine(text), 'schema = { name = "TEXT", icon = "BLOB", note = "BLOB" }');
        const rows = await queryWith(
          root,
          ".dirq.toml",
          "SELECT name, typeof(icon) AS i, hex(icon) AS icon, typeof(note) AS n, note FROM data ORDER BY name",
        );
        assert.deepEqual(rows, [
          { name: "one", i: "blob", icon: "474946", n: "blob", note: "0001" },
          { name: "two", i: "blob", icon: "FF", n: "text", note: "plain text" },
        ]);
      });
    },
  );

  it(
    "each column's type holds every value of every file (Python's json reads the same files)",
    { skip: NO_PYTHON },
    async () => {
      await withTree(widenedJsonTree(), async (root) => {
        const text = await initText(root);
        assertStarterShape(text, { schema: true, name: "data", glob: "data/**/*.json" });
        const paths = walkOrder(root, "data", "json");
        assert.equal(schemaLine(text), expectedSchema(root, "json", paths));
        assert.equal(
          schemaLine(text),
          'schema = { id = "INTEGER", ratio = "REAL", code = "TEXT", flag = "INTEGER", ' +
            'empty = "TEXT", tags = "TEXT", big = "INTEGER", whole = "REAL", more = "INTEGER", ' +
            'late = "INTEGER" }',
        );
        const rows = await queryWith(
          root,
          ".dirq.toml",
          "SELECT id, typeof(ratio) AS r, typeof(code) AS c, flag, tags, CAST(big AS TEXT) AS big, " +
            "late FROM data WHERE id IN (5, 23, 29) ORDER BY id",
        );
        assert.deepEqual(rows, [
          { id: 5, r: "real", c: "text", flag: 0, tags: '["a",1]', big: null, late: null },
          {
            id: 23,
            r: "real",
            c: "text",
            flag: 0,
            tags: null,
            big: "9007199254740993",
            late: null,
          },
          { id: 29, r: "real", c: "text", flag: 0, tags: null, big: null, late: 7 },
        ]);
      });
    },
  );

  it(
    "CSV: every file's header and every field's type, also after the 20th file",
    { skip: NO_PYTHON },
    async () => {
      const tree: TreeSpec = {};
      for (let i = 0; i < 24; i++)
        tree[`t/f${String(i).padStart(2, "0")}.csv`] = `id,v\n${i},${i}\n`;
      tree["t/f22.csv"] = "id,v,extra\n22,x,1.5\n23,,2\n";
      await withTree(tree, async (root) => {
        const text = await initText(root);
        assertStarterShape(text, { schema: true, name: "t", format: "csv", glob: "t/**/*.csv" });
        const paths = walkOrder(root, "t", "csv");
        assert.equal(schemaLine(text), expectedSchema(root, "csv", paths));
        assert.equal(schemaLine(text), 'schema = { id = "INTEGER", v = "TEXT", extra = "REAL" }');
        assert.deepEqual(
          await queryWith(root, ".dirq.toml", "SELECT v, extra FROM t WHERE extra IS NOT NULL"),
          [
            { v: "x", extra: 1.5 },
            { v: null, extra: 2 },
          ],
        );
      });
    },
  );

  it("the documented init sequences run as written, in a folder whose data is in posts/", async () => {
    const blocks = documentedInitBlocks();
    assert.ok(blocks.length >= 2, `found ${blocks.length} documented init sequences`);
    const bin = makeTree({ "bin/": "" });
    symlinkSync(DIRQ_BIN, join(bin, "bin/dirq"));
    try {
      for (const block of blocks) {
        await withTree(POSTS_FOLDER, async (root) => {
          const ran = await runDocumented(block.commands, root, join(bin, "bin"));
          assert.equal(ran.code, 0, `${block.where}:\n${block.commands}\n${ran.stderr}`);
          assert.match(ran.stdout, /Hello/, `${block.where} printed no post:\n${ran.stdout}`);
        });
      }
    } finally {
      removeTree(bin);
    }
  });

  it("a file the format cannot read: init says so on stderr, and leaves it out of the schema", async () => {
    const tree = { ...JSON_FOLDER, "broken.json": '{"secret": 1, nope' };
    await withTree(tree, async (root) => {
      const result = await run(root, ["init"]);
      assert.equal(result.code, 0, result.stderr);
      assert.match(
        result.stderr,
        /^dirq: 1 of the 3 files cannot be read as json \(broken\.json: line 1, column \d+: .*\): the schema leaves out their keys, and the table will skip them; fix them, or narrow the glob\n$/,
      );
      assert.match(
        readFileSync(join(root, ".dirq.toml"), "utf8"),
        /^schema = \{ title = "TEXT", n = "INTEGER" \}$/m,
      );
    });
  });
});
