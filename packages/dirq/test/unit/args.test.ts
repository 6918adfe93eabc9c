import assert from "node:assert/strict";
import { test } from "node:test";
import { parseArgs } from "node:util";
import { parseCommandLine, parseFlags, QUERY_FLAGS } from "../../src/cli/args.js";
import { harnessSeed, pick, seededRandom } from "../differential.js";

const PIECES = [
  "",
  " ",
  "SELECT 1",
  "query",
  "x-y",
  "a=b",
  "é",
  "--",
  "-",
  "-c",
  "--format",
  "=",
  "\n",
  "h",
];

function argument(next: () => number): string {
  const parts = 1 + Math.floor(next() * 3);
  let text = "";
  for (let i = 0; i < parts; i++) text += pick(next, PIECES);
  return text;
}

test("arguments without options are read as parseArgs reads them", () => {
  const next = seededRandom(harnessSeed(36));
  let shortcut = 0;
  for (let round = 0; round < 2000; round++) {
    const args = Array.from({ length: Math.floor(next() * 4) }, () => argument(next));
    const ours = (() => {
      try {
        return parseFlags(args, QUERY_FLAGS);
      } catch (error) {
        return (error as Error).message;
      }
    })();
    const reference = (() => {
      try {
        return parseArgs({ args, options: QUERY_FLAGS, allowPositionals: true, strict: true });
      } catch (error) {
        return (error as { code: string }).code;
      }
    })();
    if (args.every((arg) => !arg.startsWith("-"))) {
      shortcut++;
      assert.deepEqual(ours, reference, JSON.stringify(args));
    } else if (typeof reference !== "string") {
      assert.deepEqual(ours, reference, JSON.stringify(args));
    }
  }
  assert.ok(shortcut > 200, `only ${shortcut} of 2000 cases took the shortcut`);
});

test("a lone statement is a query with every option at its default", () => {
  assert.deepEqual(parseCommandLine(["SELECT 1"]), {
    kind: "query",
    sql: "SELECT 1",
    noIgnore: false,
    format: "auto",
    configs: [],
    onFile: null,
    hookTimeout: null,
    parse: null,
    extensions: [],
    persist: null,
  });
  assert.throws(() => parseCommandLine(["SELECT 1", "x"]), /unexpected argument 'x'/);
});

test("options before the SQL are read as after it; alone, they open the REPL", () => {
  const same = (before: string[], sql: string) =>
    assert.deepEqual(parseCommandLine([...before, sql]), parseCommandLine([sql, ...before]));
  same(["-c", "a.toml", "--config=b.toml", "--format", "csv"], "SELECT 1");
  same(["--no-ignore", "--parse", "csv", "--extension", "x.so"], "SELECT 1");
  same(["--on-file", "cat {path}", "--hook-timeout", "5"], "SELECT 1");
  same(["--persist"], "SELECT 1");
  same(["--persist=x.db"], "SELECT 1");
  same(["--persist", "x.db"], "SELECT 1");
  same(["--format", "json"], "-- a comment\nSELECT 1");
  // A value that looks like SQL stays the option's value.
  assert.deepEqual(parseCommandLine(["--on-file", "SELECT 1"]), {
    ...parseCommandLine([]),
    onFile: "SELECT 1",
  });
  assert.deepEqual(parseCommandLine(["--persist", "x.db"]), {
    ...parseCommandLine([]),
    persist: "x.db",
  });
  // A subcommand after options is never taken for the SQL or a --persist path.
  for (const args of [
    ["-c", "a.toml", "query", "SELECT 1"],
    ["--persist", "query", "SELECT 1"],
    ["--persist", "x.db", "server"],
    ["--no-ignore", "repl"],
  ]) {
    assert.throws(() => parseCommandLine(args), /must come after the subcommand/, args.join(" "));
  }
});
