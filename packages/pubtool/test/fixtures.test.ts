import assert from "node:assert/strict";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, it } from "node:test";
import { removeTree, runPubtool } from "./helpers.js";

/**
 * The corpus: each folder under test/fixtures/ is a repository (`.github/workflows/`, maybe a
 * `pubtool.toml`) modelled on a public project's release setup, with `expected.json` giving the
 * verdict a release engineer would give, per check, for one or more doctor runs.
 */
const FIXTURES = fileURLToPath(new URL("../../test/fixtures/", import.meta.url));

interface ExpectedRun {
  name: string;
  /** Added to the environment; `null` removes a variable. */
  env?: Record<string, string | null>;
  /** Further doctor arguments (`["-c", "pubtool.testpypi.toml"]`). */
  args?: string[];
  /** `cd` into this subfolder before running doctor. */
  cwd?: string;
  ok: boolean;
  /** `<phase id>/<check id>` → "pass" | "fail" | "neutral". */
  checks: Record<string, string>;
  /** `<phase id>/<check id>` → regular expressions the joined messages must match. */
  messages?: Record<string, string[]>;
  /** `<phase id>/<check id>` → regular expressions the joined messages must NOT match. */
  absent?: Record<string, string[]>;
}

interface Expected {
  pattern: string;
  runs: ExpectedRun[];
}

interface JsonReport {
  ok: boolean;
  phases: { id: string; checks: { id: string; status: string; messages: string[] }[] }[];
}

const trees: string[] = [];
after(() => trees.forEach(removeTree));

const cases = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && existsSync(join(FIXTURES, entry.name, "expected.json")))
  .map((entry) => entry.name)
  .sort();

describe("doctor on the fixtures corpus", { concurrency: 4 }, () => {
  it("has a corpus", () => assert.ok(cases.length >= 10, `only ${cases.length} fixtures`));
  for (const name of cases) {
    const expected = JSON.parse(
      readFileSync(join(FIXTURES, name, "expected.json"), "utf8"),
    ) as Expected;
    for (const run of expected.runs) {
      it(`${name}: ${run.name}`, async () => {
        const root = mkdtempSync(join(tmpdir(), `pubtool-fixture-${name}-`));
        trees.push(root);
        cpSync(join(FIXTURES, name), root, { recursive: true });
        const env: Record<string, string | undefined> = { GITHUB_REPOSITORY: "acme/widget" };
        for (const [key, value] of Object.entries(run.env ?? {})) env[key] = value ?? undefined;
        const result = await runPubtool(["doctor", "--json", ...(run.args ?? [])], {
          cwd: join(root, run.cwd ?? "."),
          env,
        });
        assert.equal(result.stderr, "");
        const report = JSON.parse(result.stdout) as JsonReport;
        const got: Record<string, string> = {};
        for (const phase of report.phases) {
          for (const check of phase.checks) got[`${phase.id}/${check.id}`] = check.status;
        }
        const shown = JSON.stringify(report, null, 1);
        for (const [key, status] of Object.entries(run.checks)) {
          assert.equal(got[key], status, `${key} in\n${shown}`);
        }
        for (const [key, patterns] of Object.entries(run.messages ?? {})) {
          const [phaseId, checkId] = key.split("/");
          const check = report.phases
            .find((phase) => phase.id === phaseId)
            ?.checks.find((c) => c.id === checkId);
          for (const pattern of patterns) {
            assert.match(check?.messages.join("\n") ?? "", new RegExp(pattern), `${key}\n${shown}`);
          }
        }
        for (const [key, patterns] of Object.entries(run.absent ?? {})) {
          const [phaseId, checkId] = key.split("/");
          const check = report.phases
            .find((phase) => phase.id === phaseId)
            ?.checks.find((c) => c.id === checkId);
          for (const pattern of patterns) {
            assert.doesNotMatch(
              check?.messages.join("\n") ?? "",
              new RegExp(pattern),
              `${key}\n${shown}`,
            );
          }
        }
        assert.equal(report.ok, run.ok, shown);
        assert.equal(result.code, run.ok ? 0 : 1);
      });
    }
  }
});
