import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { makeTree, removeTree, runDirq } from "./helpers.js";

const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));
const home = makeTree({});
after(() => removeTree(home));

/**
 * `DIRQ_` names the docs use that are not variables a user sets, with the reason. Every other
 * one is listed by `dirq --help` and the man page.
 */
const NOT_USER_VARIABLES: Record<string, string> = {
  DIRQ_LAYERS: "a list in eslint.config.js (docs/internals.md), not an environment variable",
  DIRQ_TEST_CHROMIUM: "the test suite's browser (docs/console.md), not dirq's",
};

/** Variables the code reads that only the tests set: not documented, on purpose. */
const TEST_KNOBS: Record<string, string> = {
  DIRQ_FIRST_ANSWER_JS_ROWS: "which writer answers small results (output tests)",
  DIRQ_SPILL_BYTES: "the spill threshold of held output (output tests)",
  DIRQ_JSON_ARRAY_PIECE_BYTES: "a large JSON array's piece size (format-json-array-native)",
  DIRQ_JSONL_PIECE_BYTES:
    "the piece size of JSON Lines the native reader takes (format-jsonl-native)",
  DIRQ_DIRECT_HELD_BYTES:
    "the answer a direct JSON Lines read holds before it gives up (format-jsonl-direct)",
};

/** Names the launchers' sources use that are not read at run time. */
const LAUNCHER_BUILD_NAMES: Record<string, string> = {
  DIRQ_PINNED_NPM_INTEGRITY: "set by rust/build.rs at compile time (the pinned release)",
};

const VARIABLE = /\bDIRQ_[A-Z][A-Z_]*[A-Z]\b/g;

function variablesIn(text: string): Set<string> {
  return new Set(text.match(VARIABLE) ?? []);
}

function filesUnder(folder: string, extension: RegExp): string[] {
  return readdirSync(folder, { recursive: true, encoding: "utf8" })
    .filter((name) => extension.test(name))
    .map((name) => join(folder, name));
}

function documentedVariables(): Set<string> {
  const files = [...filesUnder(join(PACKAGE_DIR, "docs"), /\.md$/), join(PACKAGE_DIR, "README.md")];
  const found = variablesIn(files.map((file) => readFileSync(file, "utf8")).join("\n"));
  for (const name of Object.keys(NOT_USER_VARIABLES)) found.delete(name);
  return found;
}

/** One `.SH` section of the man page, as its roff source. */
function manSection(name: string): string {
  const page = readFileSync(join(PACKAGE_DIR, "man", "dirq.1"), "utf8");
  const start = page.indexOf(`\n.SH ${name}\n`);
  assert.ok(start >= 0, `man/dirq.1 has a ${name} section`);
  const end = page.indexOf("\n.SH ", start + 1);
  return page.slice(start, end < 0 ? undefined : end);
}

const sorted = (names: Iterable<string>) => [...names].sort();

describe("dirq repl in the help", () => {
  it("dirq --help lists dirq repl", async () => {
    const help = await runDirq(["--help"], { cwd: home });
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^ {2}dirq repl \[options\]/m);
  });

  for (const flag of ["--help", "-h"]) {
    it(`dirq repl ${flag} prints the REPL's own usage and options`, async () => {
      const result = await runDirq(["repl", flag], { cwd: home });
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^Usage: dirq repl \[options\]/);
      for (const option of ["--config", "--parse", "--on-file", "--persist", "--format"]) {
        assert.ok(result.stdout.includes(option), `${option} in:\n${result.stdout}`);
      }
      assert.doesNotMatch(result.stdout, /--host|--port|"<sql>" \[options\]\n/);
    });
  }

  it("dirq repl with an argument is a usage error naming it", async () => {
    const result = await runDirq(["repl", "SELECT 1"], { cwd: home });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^dirq: unexpected argument 'SELECT 1' for dirq repl/);
  });

  it("the man page has a DIRQ REPL section", () => {
    assert.match(manSection('"DIRQ REPL"'), /Usage: dirq repl/);
  });
});

describe("environment variables: the docs, --help and the man page list the same", () => {
  it("every DIRQ_ variable of docs/ and README.md is in dirq --help, and no other", async () => {
    const help = await runDirq(["--help"], { cwd: home });
    const environment = help.stdout.slice(help.stdout.indexOf("\nEnvironment:\n"));
    assert.ok(environment.length > 1, "dirq --help has an Environment section");
    assert.deepEqual(sorted(variablesIn(environment)), sorted(documentedVariables()));
    assert.deepEqual(sorted(variablesIn(help.stdout)), sorted(documentedVariables()));
  });

  it("the man page's ENVIRONMENT section lists the same ones", () => {
    assert.deepEqual(sorted(variablesIn(manSection("ENVIRONMENT"))), sorted(documentedVariables()));
  });

  it("every DIRQ_ variable the code reads is documented (or is a test knob)", () => {
    const sources = [
      ...filesUnder(join(PACKAGE_DIR, "src"), /\.ts$/),
      ...filesUnder(join(PACKAGE_DIR, "bin"), /\.c?js$/),
    ];
    const read = new Set<string>();
    for (const file of sources) {
      const text = readFileSync(file, "utf8");
      // `env.DIRQ_X`, `env["DIRQ_X"]`, or a name handed to a helper (`fromEnv("DIRQ_X")`).
      for (const match of text.matchAll(/(?:env\.|["'`])(DIRQ_[A-Z_]+)\b/g)) {
        read.add(match[1] as string);
      }
    }
    const documented = documentedVariables();
    const undocumented = [...read].filter((name) => !documented.has(name) && !TEST_KNOBS[name]);
    assert.deepEqual(undocumented, [], "read by the code, in no doc nor TEST_KNOBS");
    for (const knob of Object.keys(TEST_KNOBS)) {
      assert.ok(read.has(knob), `${knob} is still read (else drop it from TEST_KNOBS)`);
    }
  });

  it("every DIRQ_ variable the Python and Rust launchers name is documented", () => {
    const repo = join(PACKAGE_DIR, "..", "..");
    const sources = [
      ...filesUnder(join(repo, "python", "src"), /\.py$/),
      ...filesUnder(join(repo, "rust", "src"), /\.rs$/),
    ];
    assert.ok(sources.length > 0, "the launchers' sources are there");
    const named = variablesIn(sources.map((file) => readFileSync(file, "utf8")).join("\n"));
    const documented = documentedVariables();
    const undocumented = [...named].filter(
      (name) => !documented.has(name) && !LAUNCHER_BUILD_NAMES[name],
    );
    assert.deepEqual(undocumented, [], "named by a launcher, in no doc");
  });
});

describe("man page sections", () => {
  it("has NAME, SYNOPSIS, DESCRIPTION, ENVIRONMENT, FILES and EXIT STATUS", () => {
    const page = readFileSync(join(PACKAGE_DIR, "man", "dirq.1"), "utf8");
    const sections = [...page.matchAll(/^\.SH (.+)$/gm)].map((match) => match[1]);
    for (const name of [
      "NAME",
      "SYNOPSIS",
      "DESCRIPTION",
      "ENVIRONMENT",
      "FILES",
      '"EXIT STATUS"',
    ]) {
      assert.ok(sections.includes(name), `${name} in ${sections.join(", ")}`);
    }
    assert.match(manSection("SYNOPSIS"), /^dirq repl \[options\]/m);
    assert.match(manSection("FILES"), /\\&\.dirq\.toml/);
  });
});
