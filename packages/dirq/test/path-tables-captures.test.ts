/**
 * `{name}` captures in a path-table's glob: columns beside the seven (and beside a format's or
 * a hook's columns with --parse, --on-file), through the built CLI, the REPL, --persist and the
 * server's events.
 */
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { assertUserError, parseRows, runDirq, runOk, tempTree } from "./helpers.js";
import { openReadyEvents, queryRows, type ServerProcess, startServer } from "./server-support.js";

const TREE = {
  "posts/2024/post-1.md": "a",
  "posts/2025/post-2.md": "bb",
  "posts/2025/post-10.md": "ccc",
  "posts/2025/notes.md": "n",
  "data/eu/sales.json": '{"total": 3, "region": "from the file"}',
  "data/us/sales.json": '{"total": 5}',
};

async function rows(root: string, sql: string, args: string[] = []) {
  return parseRows(await runOk(root, [sql, "--format", "json", ...args]));
}

describe("path-table captures", () => {
  let root: string;
  before(() => {
    root = tempTree(TREE);
  });

  it("groups by a folder's name (the issue's example)", async () => {
    assert.deepEqual(
      await rows(root, "SELECT year, count(*) AS n FROM './posts/{year}/*.md' GROUP BY year"),
      [
        { year: "2024", n: 1 },
        { year: "2025", n: 3 },
      ],
    );
  });

  it("comes after the seven columns, and captures part of a name", async () => {
    const got = await rows(root, "SELECT * FROM './posts/{year}/post-{id}.md' ORDER BY path");
    assert.deepEqual(
      got.map((row) => Object.keys(row)),
      Array(3).fill(["path", "basename", "dir", "ext", "size", "mtime", "ctime", "year", "id"]),
    );
    assert.deepEqual(
      got.map(({ path, year, id }) => ({ path, year, id })),
      [
        { path: "posts/2024/post-1.md", year: "2024", id: "1" },
        { path: "posts/2025/post-10.md", year: "2025", id: "10" },
        { path: "posts/2025/post-2.md", year: "2025", id: "2" },
      ],
    );
  });

  it("selects what the glob with * selects; counting reads no capture", async () => {
    const sql = (glob: string) => `SELECT count(*) AS n FROM '${glob}'`;
    assert.deepEqual(
      await rows(root, sql("./posts/{year}/*")),
      await rows(root, sql("./posts/*/*")),
    );
    assert.deepEqual(
      await rows(root, "SELECT count(*) AS n FROM './posts/{y}/*' WHERE y = '2025'"),
      [{ n: 3 }],
    );
  });

  it("keeps {a,b} brace alternation; a capture one alternative lacks is NULL", async () => {
    assert.deepEqual(
      await rows(
        root,
        "SELECT path, region FROM './{data/{region}/*.json,posts/2024/*}' ORDER BY path",
      ),
      [
        { path: "data/eu/sales.json", region: "eu" },
        { path: "data/us/sales.json", region: "us" },
        { path: "posts/2024/post-1.md", region: null },
      ],
    );
  });

  it("under a trailing /, captures the folder the files are in", async () => {
    assert.deepEqual(await rows(root, "SELECT DISTINCT area FROM './{area}/' ORDER BY area"), [
      { area: "data" },
      { area: "posts" },
    ]);
  });

  it("with --parse, is a column beside the format's and replaces a key of the same name", async () => {
    assert.deepEqual(
      await rows(root, "SELECT region, total FROM './data/{region}/*.json' ORDER BY region", [
        "--parse",
        "json",
      ]),
      [
        { region: "eu", total: 3 },
        { region: "us", total: 5 },
      ],
    );
  });

  it("is an error when named as one of the seven columns or used twice", async () => {
    assertUserError(
      await runDirq(["SELECT * FROM './posts/{size}/*.md'"], { cwd: root }),
      "the capture {size} is named as a column every path-table has",
    );
    // With --parse the table has only the format's columns: the name is free.
    assert.deepEqual(
      await rows(root, "SELECT size, total FROM './data/{size}/*.json' ORDER BY size", [
        "--parse",
        "json",
      ]),
      [
        { size: "eu", total: 3 },
        { size: "us", total: 5 },
      ],
    );
    assertUserError(
      await runDirq(["SELECT * FROM './{a}/{a}/*'"], { cwd: root }),
      "the capture {a} appears twice in one path",
    );
  });

  it("stays from --persist, and a literal \\{name} is no capture", async () => {
    const sql = "SELECT path, year FROM './posts/{year}/*.md' ORDER BY path";
    const first = await rows(root, sql, ["--persist"]);
    assert.deepEqual(await rows(root, sql, ["--persist"]), first);
    assert.equal(first[0]?.year, "2024");
    const literal = tempTree({ "{x}/a.txt": "" });
    assert.deepEqual(await rows(literal, "SELECT path FROM './\\{x}/*'"), [{ path: "{x}/a.txt" }]);
  });

  it("answers in the REPL", async () => {
    const result = await runDirq([], {
      cwd: root,
      input: "SELECT year, count(*) AS n FROM './posts/{year}/*.md' GROUP BY year;\n",
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout.trim(), '[{"year":"2024","n":1},{"year":"2025","n":3}]');
  });
});

describe("path-table captures in the server", () => {
  let root: string;
  let server: ServerProcess;
  before(async () => {
    root = tempTree(TREE);
    server = await startServer(["--host", "127.0.0.1", "--port", "0"], { cwd: root });
  });
  after(() => server.kill());

  it("a new file's row event carries its captures", async () => {
    const table = "./posts/{year}/*.md";
    // Filled on the server's fill thread, whose connection generates the column too.
    assert.deepEqual(
      await queryRows(server, `SELECT year, count(*) AS n FROM '${table}' GROUP BY year`),
      [
        { year: "2024", n: 1 },
        { year: "2025", n: 3 },
      ],
    );
    const stream = await openReadyEvents(server);
    try {
      mkdirSync(join(root, "posts/2026"));
      writeFileSync(join(root, "posts/2026/new.md"), "new");
      const insert = await stream.next(
        (row) => row.action === "insert" && row.file_path === "posts/2026/new.md",
      );
      assert.equal(insert.table, table);
      assert.equal(insert.row?.year, "2026");
      assert.equal(insert.row?.basename, "new.md");
      assert.deepEqual(
        await queryRows(server, `SELECT year FROM '${table}' WHERE basename = 'new.md'`),
        [{ year: "2026" }],
      );
    } finally {
      stream.close();
    }
  });
});
