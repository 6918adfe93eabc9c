import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  assertUserError,
  makeTree,
  parseRows,
  removeTree,
  runDirq,
  runInTerminal,
  scriptAvailable,
} from "./helpers.js";

const root = makeTree({
  "a.md": "a",
  "b.md": "b",
  "docs/c.md": "c",
  "docs/d.txt": "d",
  "src/e.ts": "e",
});
const FILE_COUNT = 5;
after(() => removeTree(root));

const SQL = "SELECT path, size FROM './' ORDER BY path";
/** `850ms`, `1.42s`, `2m05s`, or any other plain duration with a unit. */
const DURATION = String.raw`\d+(?:\.\d+)?(?:ms|s)|\d+m\d{2}s`;
const SUMMARY = new RegExp(`^dirq: scanned ${FILE_COUNT} files in (?:${DURATION})$`);

let baseline = "";
before(async () => {
  const result = await runDirq([SQL], { cwd: root, env: { DIRQ_PROGRESS: "never" } });
  assert.equal(result.code, 0, result.stderr);
  baseline = result.stdout;
  assert.equal(parseRows(baseline).length, FILE_COUNT);
});

describe("DIRQ_PROGRESS forcing reports on", { concurrency: true }, () => {
  for (const value of ["always", " ALWAYS ", "1", "true", "\tTrue\n"]) {
    it(`DIRQ_PROGRESS=${JSON.stringify(value)}: a scan summary on stderr, stdout unchanged`, async () => {
      const result = await runDirq([SQL], { cwd: root, env: { DIRQ_PROGRESS: value } });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, baseline, "stdout is never touched");
      assert.equal(parseRows(result.stdout).length, FILE_COUNT);
      const lines = result.stderr.split("\n");
      assert.equal(lines.pop(), "", "stderr ends with a newline");
      assert.ok(lines.length >= 1, "at least the summary line");
      for (const line of lines) assert.match(line, /^dirq: /);
      assert.match(lines[lines.length - 1] ?? "", SUMMARY);
      for (const line of lines.slice(0, -1)) {
        assert.match(line, /^dirq: scanning \d+ files$|^dirq: scanned \d+ files in /);
      }
    });
  }

  it("table output is untouched by progress too", async () => {
    const [quiet, loud] = await Promise.all([
      runDirq([SQL, "--format", "table"], { cwd: root, env: { DIRQ_PROGRESS: "never" } }),
      runDirq([SQL, "--format", "table"], { cwd: root, env: { DIRQ_PROGRESS: "always" } }),
    ]);
    assert.equal(loud.code, 0);
    assert.equal(loud.stdout, quiet.stdout);
    assert.match(loud.stderr, /dirq: scanned 5 files in /);
  });

  it("a query that reads no path-table reports no scan", async () => {
    const result = await runDirq(["SELECT 1 AS n"], {
      cwd: root,
      env: { DIRQ_PROGRESS: "always" },
    });
    assert.equal(result.code, 0);
    assert.equal(result.stdout, '[{"n":1}]\n');
    assert.equal(result.stderr, "");
  });

  it("a failing query still prints its diagnostic as the last stderr line", async () => {
    const result = await runDirq(["SELECT nope FROM './'"], {
      cwd: root,
      env: { DIRQ_PROGRESS: "always" },
    });
    assert.equal(result.code, 1);
    assert.equal(result.stdout, "");
    const lines = result.stderr.trimEnd().split("\n");
    assert.equal(lines[lines.length - 1], "dirq: no such column: nope");
  });
});

describe("DIRQ_PROGRESS off, or auto with stderr not a terminal", { concurrency: true }, () => {
  const values: (string | undefined)[] = [
    "never",
    " NEVER ",
    "0",
    "false",
    undefined,
    " Auto ",
    "bogus",
  ];
  for (const value of values) {
    const label = value === undefined ? "unset" : JSON.stringify(value);
    it(`DIRQ_PROGRESS ${label}: stderr is empty`, async () => {
      const result = await runDirq([SQL], { cwd: root, env: { DIRQ_PROGRESS: value } });
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stderr, "");
      assert.equal(result.stdout, baseline);
    });
  }

  it("errors are still reported with progress off", async () => {
    const result = await runDirq(["SELECT nope FROM './'"], {
      cwd: root,
      env: { DIRQ_PROGRESS: "never" },
    });
    assertUserError(result, "no such column: nope");
  });
});

describe("progress on a terminal", { concurrency: true }, () => {
  const noScript = scriptAvailable()
    ? false
    : "util-linux `script` cannot allocate a terminal here";

  it("always: the line is rewritten in place and ends with the summary", { skip: noScript }, () => {
    const run = runInTerminal(root, [SQL], {
      env: { DIRQ_PROGRESS: "always" },
      redirect: "stdout",
    });
    assert.equal(run.status, 0);
    assert.equal(run.redirected, baseline, "stdout (redirected to a file) is unchanged");
    assert.ok(run.terminal.includes("\r"), "rewritten in place with a carriage return");
    const visible = run.terminal
      .split(/\r\n|\n/)
      .map((line) => line.split("\r").pop() ?? "")
      .map((line) => line.replace(/\x1b\[[0-9;]*[A-Za-z]/g, ""))
      .filter((line) => line !== "");
    assert.equal(visible.length, 1, `one visible line left: ${JSON.stringify(run.terminal)}`);
    assert.match(visible[0] ?? "", SUMMARY);
  });

  it("unset (auto): a phase shorter than half a second shows nothing", { skip: noScript }, () => {
    const run = runInTerminal(root, [SQL], {
      env: { DIRQ_PROGRESS: undefined },
      redirect: "stdout",
    });
    assert.equal(run.status, 0);
    assert.equal(run.redirected, baseline);
    assert.equal(run.terminal, "");
  });

  it("never: nothing on the terminal", { skip: noScript }, () => {
    const run = runInTerminal(root, [SQL], {
      env: { DIRQ_PROGRESS: "never" },
      redirect: "stdout",
    });
    assert.equal(run.status, 0);
    assert.equal(run.redirected, baseline);
    assert.equal(run.terminal, "");
  });

  it(
    "progress goes to stderr only: stdout on a terminal shows just the table",
    { skip: noScript },
    () => {
      const run = runInTerminal(root, ["SELECT count(*) AS n FROM './'"], {
        env: { DIRQ_PROGRESS: "always" },
        redirect: "stderr",
      });
      assert.equal(run.status, 0);
      assert.deepEqual(
        run.terminal.split("\r\n").map((line) => line.trimEnd()),
        ["n", "-", "5", "(1 row)", ""],
      );
      assert.match(run.redirected, /dirq: scanned 5 files in /);
    },
  );
});
