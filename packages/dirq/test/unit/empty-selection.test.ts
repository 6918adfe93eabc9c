/**
 * Why a selection lists no file (`whyEmpty`): the rule it names for an ignored file is the one
 * `git check-ignore -v` names (file, line, pattern), negations and folders included; the search
 * for a file that would match stops at its limit and says so.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { whyEmpty } from "../../src/scan/empty-selection.js";
import { parsePathTableName } from "../../src/scan/path-selection.js";
import { reference } from "../differential.js";

const home = mkdtempSync(join(tmpdir(), "dirq-why-home-"));
const GIT_ENV = {
  HOME: home,
  XDG_CONFIG_HOME: join(home, ".config"),
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
};
const root = mkdtempSync(join(tmpdir(), "dirq-why-"));
after(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(home, { recursive: true, force: true });
});

function write(path: string, content = "x"): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  writeFileSync(join(root, path), content);
}

const FILES = [
  "a.log",
  "keep.log",
  "build/out.js",
  "src/build/x.js",
  "src/main.ts",
  "src/gen/a.ts",
  "src/gen/keep.ts",
  "docs/a.md",
  "docs/deep/b.md",
  "logs/2024/x.txt",
  "top.tmp",
  "sub/top.tmp",
  "secret.key",
  "Notes.TXT",
];

reference("git", ["init", "-q"], { cwd: root, env: GIT_ENV });
write(".gitignore", "*.log\n!keep.log\n/build/\n**/deep/\nlogs/**\n/top.tmp\n# comment\n*.TXT\n");
write("src/.gitignore", "gen/*\n!gen/keep.ts\nbuild\n");
write(".git/info/exclude", "*.key\n");
for (const path of FILES) write(path);

/** `<file>:<line>:<pattern>` when git ignores `path`, `null` when it does not. */
function gitIgnoredBy(path: string): string | null {
  const out = (() => {
    try {
      return reference("git", ["check-ignore", "-v", path], { cwd: root, env: GIT_ENV });
    } catch {
      return ""; // exit 1: no pattern matches
    }
  })();
  const rule = out.split("\t")[0] ?? "";
  const pattern = rule.split(":").slice(2).join(":");
  return rule === "" || pattern.startsWith("!") ? null : rule;
}

function why(table: string, limit?: number): string {
  const selection = parsePathTableName(table, root);
  assert.ok(selection !== null);
  return whyEmpty({ root, selection, useGitignore: true }, limit);
}

describe("whyEmpty names the rule git check-ignore -v names", () => {
  for (const path of FILES) {
    it(path, () => {
      const rule = gitIgnoredBy(path);
      const reason = why(`./${path}`);
      if (rule === null) {
        assert.doesNotMatch(reason, /ignored/, `git lists ${path}`);
      } else {
        assert.match(reason, new RegExp(`^${path.replaceAll(".", "\\.")} matches it but is`));
        assert.ok(reason.includes(` ${rule}. Use --no-ignore`), `${rule} in: ${reason}`);
      }
    });
  }

  it("git ignores some of them, and re-includes others", () => {
    const ignored = FILES.filter((path) => gitIgnoredBy(path) !== null);
    assert.ok(ignored.length >= 8, ignored.join(" "));
    assert.ok(!ignored.includes("keep.log") && !ignored.includes("src/gen/keep.ts"));
  });
});

describe("whyEmpty's search for a file that would match", () => {
  it("stops past its limit, and says it searched only in part", () => {
    for (let i = 0; i < 30; i++) write(`node_modules/p${i}/index.js`);
    assert.equal(
      why("./**/*.nothing", 20),
      "no file dirq lists matches it (of the folders it skips, such as node_modules, it searched only the first 20 entries for one)",
    );
    assert.equal(why("./**/*.nothing"), "no file matches it");
  });

  it("finds a match in a skipped folder before its limit", () => {
    assert.match(why("./node_modules/p7/*.js"), /^node_modules\/p7\/index\.js matches it but/);
  });
});
