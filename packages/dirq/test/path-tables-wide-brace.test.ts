/**
 * A glob with a brace of thousands of names (what a tool writes to select a list of files)
 * selects exactly what bash globstar expands it to; a glob whose braces expand to more paths
 * than dirq takes is refused with a message that names the table and what to do, never
 * silently cut short.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { reference } from "./differential.js";
import { runDirq } from "./helpers.js";

const FOLDERS = 60;
const FILES_PER_FOLDER = 50;

const root = mkdtempSync(join(tmpdir(), "dirq-wide-brace-"));
after(() => rmSync(root, { recursive: true, force: true }));

const folderName = (i: number) => `d${String(i).padStart(3, "0")}`;
const fileName = (i: number) => `f${String(i).padStart(4, "0")}.txt`;

for (let d = 0; d < FOLDERS; d++) {
  mkdirSync(join(root, folderName(d)));
  for (let f = 0; f < FILES_PER_FOLDER; f++)
    writeFileSync(join(root, folderName(d), fileName(f)), "");
}

/** What bash (globstar, nullglob) selects: the files among the pattern's expansions. */
function bashFiles(pattern: string): string[] {
  const script = `shopt -s globstar nullglob; for f in ${pattern}; do if [ -f "$f" ]; then printf '%s\\n' "$f"; fi; done`;
  return reference("bash", ["-c", script], { cwd: root })
    .split("\n")
    .filter((line) => line !== "")
    .sort();
}

async function dirqFiles(pattern: string): Promise<string[]> {
  const result = await runDirq([`SELECT path FROM './${pattern}'`, "--format", "json"], {
    cwd: root,
  });
  assert.equal(result.code, 0, result.stderr);
  return (JSON.parse(result.stdout) as { path: string }[]).map((row) => row.path).sort();
}

describe("path-tables: a brace of thousands of names", () => {
  it("selects every listed file that exists, past a thousand alternatives", async () => {
    // 2,500 distinct paths, 1,500 of them files: more than the thousand-odd a glob once took.
    const names: string[] = [];
    for (let i = 0; i < 2500; i++) {
      names.push(`${folderName(i % (FOLDERS + 10))}/${fileName(2 * Math.floor(i / 70))}`);
    }
    const pattern = `{${names.join(",")}}`;
    const want = bashFiles(pattern);
    assert.equal(want.length, 1500);
    assert.deepEqual(await dirqFiles(pattern), want);
  });

  it("looks folder names up under a wildcard for the files", async () => {
    const folders = Array.from({ length: 200 }, (_, i) => folderName(i * 3));
    const pattern = `{${folders.join(",")}}/f00{1,2}*.txt`;
    const want = bashFiles(pattern);
    assert.equal(want.length, 20 * 20);
    assert.deepEqual(await dirqFiles(pattern), want);
  });

  it("takes a file's captures from the first alternative that matches it", async () => {
    // Each folder's file f0000.txt is matched by two alternatives, the first giving `a`.
    const alternatives = Array.from({ length: 40 }, (_, i) => [
      `${folderName(i)}/{a}0.txt`,
      `${folderName(i)}/f{b}.txt`,
    ]).flat();
    const result = await runDirq(
      [
        `SELECT path, a, b FROM './{${alternatives.join(",")}}' WHERE path GLOB '*/f0000.txt' OR path GLOB '*/f0001.txt' ORDER BY path`,
        "--format",
        "json",
      ],
      { cwd: root },
    );
    assert.equal(result.code, 0, result.stderr);
    const rows = JSON.parse(result.stdout) as {
      path: string;
      a: string | null;
      b: string | null;
    }[];
    assert.equal(rows.length, 80);
    for (const row of rows) {
      const zero = row.path.endsWith("/f0000.txt");
      assert.deepEqual(
        { a: row.a, b: row.b },
        zero ? { a: "f000", b: null } : { a: null, b: "0001" },
        row.path,
      );
    }
  });

  it("takes a folder's captures under a trailing / from the first alternative that matches it", async () => {
    // d000..d007 match a literal alternative first (no capture); the others only `d0{rest}`.
    const literal = Array.from({ length: 8 }, (_, i) => folderName(i));
    const result = await runDirq(
      [
        `SELECT path, rest FROM './{${literal.join(",")},d0{rest}}/' WHERE path GLOB '*/f0000.txt' ORDER BY path`,
        "--format",
        "json",
      ],
      { cwd: root },
    );
    assert.equal(result.code, 0, result.stderr);
    const rows = JSON.parse(result.stdout) as { path: string; rest: string | null }[];
    assert.equal(rows.length, FOLDERS);
    for (const row of rows) {
      const folder = row.path.slice(0, row.path.indexOf("/"));
      assert.equal(row.rest, literal.includes(folder) ? null : folder.slice(2), row.path);
    }
  });

  it("refuses braces that expand past its limit, naming the table", async () => {
    const ten = "{a,b,c,d,e,f,g,h,i,j}";
    const pattern = `${ten}${ten}${ten}${ten}${ten}`;
    const result = await runDirq([`SELECT count(*) FROM './${pattern}'`], { cwd: root });
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /path-table '\.\/\{a,b,c/);
    assert.match(result.stderr, /expand to more than 10,000 paths/);
    assert.match(result.stderr, /several globs \(path-tables joined with UNION ALL\)/);
    assert.doesNotMatch(result.stderr, /\n\s+at /, "no stack trace");
    assert.equal(result.stdout, "");
  });

  it("refuses such a glob in a config table too, naming the file and key", async () => {
    const ten = "{a,b,c,d,e,f,g,h,i,j}";
    const config = join(root, "wide.toml");
    writeFileSync(
      config,
      `[[table]]\nname = "t"\nglob = "${ten.repeat(5)}/*.json"\nformat = "json"\n`,
    );
    try {
      const result = await runDirq(["-c", "wide.toml", "SELECT 1"], { cwd: root });
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /wide\.toml: table\[0\]\.glob: its braces expand to more than/);
    } finally {
      rmSync(config);
    }
  });
});
