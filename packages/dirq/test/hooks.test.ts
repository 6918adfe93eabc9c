import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdtempSync, readdirSync, realpathSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
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
/* Hook scripts (written into the temp tree) and the files they parse.                         */
/* ------------------------------------------------------------------------------------------ */

/** Prints its own arguments (a nested array, so stored as JSON text) and working directory. */
const ARGS_HOOK = `process.stdout.write(JSON.stringify([{ argv: process.argv.slice(2), cwd: process.cwd() }]));
`;

/** Prints the file's content verbatim: the file holds the hook output to test. */
const CAT_HOOK = `import { readFileSync } from "node:fs";
process.stdout.write(readFileSync(process.argv[2]));
`;

/** Misbehaves according to the file's name; good files chat on stderr and succeed. */
const BAD_HOOK = `import { basename } from "node:path";
const name = basename(process.argv[2]);
process.stderr.write("chatter from " + name + "\\n");
switch (name) {
  case "exit.json":
    process.stdout.write('[{"file":"exit.json"}]');
    process.stderr.write("first line\\nboom: it broke\\n");
    process.exitCode = 3;
    break;
  case "invalid.json":
    process.stdout.write("not json {");
    break;
  case "object.json":
    process.stdout.write("{}");
    break;
  case "nums.json":
    process.stdout.write("[1,2]");
    break;
  case "silent.json":
    break;
  case "killed.json":
    process.kill(process.pid, "SIGKILL");
    break;
  default:
    process.stdout.write(JSON.stringify([{ file: name }]));
}
`;

/** Writes a lot to stderr (more than a pipe buffer holds), then succeeds. */
const NOISY_HOOK = `process.stderr.write("warning: ".repeat(200000) + "\\n");
process.stdout.write(JSON.stringify([{ ok: true }]));
`;

const HUGE_ROWS = 200_000;
const HUGE_STRING = 500;
/** About 100 MB of JSON for one file, written with backpressure. */
const HUGE_HOOK = `const pad = "x".repeat(${HUGE_STRING});
const total = ${HUGE_ROWS};
let i = 0;
const out = process.stdout;
out.write("[");
function more() {
  let ok = true;
  while (i < total && ok) {
    ok = out.write((i === 0 ? "" : ",") + JSON.stringify({ i, s: pad }));
    i++;
  }
  if (i < total) out.once("drain", more);
  else out.end("]\\n");
}
more();
`;

/**
 * Concurrency probe: each hook keeps a marker file (in a folder outside the root) while it
 * runs and reports the most markers it saw at once. It waits for a peer (bounded) and then
 * lingers briefly so that hooks overlap whenever dirq lets them.
 */
const CONCURRENCY_HOOK = `import { readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
const dir = process.argv[3];
const me = join(dir, String(process.pid));
writeFileSync(me, "");
const alive = () => readdirSync(dir).length;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let peak = alive();
const giveUp = Date.now() + 10000;
while (peak < 2 && Date.now() < giveUp) {
  await sleep(20);
  peak = Math.max(peak, alive());
}
const lingerUntil = Date.now() + 300;
while (Date.now() < lingerUntil) {
  await sleep(20);
  peak = Math.max(peak, alive());
}
rmSync(me);
process.stdout.write(JSON.stringify([{ peak }]));
`;

const CONCURRENCY_FILES = Math.min(16, Math.max(4, 2 * availableParallelism()));

/**
 * A text value past the size the output thread hands over as UTF-8 bytes (its file past the size
 * it reads), with characters JSON escapes and UTF-8 spells in several bytes.
 */
const LARGE_TEXT = 'aé✓😀"\\\n\t\u0000\u2028/'.repeat(40_000);

const tree: Record<string, string> = {
  "parse.sh": shellHook("json-rows.sh"),
  "args.mjs": ARGS_HOOK,
  "cat.mjs": CAT_HOOK,
  "bad.mjs": BAD_HOOK,
  "noisy.mjs": NOISY_HOOK,
  "huge.mjs": HUGE_HOOK,
  "conc.mjs": CONCURRENCY_HOOK,
  "hook.sh": '#!/bin/sh\necho "[]"\n',
  "data/one.json": '{"z":1,"b":"x"}',
  "data/three.json": '{"z":3}',
  "data/two.json": '[{"b":"y","c":1.5},{"z":2,"a":true}]',
  "types/a.json":
    '[{"i":1,"r":1.5,"neg":-7,"s":"str","t":true,"f":false,"n":null,"arr":[1,"x"],"obj":{"k":[1]}}]',
  "types/b.json": '[{"extra":"only here","i":2}]',
  "types/c.json": "[]",
  "big/big.json": '[{"big":9007199254740993,"small":9007199254740991}]',
  "large/text.json": JSON.stringify([
    { text: LARGE_TEXT, n: 1 },
    { text: "short", n: 2 },
  ]),
  "spaced root/with space.json": "{}",
  "spaced root/args.mjs": ARGS_HOOK,
  "bad/exit.json": "",
  "bad/good.json": "",
  "bad/good2.json": "",
  "bad/invalid.json": "",
  "bad/killed.json": "",
  "bad/nums.json": "",
  "bad/object.json": "",
  "bad/silent.json": "",
  "huge/one.json": "",
  "noise/one.json": "",
  "empty/e.json": "[]",
  "empty/f.json": "[]",
  "conf/t.toml": `[[table]]
name = "cfg"
glob = "data/*.json"
on-file = "sh parse.sh {path}"
`,
};
for (let i = 0; i < CONCURRENCY_FILES; i++) tree[`conc/f${i}.json`] = "";

const root = makeTree(tree);
// A program given by path that lacks the execute bit (makeTree writes 0644 files).
chmodSync(join(root, "hook.sh"), 0o644);
const realRoot = realpathSync(root);
after(() => removeTree(root));

/* ------------------------------------------------------------------------------------------ */
/* Local helpers                                                                               */
/* ------------------------------------------------------------------------------------------ */

type Row = Record<string, unknown>;

function run(args: readonly string[], env?: Record<string, string>, cwd = root) {
  return runDirq(args, { cwd, env });
}

/** Exit 0 and a JSON array on stdout. */
function rowsOf(result: RunResult): Row[] {
  assert.equal(result.code, 0, `expected exit 0, got ${result.code}; stderr: ${result.stderr}`);
  const rows = JSON.parse(result.stdout) as unknown;
  assert.ok(Array.isArray(rows), `expected a JSON array: ${result.stdout}`);
  return rows as Row[];
}

/** Runs `sql` with `--on-file <hook>` and returns the rows (exit 0). */
async function hookRows(sql: string, hook: string, extra: readonly string[] = []): Promise<Row[]> {
  return rowsOf(await run([sql, "--on-file", hook, ...extra]));
}

/** Exit 1, empty stdout, a `dirq: ` diagnostic that contains every needle. */
function assertFailure(result: RunResult, ...needles: (string | RegExp)[]): void {
  assert.equal(result.code, 1, `expected exit 1, got ${result.code}; stderr: ${result.stderr}`);
  assert.equal(result.stdout, "", "nothing on stdout");
  assert.match(result.stderr, /^dirq: \S/);
  assert.doesNotMatch(result.stderr, /internal error|^\s+at /m);
  for (const needle of needles) {
    if (typeof needle === "string") {
      assert.ok(result.stderr.includes(needle), `stderr lacks ${needle}: ${result.stderr}`);
    } else {
      assert.match(result.stderr, needle);
    }
  }
}

/** Stderr split into its `dirq: ` messages (a message may span lines). */
function messages(stderr: string): string[] {
  return stderr
    .split(/^(?=dirq: )/m)
    .map((message) => message.trimEnd())
    .filter((message) => message !== "");
}

const PARSE = "sh parse.sh {path}";

/* ------------------------------------------------------------------------------------------ */
/* Tests                                                                                       */
/* ------------------------------------------------------------------------------------------ */

describe("--on-file: rows are what the hook prints", { concurrency: true }, () => {
  const ALL = "SELECT * FROM './data/' ORDER BY _dirq_file_path, _dirq_row_index";
  const EXPECTED = [
    { z: 1, b: "x", c: null, a: null },
    { z: 3, b: null, c: null, a: null },
    { z: null, b: "y", c: 1.5, a: null },
    { z: 2, b: null, c: null, a: 1 },
  ];

  it("dirq '<sql>' --on-file: one row per printed object, columns in first-seen order", async () => {
    const before = snapshotTree(root);
    const rows = await hookRows(ALL, PARSE);
    assert.deepEqual(rows, EXPECTED);
    for (const row of rows) assert.deepEqual(Object.keys(row), ["z", "b", "c", "a"]);
    assert.equal(snapshotTree(root), before, "no file in the tree was modified");
  });

  it("dirq query '<sql>' --on-file prints the same bytes as the default mode", async () => {
    const [plain, explicit] = await Promise.all([
      run([ALL, "--on-file", PARSE]),
      run(["query", ALL, "--on-file", PARSE]),
    ]);
    assert.equal(explicit.code, 0, explicit.stderr);
    assert.equal(explicit.stdout, plain.stdout);
    assert.deepEqual(rowsOf(explicit), EXPECTED);
  });

  it("--on-file=<command> (the = form) works too", async () => {
    const rows = rowsOf(await run(["query", ALL, `--on-file=${PARSE}`]));
    assert.deepEqual(rows, EXPECTED);
  });

  it("the stat columns are gone from SELECT *", async () => {
    const rows = await hookRows("SELECT * FROM './data/one.json'", PARSE);
    assert.deepEqual(rows, [{ z: 1, b: "x" }]);
  });

  for (const column of ["path", "basename", "dir", "ext", "size", "mtime", "ctime"]) {
    it(`stat column ${column} is not reachable: an error naming it`, async () => {
      const result = await run([`SELECT ${column} FROM './data/one.json'`, "--on-file", PARSE]);
      assertFailure(result, column, /no such column/);
    });
  }

  it("--on-file given twice is an error (default mode and query)", async () => {
    const results = await Promise.all([
      run([ALL, "--on-file", PARSE, "--on-file", PARSE]),
      run(["query", ALL, "--on-file", PARSE, "--on-file", "node args.mjs"]),
      run(["query", ALL, `--on-file=${PARSE}`, "--on-file", PARSE]),
    ]);
    for (const result of results) assertFailure(result, "--on-file");
  });

  it("--on-file never applies to a config table in the same query", async () => {
    const rows = rowsOf(
      await run([
        "SELECT (SELECT group_concat(b) FROM cfg) AS from_config, (SELECT cwd FROM './data/one.json') AS from_path_table",
        "-c",
        "conf/t.toml",
        "--on-file",
        "node args.mjs {path}",
      ]),
    );
    // cfg keeps its own parse.sh hook; the path-table gets args.mjs.
    assert.equal(rows.length, 1);
    const sorted = String(rows[0]?.from_config).split(",").sort();
    assert.deepEqual(sorted, ["x", "y"]);
    assert.equal(rows[0]?.from_path_table, realRoot);
  });

  it("--on-file never applies to a config table queried alone either", async () => {
    const rows = rowsOf(
      await run(["SELECT * FROM cfg", "-c", "conf/t.toml", "--on-file", "node args.mjs {path}"]),
    );
    assert.equal(rows.length, 4);
    for (const row of rows) assert.deepEqual(Object.keys(row), ["z", "b", "c", "a"]);
  });
});

describe("--on-file: the command line of the hook", { concurrency: true }, () => {
  const spaced = join(root, "spaced root");
  const realSpaced = realpathSync(spaced);

  it("{path} and {root} are absolute and each exactly one argument, spaces and all", async () => {
    const rows = rowsOf(
      await run(
        ["SELECT argv, cwd FROM './with space.json'", "--on-file", "node args.mjs {path} {root}"],
        undefined,
        spaced,
      ),
    );
    assert.equal(rows.length, 1);
    assert.deepEqual(JSON.parse(String(rows[0]?.argv)), [
      join(realSpaced, "with space.json"),
      realSpaced,
    ]);
  });

  it("the hook's working directory is the root", async () => {
    const rows = await hookRows("SELECT cwd FROM './data/one.json'", "node args.mjs");
    assert.deepEqual(rows, [{ cwd: realRoot }]);
    const nested = rowsOf(
      await run(
        ["SELECT cwd FROM './with space.json'", "--on-file", "node args.mjs"],
        undefined,
        spaced,
      ),
    );
    assert.deepEqual(nested, [{ cwd: realSpaced }]);
  });

  it("quotes and backslashes are honoured, with no shell: no expansion, no globbing", async () => {
    const command = String.raw`node args.mjs 'a b' "c d" e\ f $HOME '$HOME' "$HOME/x" "x\"y" back\\slash *.json x{path}y '{root}'`;
    const rows = await hookRows("SELECT argv FROM './data/one.json'", command);
    assert.deepEqual(JSON.parse(String(rows[0]?.argv)), [
      "a b",
      "c d",
      "e f",
      "$HOME",
      "$HOME",
      "$HOME/x",
      'x"y',
      String.raw`back\slash`,
      "*.json",
      `x${join(realRoot, "data/one.json")}y`,
      realRoot,
    ]);
  });

  it("${HOME} arrives as written", async () => {
    const rows = await hookRows("SELECT argv FROM './data/one.json'", "node args.mjs ${HOME}");
    assert.deepEqual(JSON.parse(String(rows[0]?.argv)), ["${HOME}"]);
  });

  it("a # inside a word is text, as in sh: --sep=a#b and {path} both arrive", async () => {
    const rows = await hookRows(
      "SELECT argv FROM './data/one.json'",
      "node args.mjs --sep=a#b {path}",
    );
    assert.deepEqual(JSON.parse(String(rows[0]?.argv)), [
      "--sep=a#b",
      join(realRoot, "data/one.json"),
    ]);
  });

  it("a # that starts a word starts a comment, as in sh", async () => {
    const rows = await hookRows(
      "SELECT argv FROM './data/one.json'",
      "node args.mjs {path} #x {root}",
    );
    assert.deepEqual(JSON.parse(String(rows[0]?.argv)), [join(realRoot, "data/one.json")]);
  });

  it("an unterminated quote is an error, not silently closed", async () => {
    const result = await run([
      "SELECT * FROM './data/one.json'",
      "--on-file",
      "node args.mjs 'oops",
    ]);
    assertFailure(result, /quote/i);
  });

  for (const operator of ["|", ">", "&&", ";", "<"]) {
    it(`a shell operator '${operator}' is an error naming it`, async () => {
      const result = await run([
        "SELECT * FROM './data/one.json'",
        "--on-file",
        `node args.mjs {path} ${operator} out.txt`,
      ]);
      assertFailure(result, `'${operator}'`, "node args.mjs");
      assert.equal(existsSync(join(root, "out.txt")), false, "no shell ran");
    });
  }

  it("an empty command is an error", async () => {
    assertFailure(await run(["SELECT * FROM './data/one.json'", "--on-file", ""]), "on-file");
  });
});

describe("--on-file: column inference and value types", { concurrency: true }, () => {
  it("union of keys, missing keys NULL, integer/real/text kept, booleans 0/1, nesting as JSON text", async () => {
    const rows = await hookRows(
      `SELECT *, typeof(i) AS ti, typeof(r) AS tr, typeof(neg) AS tneg, typeof(s) AS ts,
              typeof(t) AS tt, typeof(n) AS tn, typeof(arr) AS tarr, typeof(obj) AS tobj
       FROM './types/' ORDER BY _dirq_file_path`,
      PARSE,
    );
    assert.deepEqual(rows, [
      {
        i: 1,
        r: 1.5,
        neg: -7,
        s: "str",
        t: 1,
        f: 0,
        n: null,
        arr: '[1,"x"]',
        obj: '{"k":[1]}',
        extra: null,
        ti: "integer",
        tr: "real",
        tneg: "integer",
        ts: "text",
        tt: "integer",
        tn: "null",
        tarr: "text",
        tobj: "text",
      },
      {
        i: 2,
        r: null,
        neg: null,
        s: null,
        t: null,
        f: null,
        n: null,
        arr: null,
        obj: null,
        extra: "only here",
        ti: "integer",
        tr: "null",
        tneg: "null",
        ts: "null",
        tt: "null",
        tn: "null",
        tarr: "null",
        tobj: "null",
      },
    ]);
    assert.deepEqual(Object.keys(rows[0] ?? {}).slice(0, 10), [
      "i",
      "r",
      "neg",
      "s",
      "t",
      "f",
      "n",
      "arr",
      "obj",
      "extra",
    ]);
  });

  it("nested JSON text can be taken apart with json_extract", async () => {
    const rows = await hookRows(
      "SELECT json_extract(obj, '$.k[0]') AS k, json_array_length(arr) AS n FROM './types/a.json'",
      PARSE,
    );
    assert.deepEqual(rows, [{ k: 1, n: 2 }]);
  });

  it("[] gives zero rows", async () => {
    const [one, all, star] = await Promise.all([
      hookRows("SELECT count(*) AS n FROM './types/c.json'", PARSE),
      hookRows("SELECT count(*) AS n FROM './empty/'", PARSE),
      run(["SELECT * FROM './empty/'", "--on-file", PARSE]),
    ]);
    assert.deepEqual(one, [{ n: 0 }]);
    assert.deepEqual(all, [{ n: 0 }]);
    assert.equal(star.code, 0, star.stderr);
    assert.equal(star.stdout, "[]\n");
  });

  it("a text of hundreds of thousands of characters is stored as it is, with --persist too", async () => {
    const sql =
      "SELECT text, typeof(text) AS t, length(CAST(text AS BLOB)) AS bytes, n FROM './large/text.json' ORDER BY n";
    const expected = [
      { text: LARGE_TEXT, t: "text", bytes: Buffer.byteLength(LARGE_TEXT), n: 1 },
      { text: "short", t: "text", bytes: 5, n: 2 },
    ];
    assert.deepEqual(await hookRows(sql, "node cat.mjs {path}"), expected);
    const cache = mkdtempSync(join(tmpdir(), "dirq-large-text-"));
    try {
      const persisted = ["--persist", join(cache, "cache.db")];
      // The first run builds and stores the rows, the second answers from the stored index.
      for (const run of ["cold", "warm"]) {
        assert.deepEqual(await hookRows(sql, "node cat.mjs {path}", persisted), expected, run);
      }
    } finally {
      removeTree(cache);
    }
  });

  it("an integer beyond 2^53 stays an exact INTEGER", async () => {
    const result = await run([
      "SELECT big, typeof(big) AS t, small FROM './big/big.json'",
      "--on-file",
      "node cat.mjs {path}",
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stdout,
      '[{"big":9007199254740993,"t":"integer","small":9007199254740991}]\n',
    );
  });
});

describe(
  "--on-file: hidden columns _dirq_file_path and _dirq_row_index",
  { concurrency: true },
  () => {
    it("left out of SELECT *", async () => {
      const rows = await hookRows("SELECT * FROM './data/'", PARSE);
      assert.equal(rows.length, 4);
      for (const row of rows) {
        assert.ok(!("_dirq_file_path" in row));
        assert.ok(!("_dirq_row_index" in row));
      }
    });

    it("returned when named: relative path and 0-based position in the file's array", async () => {
      const rows = await hookRows(
        "SELECT _dirq_file_path, _dirq_row_index, b FROM './data/' ORDER BY 1, 2",
        PARSE,
      );
      assert.deepEqual(rows, [
        { _dirq_file_path: "data/one.json", _dirq_row_index: 0, b: "x" },
        { _dirq_file_path: "data/three.json", _dirq_row_index: 0, b: null },
        { _dirq_file_path: "data/two.json", _dirq_row_index: 0, b: "y" },
        { _dirq_file_path: "data/two.json", _dirq_row_index: 1, b: null },
      ]);
    });

    it("usable in WHERE while SELECT * still leaves them out", async () => {
      const rows = await hookRows(
        "SELECT * FROM './data/' WHERE _dirq_file_path = 'data/two.json' AND _dirq_row_index = 1",
        PARSE,
      );
      assert.deepEqual(rows, [{ z: 2, b: null, c: null, a: 1 }]);
    });

    it("SELECT *, _dirq_row_index returns the named one once", async () => {
      const rows = await hookRows(
        "SELECT *, _dirq_row_index FROM './data/two.json' ORDER BY _dirq_row_index",
        PARSE,
      );
      assert.deepEqual(rows, [
        { b: "y", c: 1.5, z: null, a: null, _dirq_row_index: 0 },
        { b: null, c: null, z: 2, a: 1, _dirq_row_index: 1 },
      ]);
    });
  },
);

describe("--on-file: a failing file is isolated", { concurrency: true }, () => {
  it("non-zero exit, invalid JSON, a non-array, non-objects, no output, a signal: skipped, exit 23", async () => {
    const before = snapshotTree(root);
    const result = await run([
      "SELECT file FROM './bad/' ORDER BY file",
      "--on-file",
      "node bad.mjs {path}",
    ]);
    assert.equal(result.code, 23, result.stderr);
    // The other rows stand, as valid JSON on stdout.
    assert.deepEqual(JSON.parse(result.stdout), [{ file: "good.json" }, { file: "good2.json" }]);
    const skipped = messages(result.stderr);
    const find = (name: string): string => {
      const message = skipped.find((line) => line.startsWith(`dirq: skipped bad/${name}:`));
      assert.ok(message, `bad/${name} is named on stderr: ${result.stderr}`);
      return message;
    };
    // Exit status and the tail of the hook's stderr.
    const exit = find("exit.json");
    assert.match(exit, /code 3/);
    assert.ok(exit.includes("boom: it broke"), exit);
    assert.match(find("invalid.json"), /invalid JSON/);
    assert.match(find("object.json"), /expected a JSON array/);
    assert.match(find("nums.json"), /expected an object/);
    assert.match(find("silent.json"), /invalid JSON|no output|empty/i);
    assert.match(find("killed.json"), /SIGKILL/);
    // Stderr noise from the hooks that succeeded does not make them fail.
    assert.ok(!skipped.some((line) => /bad\/good2?\.json/.test(line)), result.stderr);
    assert.equal(skipped.length, 6, result.stderr);
    assert.equal(snapshotTree(root), before, "no file in the tree was modified");
  });

  it("a succeeding hook's stderr noise (more than a pipe buffer) does not fail it", async () => {
    const result = await run(["SELECT ok FROM './noise/'", "--on-file", "node noisy.mjs {path}"]);
    assert.deepEqual(rowsOf(result), [{ ok: 1 }]);
  });

  it("a program that is not found fails the whole query: exit 1, nothing on stdout", async () => {
    const result = await run([
      "SELECT * FROM './data/'",
      "--on-file",
      "no-such-program-xyz {path}",
    ]);
    assertFailure(result, "no-such-program-xyz", /not found/);
  });

  it("a program given by path without the execute bit fails the query: exit 1", async () => {
    const result = await run(["SELECT * FROM './data/'", "--on-file", "./hook.sh {path}"]);
    assertFailure(result, "hook.sh", /not executable/);
  });
});

describe("--on-file: scale, parallelism and progress", () => {
  it("about 100 MB of output for one file is read whole", { timeout: 120_000 }, async () => {
    const rows = await hookRows(
      "SELECT count(*) AS n, sum(i) AS total, min(length(s)) AS shortest, max(length(s)) AS longest FROM './huge/one.json'",
      "node huge.mjs {path}",
    );
    assert.deepEqual(rows, [
      {
        n: HUGE_ROWS,
        total: (HUGE_ROWS * (HUGE_ROWS - 1)) / 2,
        shortest: HUGE_STRING,
        longest: HUGE_STRING,
      },
    ]);
  });

  it(
    "hooks run in parallel, a slow one past the cores, never more at once than the bound",
    { skip: availableParallelism() < 2 ? "needs at least 2 CPU cores" : false, timeout: 120_000 },
    async () => {
      const markers = mkdtempSync(join(tmpdir(), "dirq-markers-"));
      try {
        const rows = await hookRows(
          "SELECT max(peak) AS peak, count(*) AS n FROM './conc/'",
          `node conc.mjs {path} '${markers}'`,
        );
        const peak = Number(rows[0]?.peak);
        assert.equal(rows[0]?.n, CONCURRENCY_FILES);
        assert.ok(peak >= 2, `hooks overlapped (peak ${peak})`);
        // A hook that has run for 50 ms stops counting against the cores (these linger 300 ms),
        // up to max(4 x cores, 16) hook processes in all (hooks.md).
        const bound = Math.max(4 * availableParallelism(), 16);
        assert.ok(peak <= bound, `at most ${bound} hooks at once (peak ${peak})`);
        assert.deepEqual(readdirSync(markers), [], "every hook finished");
      } finally {
        removeTree(markers);
      }
    },
  );

  it("DIRQ_PROGRESS=always reports indexing lines and the indexed summary", async () => {
    const result = await run(["SELECT count(*) AS n FROM './data/'", "--on-file", PARSE], {
      DIRQ_PROGRESS: "always",
    });
    assert.deepEqual(rowsOf(result), [{ n: 4 }]);
    assert.match(result.stderr, /^dirq: indexing \d+\/3 files \(\d+%\)$/m);
    assert.match(result.stderr, /^dirq: indexed 3 files in \S+$/m);
  });

  it("DIRQ_PROGRESS=never prints nothing on stderr for a clean parse", async () => {
    const result = await run(["SELECT count(*) AS n FROM './data/'", "--on-file", PARSE], {
      DIRQ_PROGRESS: "never",
    });
    assert.deepEqual(rowsOf(result), [{ n: 4 }]);
    assert.equal(result.stderr, "");
  });
});
