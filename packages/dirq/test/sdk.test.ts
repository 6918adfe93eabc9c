import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  isDirqError,
  open,
  type Row,
  type RowEvent as SdkRowEvent,
  type WatchEvent as RowEvent,
} from "../src/index.js";
import { makeTree, python3, removeTree, runDirq, withoutCommit } from "./helpers.js";
import { seededRandom } from "./differential.js";
import { openReadyEvents, startServer } from "./server-support.js";

/** A hook that prints one row per file from its JSON content (for config tables). */
const HOOK = `import { readFileSync } from "node:fs";
const data = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify([data]));
`;

const CONFIG = `[[table]]
name = "hooked"
glob = "posts/*.json"
on-file = "node hook.mjs {path}"
`;

function post(title: string, words: number): string {
  return JSON.stringify({ title, words });
}

const parsePost = (_path: string, content: Buffer) => [JSON.parse(content.toString("utf8"))];

/**
 * Reads `{cli, same}` (two JSON answers) on stdin and checks that Python's json reads the same
 * rows from both: every number equal and of the same type (int or float), infinities too.
 */
const SAME_NUMBERS_PY = `
import json, sys
texts = json.load(sys.stdin)
cli, same = json.loads(texts["cli"]), json.loads(texts["same"])
assert len(cli) == len(same), (len(cli), len(same))
for a, b in zip(cli, same):
    for key in a:
        x, y = a[key], b[key]
        assert type(x) is type(y) and x == y, (key, a, b)
print("same", len(cli), "rows")
`;

function parseCliRows(stdout: string): Row[] {
  return JSON.parse(stdout) as Row[];
}

describe("SDK: open, query, values and rules", () => {
  let root: string;
  before(() => {
    root = makeTree({
      "hook.mjs": HOOK,
      "dirq.toml": CONFIG,
      "posts/a.json": post("alpha", 120),
      "posts/b.json": post("beta", 80),
      "posts/c.json": post("gamma", 300),
      "notes/readme.md": "# notes\n",
    });
  });
  after(() => removeTree(root));

  test("tables from code (sync and async extract) and from config files, with path-tables", async () => {
    const db = open({
      root,
      progress: false,
      configs: [join(root, "dirq.toml")],
      tables: [
        { name: "posts", glob: "posts/*.json", extract: parsePost },
        {
          name: "lengths",
          glob: "**/*.md",
          schema: { lines: "INTEGER" },
          extract: async (path, content) => [
            { path, lines: content.toString().split("\n").length },
          ],
        },
      ],
    });
    try {
      await db.ready;
      assert.deepEqual(await db.query("SELECT title, words FROM posts ORDER BY words"), [
        { title: "beta", words: 80 },
        { title: "alpha", words: 120 },
        { title: "gamma", words: 300 },
      ]);
      assert.deepEqual(await db.query("SELECT * FROM lengths"), [{ lines: 2 }]);
      const hooked = await db.query("SELECT title FROM hooked ORDER BY title");
      assert.deepEqual(hooked, [{ title: "alpha" }, { title: "beta" }, { title: "gamma" }]);
      const sql = "SELECT path, basename, dir, ext, size FROM './' ORDER BY path";
      const cli = await runDirq([sql, "--format", "json"], { cwd: root });
      assert.equal(cli.code, 0, cli.stderr);
      assert.deepEqual(await db.query(sql), parseCliRows(cli.stdout));
      assert.deepEqual(db.skipped, []);
    } finally {
      await db.close();
    }
  });

  test("values are the CLI's JSON values (bigint beyond 2^53, hex BLOB, null for NaN)", async () => {
    const sql =
      "SELECT 9223372036854775807 AS big, -42 AS small, 1.5 AS real, 1e999 AS inf, x'00ff' AS blob, 'ü' AS text, NULL AS empty";
    await using db = open({ root, progress: false });
    const [row] = await db.query(sql);
    assert.deepEqual(row, {
      big: 9223372036854775807n,
      small: -42,
      real: 1.5,
      inf: null,
      blob: "00ff",
      text: "ü",
      empty: null,
    });
    const cli = await runDirq([sql, "--format", "json"], { cwd: root });
    assert.equal(
      cli.stdout,
      '[{"big":9223372036854775807,"small":-42,"real":1.5,"inf":null,"blob":"00ff","text":"ü","empty":null}]\n',
    );
  });

  test("queryJson is the CLI's JSON text, short answers and long ones SQLite writes", async () => {
    await using db = open({ root, progress: false });
    const statements = [
      "SELECT 9223372036854775807 AS big, 1.5 AS real, 1e999 AS inf, x'00ff' AS blob, 'ü\"' AS text, NULL AS empty",
      // Past the first answer's JS rows: SQLite writes it (the REALs 0.1 and 1e300 as well).
      "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 5000) " +
        "SELECT i, i * 1099511627776 AS big, 'row ' || i || ' ü' AS text, " +
        "CASE WHEN i % 7 = 0 THEN NULL ELSE printf('%08d', i) END AS code, " +
        "CASE WHEN i % 11 = 0 THEN i * 0.1 ELSE i * 1e300 END AS real, " +
        "CASE WHEN i % 13 = 0 THEN x'0aff' END AS blob FROM c",
      "SELECT path, size FROM './' ORDER BY path",
      "SELECT 1 AS x WHERE 0",
    ];
    for (const sql of statements) {
      const cli = await runDirq([sql, "--format", "json"], { cwd: root });
      assert.equal(cli.code, 0, cli.stderr);
      assert.equal((await db.queryJson(sql)).toString("utf8"), cli.stdout, sql);
    }
    const positional = await db.queryJson("SELECT ? AS a, ? AS b", [9007199254740993n, "x"]);
    assert.equal(positional.toString("utf8"), '[{"a":9007199254740993,"b":"x"}]\n');
    const named = await db.queryJson("SELECT :a AS a", { a: 2.5 });
    assert.equal(named.toString("utf8"), '[{"a":2.5}]\n');
    await assert.rejects(db.queryJson("DELETE FROM './'"), { code: "QUERY_NOT_READONLY" });
  });

  test("queryJson realText same-value: Python's json reads the same numbers as from the CLI's text (seed 5151)", async () => {
    const random = seededRandom(5151);
    const doubles: number[] = [-0, 0.5, 1, 2 ** 53 - 1, 1e21, 5e-324, 1.7976931348623157e308];
    doubles.push(9.999999999999999e20 * 10, 1 / 3, 0.1 + 0.2, -(2 ** 52) - 0.5);
    for (let i = 0; i < 1500; i++) {
      const exponent = Math.floor(random() * 640) - 325;
      doubles.push(Number(`${(random() - 0.5) * 20}e${exponent}`));
      doubles.push(Math.round((random() - 0.5) * 2 ** Math.floor(random() * 54)));
    }
    // Values SQLite would not write as the same number of the same kind: the JS way.
    const odd = [2 ** 53, -(2 ** 53) - 2, 1e21 - 65536, 2 ** 63, 12345678901234567000];
    const jsonLines = (values: number[]) =>
      `${values.map((x, i) => JSON.stringify({ i, x })).join("\n")}\n`;
    const tree = makeTree({
      "plain.jsonl": jsonLines(
        doubles.filter((x) => Math.abs(x) < 2 ** 53 || (Math.abs(x) >= 1e21 && Number.isFinite(x))),
      ),
      "odd.jsonl": `${jsonLines([...doubles.slice(0, 50), ...odd])}{"i": -1, "x": 1e999}\n`,
    });
    try {
      await using numbers = open({
        root: tree,
        progress: false,
        tables: [
          { name: "plain", glob: "plain.jsonl", format: "jsonl" },
          { name: "odd", glob: "odd.jsonl", format: "jsonl" },
        ],
      });
      // Columns read straight from a table, and the same values computed by an expression.
      for (const [sql, sqliteWrites] of [
        ["SELECT i, x FROM plain ORDER BY i", true],
        ["SELECT i, x * 1.0 AS x, -x AS negated FROM plain ORDER BY i", true],
        ["SELECT i, x FROM odd ORDER BY i", false],
        ["SELECT i, -x AS negated FROM odd ORDER BY i", false],
      ] as const) {
        const cli = (await numbers.queryJson(sql)).toString("utf8");
        const same = (await numbers.queryJson(sql, undefined, { realText: "same-value" })).toString(
          "utf8",
        );
        // SQLite wrote it (its own forms of some numbers), or it went the JS way (the CLI's bytes).
        assert.equal(same !== cli, sqliteWrites, sql);
        const compared = spawnSync(python3(), ["-c", SAME_NUMBERS_PY], {
          encoding: "utf8",
          input: JSON.stringify({ cli, same }),
        });
        assert.equal(compared.status, 0, `${sql}: ${compared.stdout}${compared.stderr}`);
        assert.match(compared.stdout, /^same \d+ rows\n$/);
      }
    } finally {
      removeTree(tree);
    }
  });

  test("the CLI's read-only rules and diagnostics", async () => {
    await using db = open({ root, progress: false });
    for (const sql of [
      "DELETE FROM './'",
      "CREATE TABLE t (x)",
      "ATTACH 'x.db' AS x",
      "PRAGMA user_version = 3",
      "SELECT 1; SELECT 2",
      "SELECT * FROM _dirq_tables",
      "SELECT * FROM files",
      "SELECT nonsense FROM",
    ]) {
      const cli = await runDirq([sql], { cwd: root });
      assert.equal(cli.code, 1, `${sql}: ${cli.stderr}`);
      await assert.rejects(
        db.query(sql),
        (error: unknown) => {
          assert.ok(isDirqError(error), `${sql}: ${String(error)}`);
          assert.equal(`dirq: ${error.message}\n`, cli.stderr, sql);
          return true;
        },
        sql,
      );
    }
  });

  test("onFile parses every path-table a statement names, as --on-file", async () => {
    const tree = makeTree({ "a.rows": '[{"x": 1}, {"x": 2}]', "b.rows": '[{"x": 3}]' });
    try {
      await using db = open({ root: tree, progress: false, onFile: "cat {path}" });
      const sql = "SELECT sum(x) AS total, count(*) AS n FROM './*.rows'";
      assert.deepEqual(await db.query(sql), [{ total: 6, n: 3 }]);
      const cli = await runDirq([sql, "--on-file", "cat {path}"], { cwd: tree });
      assert.deepEqual(await db.query(sql), parseCliRows(cli.stdout));
    } finally {
      removeTree(tree);
    }
  });

  test("overlapping queries run one after another", async () => {
    await using db = open({
      root,
      progress: false,
      tables: [{ name: "posts", glob: "posts/*.json", extract: parsePost }],
    });
    const answers = await Promise.all([
      db.query("SELECT count(*) AS n FROM posts"),
      db.query("SELECT count(*) AS n FROM './'"),
      db.query("SELECT count(*) AS n FROM './posts'"),
    ]);
    assert.deepEqual(answers, [[{ n: 3 }], [{ n: 6 }], [{ n: 3 }]]);
  });

  test("one bad file is skipped with its reason; the other rows stand", async () => {
    const tree = makeTree({
      "a.json": post("ok", 1),
      "b.json": "{not json",
      "c.json": post("fine", 2),
      "d.json": "[1]",
    });
    try {
      await using db = open({
        root: tree,
        progress: false,
        tables: [
          { name: "docs", glob: "*.json", extract: parsePost },
          {
            name: "shapes",
            glob: "d.json",
            extract: (_path, content) => JSON.parse(String(content)),
          },
        ],
      });
      await db.ready;
      assert.deepEqual(await db.query("SELECT title FROM docs ORDER BY title"), [
        { title: "fine" },
        { title: "ok" },
      ]);
      const reasons = Object.fromEntries(db.skipped.map((file) => [file.path, file.reason]));
      assert.match(reasons["b.json"] ?? "", /^extract failed: .*JSON/);
      assert.equal(reasons["d.json"], "row 0 of extract's result is a number, expected an object");
    } finally {
      removeTree(tree);
    }
  });

  test("bad definitions fail at open, naming the key; bad ddl rejects ready and query", async () => {
    const cases: [unknown, RegExp][] = [
      [
        { name: "1bad", glob: "*", extract: parsePost },
        /^tables\[0\]\.name: expected an SQL identifier/,
      ],
      [
        { name: "t", glob: "*" },
        /^tables\[0\]: give exactly one of format .*, onFile .* or extract/,
      ],
      [{ name: "t", glob: "*", extract: parsePost, onFile: "cat" }, /give exactly one/],
      [{ name: "t", glob: "*", extract: "x" }, /^tables\[0\]\.extract: expected a function/],
      [
        { name: "t", glob: "*", extract: parsePost, colour: 1 },
        /^tables\[0\]\.colour: unknown key/,
      ],
      [{ name: "t", glob: "*", onFile: "" }, /^tables\[0\]\.onFile: must not be empty/],
      [
        { name: "t", glob: "*", extract: parsePost, schema: { a: "NOT A TYPE!" } },
        /^tables\[0\]\.schema\.a: expected a column type/,
      ],
      [
        { name: "hooked", glob: "*", extract: parsePost },
        /^tables\[0\]\.name: table 'hooked' is already defined at .*dirq\.toml: table\[0\]/,
      ],
    ];
    for (const [definition, pattern] of cases) {
      assert.throws(
        () =>
          open({
            root,
            progress: false,
            configs: [join(root, "dirq.toml")],
            tables: [definition as never],
          }),
        (error: unknown) =>
          isDirqError(error) && error.code === "CONFIG_INVALID" && pattern.test(error.message),
        JSON.stringify(definition),
      );
    }
    assert.throws(() => open({ root: join(root, "missing") }), /is not a directory/);
    // A root the system cannot look up (a loop of symlinks): a user error naming the reason.
    symlinkSync("loop-b", join(root, "loop-a"));
    symlinkSync("loop-a", join(root, "loop-b"));
    try {
      assert.throws(
        () => open({ root: join(root, "loop-a") }),
        (error: unknown) =>
          isDirqError(error) &&
          error.code === "ROOT_INVALID" &&
          /root '.*loop-a' cannot be opened \(ELOOP\)/.test(error.message),
      );
    } finally {
      rmSync(join(root, "loop-a"));
      rmSync(join(root, "loop-b"));
    }
    assert.throws(() => open({ root, configs: ["nope.toml"] }), /config file nope\.toml not found/);
    const db = open({
      root,
      progress: false,
      tables: [
        {
          name: "t",
          glob: "posts/*.json",
          extract: parsePost,
          ddl: "CREATE INDEX i ON nowhere(x)",
        },
      ],
    });
    await assert.rejects(db.ready, /tables\[0\]\.ddl: no such table: main\.nowhere/);
    await assert.rejects(db.query("SELECT 1"), /tables\[0\]\.ddl/);
    await db.close();
  });

  test("close and Symbol.asyncDispose release the index; later calls fail clearly", async () => {
    const db = open({ root, progress: false });
    assert.deepEqual(await db.query("SELECT 1 AS one"), [{ one: 1 }]);
    await db[Symbol.asyncDispose]();
    await db.close();
    await assert.rejects(db.query("SELECT 1"), (error: unknown) => {
      return isDirqError(error) && error.code === "INDEX_CLOSED";
    });
    assert.throws(() => db.watch(), /closed/);
  });
});

describe("SDK: watch", () => {
  let root: string;
  before(() => {
    root = makeTree({
      "hook.mjs": HOOK,
      "dirq.toml": CONFIG,
      "posts/a.json": post("alpha", 120),
    });
  });
  after(() => removeTree(root));

  async function nextEvents(
    iterator: AsyncIterator<RowEvent>,
    done: (events: RowEvent[]) => boolean,
  ): Promise<RowEvent[]> {
    const events: RowEvent[] = [];
    const timeout = setTimeout(() => void iterator.return?.(), 10_000);
    try {
      while (!done(events)) {
        const next = await iterator.next();
        if (next.done) throw new Error(`the stream ended early: ${JSON.stringify(events)}`);
        events.push(next.value);
      }
    } finally {
      clearTimeout(timeout);
    }
    return events;
  }

  test("insert, update, delete and error events are the server's SSE row data", async () => {
    const server = await startServer(["-c", "dirq.toml", "--port", "0"], { cwd: root });
    const sse = await openReadyEvents(server);
    const db = open({
      root,
      progress: false,
      configs: [join(root, "dirq.toml")],
      tables: [{ name: "posts", glob: "posts/*.json", extract: parsePost }],
    });
    try {
      const stream = db.watch();
      await stream.ready;
      const iterator = stream[Symbol.asyncIterator]();
      const forTable = (events: RowEvent[], table: string) =>
        events.filter((e): e is SdkRowEvent => e.action !== "reset" && e.table === table);
      // A broken file comes last, as a new file: whether a failing file keeps its old rows or
      // loses them, it then has none, and the error event is the only event.
      const steps: [() => void, string][] = [
        [() => writeFileSync(join(root, "posts/b.json"), post("beta", 7)), "insert"],
        [() => writeFileSync(join(root, "posts/b.json"), post("beta", 8)), "update"],
        [() => rmSync(join(root, "posts/b.json")), "delete"],
        [() => writeFileSync(join(root, "posts/c.json"), "{broken"), "error"],
      ];
      for (const [change, action] of steps) {
        change();
        const events = await nextEvents(iterator, (got) =>
          ["posts", "hooked"].every((table) =>
            forTable(got, table).some((e) => e.action === action),
          ),
        );
        const fromSdk = forTable(events, "hooked").find((e) => e.action === action);
        const fromServer = await sse.next((row) => row.table === "hooked" && row.action === action);
        if (action === "error") {
          assert.equal(fromSdk?.file_path, fromServer.file_path);
          assert.equal(fromSdk?.table, fromServer.table);
        } else {
          assert.deepEqual(fromSdk && withoutCommit(fromSdk), fromServer);
        }
        const posts = forTable(events, "posts").find((e) => e.action === action);
        assert.equal(posts?.file_path, action === "error" ? "posts/c.json" : "posts/b.json");
        if (posts?.action === "insert") {
          assert.deepEqual(withoutCommit(posts), {
            action: "insert",
            table: "posts",
            file_path: "posts/b.json",
            row: { title: "beta", words: 7 },
            old_row: null,
          });
        }
        if (posts?.action === "error") assert.match(posts.error, /^extract failed: /);
      }
      assert.deepEqual(await db.query("SELECT title FROM posts"), [{ title: "alpha" }]);
      await iterator.return?.();
    } finally {
      rmSync(join(root, "posts/c.json"), { force: true });
      sse.close();
      await server.kill();
      await db.close();
    }
  });

  test("live keeps tables current without a watch() consumer", async () => {
    await using db = open({
      root,
      live: true,
      progress: false,
      tables: [{ name: "posts", glob: "posts/*.json", extract: parsePost }],
    });
    await db.ready;
    writeFileSync(join(root, "posts/live.json"), post("live", 5));
    try {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const rows = await db.query("SELECT title FROM posts WHERE title = 'live'");
        if (rows.length === 1) break;
        assert.ok(Date.now() < deadline, "the new file never showed up");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      rmSync(join(root, "posts/live.json"), { force: true });
    }
  });

  test("break, an abort signal and close() each end the iteration", async () => {
    const db = open({
      root,
      progress: false,
      tables: [{ name: "posts", glob: "posts/*.json", extract: parsePost }],
    });
    try {
      const first = db.watch();
      await first.ready;
      writeFileSync(join(root, "posts/x.json"), post("x", 1));
      for await (const event of first) {
        assert.equal(event.action !== "reset" && event.file_path, "posts/x.json");
        break;
      }
      const controller = new AbortController();
      const second = db.watch({ signal: controller.signal });
      await second.ready;
      writeFileSync(join(root, "posts/y.json"), post("y", 1));
      const seen: RowEvent[] = [];
      for await (const event of second) {
        seen.push(event);
        controller.abort();
      }
      assert.ok(seen.length >= 1);
      const third = db.watch();
      await third.ready;
      const ended = (async () => {
        const rest: RowEvent[] = [];
        for await (const event of third) rest.push(event);
        return rest;
      })();
      await db.close();
      assert.ok(Array.isArray(await ended));
    } finally {
      await db.close();
      rmSync(join(root, "posts/x.json"), { force: true });
      rmSync(join(root, "posts/y.json"), { force: true });
    }
  });
});

describe("SDK: progress honours DIRQ_PROGRESS", () => {
  test("always reports phases on stderr, never reports nothing, stdout untouched", () => {
    const root = makeTree({ "a.json": post("a", 1), "b.json": post("b", 2) });
    const index = fileURLToPath(new URL("../src/index.js", import.meta.url));
    const script = `import { open } from ${JSON.stringify(index)};
const db = open({ root: ${JSON.stringify(root)}, tables: [{ name: "t", glob: "*.json", extract: (p, c) => [JSON.parse(c)] }] });
console.log(JSON.stringify(await db.query("SELECT count(*) AS n FROM t")));
await db.close();`;
    try {
      const run = (value: string) =>
        spawnSync(process.execPath, ["--input-type=module", "-e", script], {
          encoding: "utf8",
          env: { ...process.env, DIRQ_PROGRESS: value },
        });
      const always = run(" Always ");
      assert.equal(always.status, 0, always.stderr);
      assert.equal(always.stdout, '[{"n":2}]\n');
      assert.match(always.stderr, /^dirq: scanned 2 files in \S+$/m);
      assert.match(always.stderr, /^dirq: indexed 2 files in \S+$/m);
      const never = run("never");
      assert.equal(never.status, 0, never.stderr);
      assert.equal(never.stdout, '[{"n":2}]\n');
      assert.equal(never.stderr, "");
      // auto, off a terminal: nothing.
      assert.equal(run("").stderr, "");
    } finally {
      removeTree(root);
    }
  });
});

describe("SDK: extensions", () => {
  test("open({ extensions }) loads a SQLite extension, as --extension does", async () => {
    const vec0 = createRequire(import.meta.url).resolve("sqlite-vec-linux-x64/vec0.so");
    const root = makeTree({ "a.txt": "a" });
    const db = open({ root, extensions: [vec0], progress: false });
    try {
      await db.ready;
      assert.deepEqual(await db.query("SELECT vec_length('[1,2,3,4]') AS n"), [{ n: 4 }]);
    } finally {
      await db.close();
      removeTree(root);
    }
  });
});

describe("SDK: persist", () => {
  test("a second open of the same cache calls extract only for files that changed", async () => {
    const root = makeTree({ "posts/a.json": post("alpha", 1), "posts/b.json": post("beta", 2) });
    try {
      const calls: string[] = [];
      const tables = [
        {
          name: "posts",
          glob: "posts/*.json",
          extract: (path: string, content: Buffer) => {
            calls.push(path);
            return parsePost(path, content);
          },
        },
      ];
      const sum = "SELECT sum(words) AS words FROM posts";
      {
        await using db = open({ root, progress: false, persist: true, tables });
        assert.deepEqual(await db.query(sum), [{ words: 3 }]);
      }
      assert.equal(calls.length, 2);
      writeFileSync(join(root, "posts/b.json"), post("beta", 20));
      {
        await using db = open({ root, progress: false, persist: true, tables });
        assert.deepEqual(await db.query(sum), [{ words: 21 }]);
        assert.deepEqual(db.notices, []);
      }
      assert.deepEqual(calls.slice(2), ["posts/b.json"]);
    } finally {
      removeTree(root);
    }
  });
});
