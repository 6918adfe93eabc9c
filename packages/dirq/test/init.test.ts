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

/** The starter shape: one [[table]] with name, glob, schema and on-file lines (not comments). */
function assertStarterShape(text: string, options: { schema: boolean }): void {
  assert.equal(text.match(/^\[\[table\]\]$/gm)?.length, 1, "exactly one [[table]]");
  assert.match(text, /^name = "records"$/m);
  assert.match(text, /^glob = "/m);
  assert.match(text, /^on-file = /m);
  if (options.schema) assert.match(text, /^schema = \{/m);
  assert.match(text, /^# /m, "comments that teach the format");
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

  it("a folder with no JSON files still gets a config that loads; the query returns []", async () => {
    await withTree({ "readme.md": "# hi\n" }, async (root) => {
      await init(root);
      assertStarterShape(readFileSync(join(root, ".dirq.toml"), "utf8"), { schema: false });
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

  it("a broken JSON file is skipped by the starter hook: exit 23, other rows stand", async () => {
    await withTree({ ...JSON_FOLDER, "broken.json": "{nope" }, async (root) => {
      await init(root);
      const result = await run(root, ["query", "-c", ".dirq.toml", ALL_RECORDS], NODE_ONLY_PATH);
      assert.equal(result.code, 23, result.stderr);
      assert.deepEqual(JSON.parse(result.stdout), EXPECTED_RECORDS);
      assert.match(result.stderr, /^dirq: skipped broken\.json: /m);
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
});
