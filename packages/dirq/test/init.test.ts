import assert from "node:assert/strict";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { makeTree, removeTree, type RunResult, runDirq, type TreeSpec } from "./helpers.js";

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

/** Runs `dirq init` in a fresh tree and returns the config it wrote. */
async function initText(root: string): Promise<string> {
  await init(root);
  return readFileSync(join(root, ".dirq.toml"), "utf8");
}

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

  it("a folder with no file a format reads gets a JSON table that loads; the query returns []", async () => {
    await withTree({ "notes.txt": "hi\n", "logo.png": "png" }, async (root) => {
      const text = await initText(root);
      assertStarterShape(text, { schema: false, glob: "**/*.json" });
      assert.match(text, /^# schema = \{/m, "an example schema, commented out");
      const result = await run(root, ["query", "-c", ".dirq.toml", "SELECT * FROM records"]);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, "[]\n");
      assert.deepEqual(await queryWith(root, ".dirq.toml", "SELECT count(*) AS n FROM records"), [
        { n: 0 },
      ]);
    });
  });

  it("an empty folder works the same", async () => {
    await withTree({}, async (root) => {
      await init(root);
      assert.deepEqual(await queryWith(root, ".dirq.toml", "SELECT * FROM records"), []);
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
});
