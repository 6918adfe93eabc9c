import assert from "node:assert/strict";
import { chmodSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  makeTree,
  removeTree,
  type RunResult,
  runDirq,
  shellHook,
  snapshotTree,
} from "./helpers.js";

/* ------------------------------------------------------------------------------------------ */
/* The tree: JSON posts, a hook that lives next to the config (in a subfolder of the root),   */
/* ignore rules, and configs good and bad.                                                      */
/* ------------------------------------------------------------------------------------------ */

/** An executable hook (shebang): prints the file's JSON as rows. */
const PARSE_HOOK = `#!/bin/sh\n${shellHook("json-rows.sh")}`;

/** Prints one row per input row with only the author. */
const AUTHORS_HOOK = `import { readFileSync } from "node:fs";
const data = JSON.parse(readFileSync(process.argv[2], "utf8"));
const rows = Array.isArray(data) ? data : [data];
process.stdout.write(JSON.stringify(rows.map((row) => ({ author: row.author ?? null }))));
`;

/** Fails on files named fail.json, else prints one row naming the file. */
const FLAKY_HOOK = `import { basename } from "node:path";
const name = basename(process.argv[2]);
if (name === "fail.json") {
  process.stderr.write("cannot parse " + name + "\\n");
  process.exit(2);
}
process.stdout.write(JSON.stringify([{ name }]));
`;

/** A valid [[table]] body to build bad configs around. */
const TABLE = `[[table]]
name = "t"
glob = "posts/*.json"
on-file = "node authors.mjs {path}"
`;

const MAIN_CONFIG = `# posts: a fixed schema, a hook next to this file, an index made by ddl
[dirq]
ignore = ["posts/drafts/**"]

[[table]]
name = "posts"
glob = "posts/**/*.json"
schema = { title = "TEXT", author = "TEXT", words = "INTEGER" }
on-file = "./hooks/parse.sh {path}"
ddl = "CREATE INDEX posts_author ON posts(author)"

# The same files again, columns inferred from the hook's output
[[table]]
name = "everything"
glob = "./posts/**/*.json"
on-file = "./hooks/parse.sh {path}"
`;

const EXTRA_CONFIG = `[dirq]
ignore = ["posts/a.json"]

[[table]]
name = "authors"
glob = "posts/*.json"
on-file = "node authors.mjs {path}"
`;

const DDL_CONFIG = `[[table]]
name = "logged"
glob = "posts/*.json"
on-file = "./hooks/parse.sh {path}"
ddl = """
CREATE VIRTUAL TABLE logged_log USING fts5(file, row);
CREATE TRIGGER logged_insert AFTER INSERT ON logged
  BEGIN INSERT INTO logged_log VALUES (new._dirq_file_path, new._dirq_row_index); END;
CREATE VIEW logged_titles AS SELECT title FROM logged WHERE title IS NOT NULL
"""
`;

const root = makeTree({
  ".gitignore": "posts/secret.json\n",
  "posts/a.json": '{"title":"A","author":"ann","words":"120","extra":"dropped"}',
  "posts/b.json": '[{"title":"B1","author":"bob","words":300},{"title":"B2"}]',
  "posts/secret.json": '{"title":"SECRET","author":"eve"}',
  "posts/drafts/d.json": '{"title":"DRAFT","author":"dan"}',
  "posts/notes.txt": "not json",
  "flaky/ok.json": "",
  "flaky/fail.json": "",
  "authors.mjs": AUTHORS_HOOK,
  "flaky.mjs": FLAKY_HOOK,
  "conf/hooks/parse.sh": PARSE_HOOK,
  "conf/tables.toml": MAIN_CONFIG,
  "conf/ddl.toml": DDL_CONFIG,
  "extra.toml": EXTRA_CONFIG,
  "flaky.toml": `[[table]]
name = "flaky"
glob = "flaky/*.json"
on-file = "node flaky.mjs {path}"
`,
  "missing-hook.toml": `[[table]]
name = "nohook"
glob = "posts/*.json"
on-file = "no-such-program-xyz {path}"
`,
  // In the working directory but never loaded without -c.
  ".dirq.toml": `[[table]]
name = "auto_loaded"
glob = "posts/*.json"
on-file = "node authors.mjs {path}"
`,
  // Bad configs.
  "bad/syntax.toml": '[[table]]\nname = "x"\nglob = = "y"\n',
  "bad/dupkey.toml": `${TABLE}name = "again"\n`,
  "bad/unknown-top.toml": `bogus = 1\n${TABLE}`,
  "bad/unknown-dirq.toml": `[dirq]\nignores = ["x"]\n`,
  "bad/unknown-table.toml": `${TABLE}globs = "x"\n`,
  "bad/second-glob.toml": `${TABLE}\n[[table]]\nname = "u"\nglob = 5\non-file = "node authors.mjs {path}"\n`,
  "bad/name-number.toml": `[[table]]\nname = 5\nglob = "*.json"\non-file = "cat {path}"\n`,
  "bad/no-on-file.toml": `[[table]]\nname = "x"\nglob = "*.json"\n`,
  "bad/empty-glob.toml": `[[table]]\nname = "x"\nglob = ""\non-file = "cat {path}"\n`,
  "bad/schema-value.toml": `${TABLE}schema = { title = 5 }\n`,
  "bad/schema-string.toml": `${TABLE}schema = "title"\n`,
  "bad/schema-type.toml": `${TABLE}schema = { words = "INTEGER; DROP TABLE x" }\n`,
  "bad/schema-column.toml": `${TABLE}schema = { "my col" = "TEXT", "" = "TEXT" }\n`,
  "bad/ignore-string.toml": `[dirq]\nignore = "drafts/**"\n`,
  "bad/table-number.toml": "table = 3\n",
  "bad/name-digit.toml": `[[table]]\nname = "1x"\nglob = "*.json"\non-file = "cat {path}"\n`,
  "bad/name-dash.toml": `[[table]]\nname = "my-table"\nglob = "*.json"\non-file = "cat {path}"\n`,
  "bad/name-space.toml": `[[table]]\nname = "a b"\nglob = "*.json"\non-file = "cat {path}"\n`,
  "bad/name-internal.toml": `[[table]]\nname = "_dirq_x"\nglob = "*.json"\non-file = "cat {path}"\n`,
  "bad/name-internal-case.toml": `[[table]]\nname = "_DIRQ_Meta"\nglob = "*.json"\non-file = "cat {path}"\n`,
  "bad/d1.toml": `[[table]]\nname = "Dup"\nglob = "*.json"\non-file = "cat {path}"\n`,
  "bad/d2.toml": `[[table]]\nname = "other"\nglob = "*.json"\non-file = "cat {path}"\n\n[[table]]\nname = "dup"\nglob = "*.json"\non-file = "cat {path}"\n`,
  "bad/dup-one-file.toml": `${TABLE}\n${TABLE}`,
  "bad/extension.toml": `[[dirq.extension]]\npath = "./ext/vec0.so"\n`,
  "bad/ddl.toml": `${TABLE}ddl = "CREATE INDEXX nope ON t(author)"\n`,
  "bad/schema-case.toml": `${TABLE}schema = { author = "TEXT", Author = "TEXT" }\n`,
  "bad/name-sqlite.toml": `[[table]]\nname = "sqlite_stuff"\nglob = "posts/*.json"\non-file = "node authors.mjs {path}"\n`,
  "bad/dir.toml/": "",
  "bad/ignore-negated.toml": `[dirq]\nignore = ["drafts/**", "!drafts/keep.md"]\n`,
  "bad/schema-internal.toml": `${TABLE}schema = { author = "TEXT", _Dirq_File_Path = "TEXT" }\n`,
  "bad/schema-sqlite.toml": `${TABLE}schema = { SQLite_rowid = "TEXT" }\n`,
  // A name that starts with ! is written \\! (gitignore syntax): not a negation.
  "conf/ignore-bang.toml": `[dirq]\nignore = ['\\!bang.md']\n`,
  "bangs/!bang.md": "a file whose name starts with !",
  "conf/views.toml": `${TABLE}ddl = """
CREATE VIEW by_file AS SELECT _dirq_file_path, author FROM t WHERE author IS NOT NULL;
CREATE VIEW everything AS SELECT * FROM t WHERE author IS NOT NULL
"""
`,
});
chmodSync(join(root, "conf/hooks/parse.sh"), 0o755);
after(() => removeTree(root));

/* ------------------------------------------------------------------------------------------ */
/* Local helpers                                                                               */
/* ------------------------------------------------------------------------------------------ */

type Row = Record<string, unknown>;

function run(args: readonly string[]): Promise<RunResult> {
  return runDirq(args, { cwd: root });
}

function rowsOf(result: RunResult): Row[] {
  assert.equal(result.code, 0, `expected exit 0, got ${result.code}; stderr: ${result.stderr}`);
  const rows = JSON.parse(result.stdout) as unknown;
  assert.ok(Array.isArray(rows), `expected a JSON array: ${result.stdout}`);
  return rows as Row[];
}

async function query(sql: string, ...args: string[]): Promise<Row[]> {
  return rowsOf(await run([sql, ...args]));
}

/** Exit 1, empty stdout, `dirq: ` diagnostics containing every needle, no crash. */
function assertFailure(result: RunResult, ...needles: (string | RegExp)[]): void {
  assert.equal(result.code, 1, `expected exit 1, got ${result.code}; stderr: ${result.stderr}`);
  assert.equal(result.stdout, "", "nothing on stdout");
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

const MAIN = ["-c", "conf/tables.toml"];

/* ------------------------------------------------------------------------------------------ */
/* Tests                                                                                       */
/* ------------------------------------------------------------------------------------------ */

describe("config tables", { concurrency: true }, () => {
  it("schema fixes the columns and their order; other keys dropped, missing ones NULL", async () => {
    const before = snapshotTree(root);
    const rows = await query("SELECT * FROM posts ORDER BY title", ...MAIN);
    assert.deepEqual(rows, [
      { title: "A", author: "ann", words: 120 },
      { title: "B1", author: "bob", words: 300 },
      { title: "B2", author: null, words: null },
    ]);
    for (const row of rows) assert.deepEqual(Object.keys(row), ["title", "author", "words"]);
    assert.equal(snapshotTree(root), before, "no file in the tree was modified");
  });

  it("schema declares the column types (INTEGER affinity turns '120' into 120)", async () => {
    const rows = await query(
      `SELECT (SELECT typeof(words) FROM posts WHERE title = 'A') AS words_type,
              name, type FROM pragma_table_info('posts') ORDER BY cid`,
      ...MAIN,
    );
    assert.deepEqual(
      rows.map((row) => [row.name, row.type]),
      [
        ["title", "TEXT"],
        ["author", "TEXT"],
        ["words", "INTEGER"],
        ["_dirq_file_path", "TEXT"],
        ["_dirq_row_index", "INTEGER"],
      ],
    );
    assert.equal(rows[0]?.words_type, "integer");
  });

  it("a table without schema infers its columns from the hook output", async () => {
    const rows = await query("SELECT * FROM everything ORDER BY title", ...MAIN);
    assert.deepEqual(rows, [
      { title: "A", author: "ann", words: "120", extra: "dropped" },
      { title: "B1", author: "bob", words: 300, extra: null },
      { title: "B2", author: null, words: null, extra: null },
    ]);
  });

  it("hidden columns: out of SELECT *, returned when named, usable in WHERE", async () => {
    const rows = await query(
      "SELECT _dirq_file_path, _dirq_row_index, title FROM posts WHERE _dirq_file_path = 'posts/b.json' ORDER BY 2",
      ...MAIN,
    );
    assert.deepEqual(rows, [
      { _dirq_file_path: "posts/b.json", _dirq_row_index: 0, title: "B1" },
      { _dirq_file_path: "posts/b.json", _dirq_row_index: 1, title: "B2" },
    ]);
    const star = await query("SELECT * FROM posts WHERE _dirq_row_index = 1", ...MAIN);
    assert.deepEqual(star, [{ title: "B2", author: null, words: null }]);
  });

  it("a view that selects a hidden column by name keeps it in SELECT *; one made with SELECT * does not", async () => {
    const byFile = await query("SELECT * FROM by_file ORDER BY 1", "-c", "conf/views.toml");
    assert.deepEqual(byFile, [
      { _dirq_file_path: "posts/a.json", author: "ann" },
      { _dirq_file_path: "posts/b.json", author: "bob" },
    ]);
    const everything = await query(
      "SELECT * FROM everything ORDER BY author",
      "-c",
      "conf/views.toml",
    );
    assert.deepEqual(everything, [{ author: "ann" }, { author: "bob" }]);
    // Through the server's query processes too.
    const server = await runDirq(["repl", "-c", "conf/views.toml", "--format", "json"], {
      cwd: root,
      input: "SELECT * FROM by_file ORDER BY 1;\n",
    });
    assert.equal(server.code, 0, server.stderr);
    assert.match(server.stdout, /"_dirq_file_path":"posts\/a\.json","author":"ann"/);
  });

  it("several tables may read the same file", async () => {
    const rows = await query(
      `SELECT p.title, e.extra FROM posts AS p JOIN everything AS e
         ON e._dirq_file_path = p._dirq_file_path AND e._dirq_row_index = p._dirq_row_index
       WHERE p._dirq_file_path = 'posts/a.json'`,
      ...MAIN,
    );
    assert.deepEqual(rows, [{ title: "A", extra: "dropped" }]);
  });

  it("glob: relative to the root (not the config's folder); .gitignore and [dirq] ignore apply", async () => {
    const rows = await query(
      "SELECT DISTINCT _dirq_file_path AS file FROM posts ORDER BY 1",
      ...MAIN,
    );
    // secret.json is .gitignore'd, drafts/** is in [dirq] ignore, notes.txt is not a match.
    assert.deepEqual(rows, [{ file: "posts/a.json" }, { file: "posts/b.json" }]);
  });

  it("--no-ignore brings back .gitignore'd files, but [dirq] ignore still applies", async () => {
    const rows = await query(
      "SELECT DISTINCT _dirq_file_path AS file FROM posts ORDER BY 1",
      ...MAIN,
      "--no-ignore",
    );
    assert.deepEqual(rows, [
      { file: "posts/a.json" },
      { file: "posts/b.json" },
      { file: "posts/secret.json" },
    ]);
  });

  it("[dirq] ignore applies to path-tables too", async () => {
    const rows = await query("SELECT path FROM './posts/' ORDER BY path", ...MAIN);
    assert.deepEqual(rows, [
      { path: "posts/a.json" },
      { path: "posts/b.json" },
      { path: "posts/notes.txt" },
    ]);
  });

  it("a relative program path resolves against the config file's folder", async () => {
    // ./hooks/parse.sh exists only as conf/hooks/parse.sh; the root has no hooks/ folder.
    const absolute = join(root, "conf/tables.toml");
    const rows = await query("SELECT count(*) AS n FROM posts", "-c", absolute);
    assert.deepEqual(rows, [{ n: 3 }]);
  });

  it("ddl runs before the first insert: an index in sqlite_master, a trigger firing per row, a view", async () => {
    const [indexed] = await query(
      `SELECT (SELECT count(*) FROM posts) AS n,
              (SELECT group_concat(name) FROM sqlite_master
                 WHERE type = 'index' AND tbl_name = 'posts') AS indexes`,
      ...MAIN,
    );
    assert.deepEqual(indexed, { n: 3, indexes: "posts_author" });
    const [logged] = await query(
      `SELECT (SELECT count(*) FROM logged) AS n,
              (SELECT count(*) FROM logged_log) AS fired,
              (SELECT group_concat(title, '|') FROM (SELECT title FROM logged_titles ORDER BY title)) AS titles`,
      "-c",
      "conf/ddl.toml",
    );
    assert.deepEqual(logged, { n: 3, fired: 3, titles: "A|B1|B2" });
  });

  it("objects made by ddl can be queried on their own", async () => {
    const rows = await query(
      "SELECT title FROM logged_titles ORDER BY title",
      "-c",
      "conf/ddl.toml",
    );
    assert.deepEqual(rows, [{ title: "A" }, { title: "B1" }, { title: "B2" }]);
  });

  it("sqlite_master lists the config's tables", async () => {
    const rows = await query(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('posts', 'everything') ORDER BY name",
      ...MAIN,
    );
    assert.deepEqual(rows, [{ name: "everything" }, { name: "posts" }]);
  });

  it("two configs merge: both tables, both ignore lists", async () => {
    const [row] = await query(
      `SELECT (SELECT group_concat(title, '|') FROM (SELECT title FROM posts ORDER BY title)) AS titles,
              (SELECT group_concat(author, '|') FROM (SELECT author FROM authors ORDER BY author)) AS authors,
              (SELECT count(*) FROM authors) AS author_rows`,
      ...MAIN,
      "-c",
      "extra.toml",
    );
    // extra.toml ignores posts/a.json: gone from both configs' tables.
    assert.deepEqual(row, { titles: "B1|B2", authors: "bob", author_rows: 2 });
  });

  it("--config (long form) and --config=<path> work", async () => {
    const rows = await query(
      "SELECT (SELECT count(*) FROM posts) AS p, (SELECT count(*) FROM authors) AS a",
      "--config",
      "conf/tables.toml",
      "--config=extra.toml",
    );
    assert.deepEqual(rows, [{ p: 2, a: 2 }]);
  });

  it("dirq query accepts -c after the SQL too", async () => {
    const rows = rowsOf(
      await run(["query", "SELECT count(*) AS n FROM posts", "-c", "conf/tables.toml"]),
    );
    assert.deepEqual(rows, [{ n: 3 }]);
  });

  it("a .dirq.toml in the working directory is never loaded without -c", async () => {
    assertFailure(await run(["SELECT * FROM auto_loaded"]), "auto_loaded", /no such table/);
    const loaded = await query("SELECT count(*) AS n FROM auto_loaded", "-c", ".dirq.toml");
    assert.deepEqual(loaded, [{ n: 3 }]);
  });

  it("a config table's failing file is skipped: exit 23, the file named, other rows stand", async () => {
    const result = await run(["SELECT name FROM flaky", "-c", "flaky.toml"]);
    assert.equal(result.code, 23, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), [{ name: "ok.json" }]);
    assert.match(result.stderr, /^dirq: skipped flaky\/fail\.json: .*code 2/m);
    assert.ok(result.stderr.includes("cannot parse fail.json"), result.stderr);
  });

  it("a config table whose hook program is not found fails the query with exit 1", async () => {
    assertFailure(
      await run(["SELECT * FROM nohook", "-c", "missing-hook.toml"]),
      "no-such-program-xyz",
      /not found/,
      // The file and key that named it, as for every other config problem.
      /^dirq: missing-hook\.toml: table\[0\]\.on-file: on-file command 'no-such-program-xyz \{path\}': program 'no-such-program-xyz' not found/m,
    );
  });

  it("a config ignore pattern written \\! matches a name that starts with !", async () => {
    const all = await run(["SELECT path FROM './bangs/'"]);
    assert.equal(all.stdout, '[{"path":"bangs/!bang.md"}]\n', all.stderr);
    const ignored = await run(["SELECT path FROM './bangs/'", "-c", "conf/ignore-bang.toml"]);
    assert.equal(ignored.code, 0, ignored.stderr);
    assert.equal(ignored.stdout, "[]\n");
  });
});

describe("config errors: exit 1, the file and the key named", { concurrency: true }, () => {
  const cases: [string, string[], (string | RegExp)[]][] = [
    ["missing config file", ["-c", "bad/nope.toml"], ["bad/nope.toml", /not found/]],
    ["a directory", ["-c", "bad/dir.toml"], ["bad/dir.toml", /directory/]],
    [
      "invalid TOML: file:line:column",
      ["-c", "bad/syntax.toml"],
      [/bad\/syntax\.toml:3:\d+: invalid TOML/],
    ],
    [
      "a key defined twice is invalid TOML",
      ["-c", "bad/dupkey.toml"],
      [/bad\/dupkey\.toml:\d+:\d+: invalid TOML/],
    ],
    [
      "unknown top-level key",
      ["-c", "bad/unknown-top.toml"],
      ["bad/unknown-top.toml", "bogus: unknown key"],
    ],
    [
      "unknown key in [dirq]",
      ["-c", "bad/unknown-dirq.toml"],
      ["bad/unknown-dirq.toml", "dirq.ignores: unknown key"],
    ],
    [
      "unknown key in [[table]]",
      ["-c", "bad/unknown-table.toml"],
      ["bad/unknown-table.toml", "table[0].globs: unknown key"],
    ],
    [
      "wrong type in the second table",
      ["-c", "bad/second-glob.toml"],
      ["bad/second-glob.toml", "table[1].glob: expected a string"],
    ],
    [
      "name is a number",
      ["-c", "bad/name-number.toml"],
      ["bad/name-number.toml", "table[0].name: expected a string"],
    ],
    [
      "on-file missing",
      ["-c", "bad/no-on-file.toml"],
      ["bad/no-on-file.toml", "table[0].format: is required (or on-file)"],
    ],
    [
      "empty glob",
      ["-c", "bad/empty-glob.toml"],
      ["bad/empty-glob.toml", "table[0].glob: must not be empty"],
    ],
    [
      "schema value not a string",
      ["-c", "bad/schema-value.toml"],
      ["bad/schema-value.toml", "table[0].schema.title: expected a string"],
    ],
    [
      "schema not a table",
      ["-c", "bad/schema-string.toml"],
      ["bad/schema-string.toml", "table[0].schema: expected a table of column = type"],
    ],
    [
      "schema type is not a column type",
      ["-c", "bad/schema-type.toml"],
      ["bad/schema-type.toml", "table[0].schema.words: expected a column type"],
    ],
    [
      "schema column name is empty (one with a space is fine)",
      ["-c", "bad/schema-column.toml"],
      ["bad/schema-column.toml", 'table[0].schema."": column names must not be empty'],
    ],
    [
      "ignore is not an array",
      ["-c", "bad/ignore-string.toml"],
      ["bad/ignore-string.toml", "dirq.ignore: expected an array of strings"],
    ],
    [
      "table is not an array of tables",
      ["-c", "bad/table-number.toml"],
      ["bad/table-number.toml", "table: expected an array of tables"],
    ],
    [
      "name starting with a digit",
      ["-c", "bad/name-digit.toml"],
      ["bad/name-digit.toml", "table[0].name: expected an SQL identifier"],
    ],
    [
      "name with a dash",
      ["-c", "bad/name-dash.toml"],
      ["bad/name-dash.toml", "table[0].name: expected an SQL identifier"],
    ],
    [
      "name with a space",
      ["-c", "bad/name-space.toml"],
      ["bad/name-space.toml", "table[0].name: expected an SQL identifier"],
    ],
    [
      "a _dirq_ name",
      ["-c", "bad/name-internal.toml"],
      ["bad/name-internal.toml", "table[0].name", "_dirq_"],
    ],
    [
      "a _DIRQ_ name (any case)",
      ["-c", "bad/name-internal-case.toml"],
      ["bad/name-internal-case.toml", "table[0].name", "_dirq_"],
    ],
    [
      "duplicate table names across two configs (any case)",
      ["-c", "bad/d1.toml", "-c", "bad/d2.toml"],
      ["bad/d2.toml: table[1].name", "'dup'", "already defined at bad/d1.toml: table[0]"],
    ],
    [
      "duplicates are reported in argument order",
      ["-c", "bad/d2.toml", "-c", "bad/d1.toml"],
      ["bad/d1.toml: table[0].name", "already defined at bad/d2.toml: table[1]"],
    ],
    [
      "duplicate table names in one config",
      ["-c", "bad/dup-one-file.toml"],
      ["bad/dup-one-file.toml: table[1].name", "already defined"],
    ],
    [
      "a [[dirq.extension]] whose file is missing is named, resolved against the config's folder",
      ["-c", "bad/extension.toml"],
      ["bad/extension.toml: dirq.extension[0]", join(root, "bad/ext/vec0.so"), "was not found"],
    ],
    [
      "a negated config ignore pattern: nothing undoes config ignores",
      ["-c", "bad/ignore-negated.toml"],
      ["bad/ignore-negated.toml: dirq.ignore[1]", "cannot be negated"],
    ],
    [
      "a schema column named _dirq_* (any case) is reserved",
      ["-c", "bad/schema-internal.toml"],
      ["bad/schema-internal.toml: table[0].schema._Dirq_File_Path", "reserved for dirq"],
    ],
    [
      "a schema column named sqlite_* (any case) is reserved",
      ["-c", "bad/schema-sqlite.toml"],
      ["bad/schema-sqlite.toml: table[0].schema.SQLite_rowid", "reserved for SQLite"],
    ],
    [
      "a bad second config after a good first one",
      ["-c", "conf/tables.toml", "-c", "bad/unknown-top.toml"],
      ["bad/unknown-top.toml", "bogus: unknown key"],
    ],
  ];
  for (const [title, args, needles] of cases) {
    it(title, async () => {
      assertFailure(await run(["SELECT 1", ...args]), ...needles);
    });
  }

  it("a config error fails dirq query too", async () => {
    assertFailure(
      await run(["query", "SELECT 1", "-c", "bad/unknown-table.toml"]),
      "table[0].globs: unknown key",
    );
  });

  it("bad ddl SQL: the file, the table and ddl named, with SQLite's reason", async () => {
    assertFailure(
      await run(["SELECT * FROM t", "-c", "bad/ddl.toml"]),
      "bad/ddl.toml",
      "table[0].ddl",
      /syntax error/,
    );
  });

  it("schema columns that differ only in case are a config error", async () => {
    assertFailure(
      await run(["SELECT * FROM t", "-c", "bad/schema-case.toml"]),
      "bad/schema-case.toml",
      "table[0].schema",
    );
  });

  it("a table name SQLite reserves (sqlite_*) is a config error", async () => {
    assertFailure(
      await run(["SELECT * FROM sqlite_stuff", "-c", "bad/name-sqlite.toml"]),
      "bad/name-sqlite.toml",
      "table[0].name",
    );
  });

  it("-c without a value is an error", async () => {
    assertFailure(await run(["SELECT 1", "-c"]), "-c");
  });

  for (const args of [
    ["-c", "conf/tables.toml", "query", "SELECT 1"],
    ["--config", "conf/tables.toml", "query", "SELECT 1"],
    ["--config=conf/tables.toml", "query", "SELECT 1"],
  ]) {
    it(`a config flag before the subcommand is a hard error: ${args.join(" ")}`, async () => {
      assertFailure(await run(args), args[0]?.split("=")[0] ?? "");
    });
  }
});
