import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import { harnessSeed, seededRandom } from "./differential.js";
import { isDirqError, open, type ParameterValue, type Row } from "../src/index.js";
import { assertUserError, makeTree, removeTree, runDirq } from "./helpers.js";
import {
  assertJsonError,
  cpuTicks,
  eventually,
  postQuery,
  processTree,
  type ServerProcess,
  startServer,
} from "./server-support.js";

const SEED = harnessSeed(35_12);

/** The SQL literal SQLite reads as `value`: the reference a bound value is compared with. */
function literal(value: ParameterValue): string {
  if (value === null) return "NULL";
  if (typeof value === "string") return `'${value.replaceAll("'", "''")}'`;
  if (value instanceof Uint8Array) return `X'${Buffer.from(value).toString("hex")}'`;
  if (typeof value === "bigint") return value.toString();
  // A whole number within 2^53 is an INTEGER literal; others are REAL ones, written exactly.
  if (Number.isSafeInteger(value)) return String(value);
  const text = String(value);
  return /[.eE]/.test(text) ? text : `${text}.0`;
}

/** Values of every kind a statement can be given, with the ones readers get wrong. */
function values(random: () => number): ParameterValue[] {
  const picked: ParameterValue[] = [
    null,
    0,
    -1,
    42,
    2 ** 53 - 1,
    -(2 ** 53 - 1),
    1.5,
    -0.25,
    1e300,
    2 ** 60,
    9007199254740993n,
    -9223372036854775808n,
    9223372036854775807n,
    "",
    "it's",
    "naïve ☃ 日本",
    "9007199254740993",
    new Uint8Array([]),
    new Uint8Array([0, 1, 254, 255]),
    Buffer.from("blob"),
  ];
  for (let i = 0; i < 20; i++) {
    const kind = Math.floor(random() * 5);
    if (kind === 0) picked.push(Math.floor((random() - 0.5) * 2 ** 53));
    else if (kind === 1) picked.push((random() - 0.5) * 10 ** Math.floor(random() * 30));
    else if (kind === 2) picked.push(BigInt(Math.floor(random() * 2 ** 31)) * 2n ** 32n + 7n);
    else if (kind === 3)
      picked.push(String.fromCharCode(...[1, 2, 3].map(() => 32 + Math.floor(random() * 90))));
    else picked.push(new Uint8Array([1, 2, 3].map(() => Math.floor(random() * 256))));
  }
  return picked;
}

let root: string;

before(() => {
  root = makeTree({
    "notes/a.md": "a",
    "notes/b.md": "bb",
    "notes/c.md": "ccc",
    "notes/d.txt": "dddd",
  });
});

after(() => removeTree(root));

async function rejection(work: Promise<unknown>): Promise<{ code: string; message: string }> {
  try {
    await work;
  } catch (error) {
    assert.ok(isDirqError(error), `a DirqError, got ${String(error)}`);
    return { code: error.code, message: error.message };
  }
  assert.fail("expected the query to reject");
}

describe(`SDK bound parameters (seed ${SEED})`, () => {
  test("each value bound positionally answers as its SQL literal does (value and type)", async () => {
    const db = open({ root, progress: false });
    try {
      const failures: string[] = [];
      for (const value of values(seededRandom(SEED))) {
        const bound = await db.query("SELECT ? AS v, typeof(?) AS t, quote(?) AS q", [
          value,
          value,
          value,
        ]);
        const written = literal(value);
        const expected = await db.query(
          `SELECT ${written} AS v, typeof(${written}) AS t, quote(${written}) AS q`,
        );
        if (!isDeepStrictEqual(bound, expected)) {
          failures.push(`${written}: bound ${show(bound)}, literal ${show(expected)}`);
        }
      }
      assert.deepEqual(failures, [], `seed ${SEED}`);
    } finally {
      await db.close();
    }
  });

  test("named parameters: :name, @name and $name bind from one object; filters a path-table", async () => {
    const db = open({ root, progress: false });
    try {
      assert.deepEqual(
        await db.query("SELECT :a AS x, @b AS y, $c AS z, :a + 1 AS again", {
          a: 1,
          b: "two",
          c: null,
        }),
        [{ x: 1, y: "two", z: null, again: 2 }],
      );
      const rows = await db.query(
        "SELECT path FROM './notes' WHERE size >= :min AND ext = :ext ORDER BY path",
        { min: 2, ext: "md" },
      );
      assert.deepEqual(rows, [{ path: "notes/b.md" }, { path: "notes/c.md" }]);
      // Positional, with ?NNN at its position.
      assert.deepEqual(await db.query("SELECT ?2 AS second, ?1 AS first", ["one", "two"]), [
        { second: "two", first: "one" },
      ]);
      // Named parameters called like the options are still parameters.
      assert.deepEqual(await db.query("SELECT :settle AS s", { settle: "yes" }), [{ s: "yes" }]);
      // An integer number binds as INTEGER, as the literal would: 5 / 2 is 2.
      assert.deepEqual(await db.query("SELECT ? / 2 AS half", [5]), [{ half: 2 }]);
    } finally {
      await db.close();
    }
  });

  test("a wrong count, an unknown or missing name, the wrong shape or value are QUERY_PARAMETERS", async () => {
    const db = open({ root, progress: false });
    try {
      const cases: [Promise<unknown>, RegExp][] = [
        [db.query("SELECT ?, ?", [1]), /2 positional parameters and 1 value was given/],
        [db.query("SELECT ?", [1, 2]), /1 positional parameter and 2 values were given/],
        [db.query("SELECT ?"), /no values were given/],
        [db.query("SELECT 1", [1]), /0 positional parameters and 1 value was given/],
        [db.query("SELECT :a", { a: 1, b: 2 }), /no parameter named "b".*it has :a/],
        [db.query("SELECT :a, :b", { a: 1 }), /no value for parameter :b/],
        [db.query("SELECT :a", [1]), /named parameters \(:a\): pass an object/],
        [db.query("SELECT ?", { a: 1 }), /pass an array of values, not an object/],
        [db.query("SELECT ?, :a", [1]), /mixes positional/],
        [
          db.query("SELECT ?", [true as unknown as ParameterValue]),
          /parameter 1 \(\?\): a boolean cannot be bound/,
        ],
        [db.query("SELECT ?", [2n ** 63n]), /outside SQLite's 64-bit integers/],
        [
          db.query("SELECT :d", { d: new Date() as unknown as ParameterValue }),
          /parameter :d: an object \(Date\)/,
        ],
      ];
      for (const [work, pattern] of cases) {
        const { code, message } = await rejection(work);
        assert.equal(code, "QUERY_PARAMETERS", message);
        assert.match(message, pattern);
      }
      // The index still answers.
      assert.deepEqual(await db.query("SELECT ? AS ok", [1]), [{ ok: 1 }]);
    } finally {
      await db.close();
    }
  });
});

/** Query processes this process started that are running now. */
function queryProcesses(): number[] {
  return processTree(process.pid).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes("query-process.js");
    } catch {
      return false;
    }
  });
}

const ENDLESS =
  "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c) SELECT count(*) AS n FROM c";

describe("SDK cancellation: query(sql, { signal })", () => {
  test("aborting stops a running statement: QUERY_CANCELLED, and the process running it is gone", async () => {
    const db = open({ root, progress: false });
    try {
      // A query process is up first: one still starting uses CPU before it has the statement.
      await db.query("SELECT 1", { signal: new AbortController().signal });
      const stop = new AbortController();
      const running = db.query(ENDLESS, { signal: stop.signal });
      running.catch(() => undefined);
      // The process that runs it is the one working: a tenth of a second of CPU since the
      // statement was sent, which an idle one of the pool (up, or starting) never takes.
      const ticksAtStart = new Map<number, number>();
      let pid = 0;
      await eventually(
        () => {
          for (const candidate of queryProcesses()) {
            const ticks = cpuTicks(candidate);
            if (ticks === null) continue;
            if (!ticksAtStart.has(candidate)) ticksAtStart.set(candidate, ticks);
            if (ticks - (ticksAtStart.get(candidate) ?? ticks) >= 10) pid = candidate;
          }
          return pid !== 0;
        },
        "a query process runs the statement",
        30_000,
      );
      stop.abort();
      const { code } = await rejection(running);
      assert.equal(code, "QUERY_CANCELLED");
      await eventually(() => cpuTicks(pid) === null, "the query process is gone", 10_000);
      // The next statement runs.
      assert.deepEqual(
        await db.query("SELECT 1 AS one", { signal: new AbortController().signal }),
        [{ one: 1 }],
      );
    } finally {
      await db.close();
    }
  });

  test("a signal already aborted rejects at once; with a signal the rows are the same as without", async () => {
    const db = open({
      root,
      progress: false,
      tables: [
        {
          name: "t",
          glob: "notes/*",
          extract: (path, content) => [
            { path, size: content.length, big: 9007199254740993n, real: 0.5, none: null },
          ],
        },
      ],
    });
    try {
      const { code } = await rejection(db.query("SELECT 1", { signal: AbortSignal.abort() }));
      assert.equal(code, "QUERY_CANCELLED");
      const sql =
        "SELECT path, size, big, real, none, X'00ff' AS blob, ? AS p FROM t WHERE size <= ? ORDER BY path";
      const plain = await db.query(sql, ["x", 3]);
      const signal = new AbortController().signal;
      assert.deepEqual(await db.query(sql, ["x", 3], { signal }), plain);
      assert.equal(plain.length, 3);
      assert.equal(plain[0]?.big, 9007199254740993n);
      // A path-table built for the statement, and files changed since: the answer follows.
      const before = await db.query("SELECT count(*) AS n FROM './notes'", { signal });
      assert.deepEqual(before, [{ n: 4 }]);
      const { writeFileSync, rmSync } = await import("node:fs");
      writeFileSync(`${root}/notes/e.md`, "e");
      try {
        const fresh = open({ root, progress: false });
        try {
          assert.deepEqual(await fresh.query("SELECT count(*) AS n FROM './notes'", { signal }), [
            { n: 5 },
          ]);
        } finally {
          await fresh.close();
        }
      } finally {
        rmSync(`${root}/notes/e.md`);
      }
    } finally {
      await db.close();
    }
    await eventually(() => queryProcesses().length === 0, "close() ends the query process");
  });
});

describe("SDK: bound parameters and a signal with a worker-backed function", () => {
  test("the worker gets the bound value, in this process and in the query process", async () => {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(
      `${root}/worker.mjs`,
      `import { createInterface } from "node:readline";
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { id, args } = JSON.parse(line);
  process.stdout.write(JSON.stringify({ id, result: String(args[0]).toUpperCase() }) + "\\n");
});
lines.on("close", () => process.exit(0));
`,
    );
    writeFileSync(
      `${root}/worker.toml`,
      `[[dirq.function]]\nname = "up"\ncommand = "node worker.mjs"\n`,
    );
    const db = open({ root, progress: false, configs: [`${root}/worker.toml`] });
    try {
      const named = "SELECT up(:word) AS u";
      assert.deepEqual(await db.query(named, { word: "hi" }), [{ u: "HI" }]);
      const signal = new AbortController().signal;
      assert.deepEqual(await db.query(named, { word: "there" }, { signal }), [{ u: "THERE" }]);
      const positional = "SELECT up(path) AS p FROM './notes' WHERE size = ? ORDER BY path";
      assert.deepEqual(await db.query(positional, [2], { signal }), [{ p: "NOTES/B.MD" }]);
    } finally {
      await db.close();
    }
  });
});

describe("the CLI and HTTP keep refusing parameters", () => {
  let server: ServerProcess;
  before(async () => {
    server = await startServer(["--port", "0"], { cwd: root });
  });
  after(() => server.kill());

  test("dirq exits 1 and POST /query answers 400, naming the parameter", async () => {
    for (const sql of ["SELECT ?", "SELECT :name", "SELECT @n", "SELECT $n", "SELECT ?1"]) {
      assertUserError(await runDirq([sql], { cwd: root }), /bound parameter/);
      assertJsonError(await postQuery(server, sql), 400, /bound parameter/);
    }
  });
});

function show(rows: Row[]): string {
  return JSON.stringify(rows, (_key, value: unknown) =>
    typeof value === "bigint" ? `${value}n` : value,
  );
}

function isDeepStrictEqual(a: unknown, b: unknown): boolean {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
}
