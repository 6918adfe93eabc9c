/**
 * Differential harness: a glob path-table selects what bash selects with
 * `shopt -s globstar nullglob` (no dotglob, no extglob): the regular files it expands to, and
 * for a pattern ending in `/`, every file under the directories it expands to. Generated
 * patterns over one generated tree, many patterns per dirq run. Seeded: DIRQ_TEST_SEED.
 * A `{name}` capture, which bash leaves literal, matches what `*` matches: each pattern with
 * some of its `*` written as captures selects what bash selects for the pattern with `*`.
 */
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { harnessSeed, pick, reference, seededRandom } from "./differential.js";
import { runDirq } from "./helpers.js";
import { compileBashGlob } from "../src/scan/bash-glob.js";
import { compileGlob } from "../src/scan/path-selection.js";

const SEED = harnessSeed(4242);
const PATTERNS = 400;
/** Path-tables per statement (dirq allows 64). */
const PER_RUN = 50;

const DIRS = ["a", "b", "src", "sub", "deep", ".hidden", "a(b)", "c d", "Src", "x.md"];
const FILES = [
  "a",
  "b",
  "ab",
  "x.md",
  "y.MD",
  "z.txt",
  ".x",
  ".env",
  ".hidden",
  "a(b)",
  "c d",
  "[x].md",
  "a.b.c",
  "README",
  "q!",
  "+plus",
  "@at",
  "-dash",
  "Ab",
  "aB.md",
];
/** Pieces of one pattern segment, in dirq's spelling (bash's is derived). */
const PIECES = [
  "*",
  "?",
  "a*",
  "*.md",
  "*.MD",
  "[ab]*",
  "[!a]*",
  "[^.]*",
  ".*",
  "{a,b}*",
  "*{.md,.txt}",
  "x.m?",
  "a(b)",
  "c d",
  "\\[x\\].md",
  "sub",
  "src",
  "deep",
  ".hidden",
  "[[:upper:]]*",
  "*b",
  "a?",
  "[a-c]",
  "?*",
  "*.*",
  "{src,sub}",
  "q!",
  "+plus",
  "-dash",
  "[.]*",
  "Ab",
];

/** The pattern as bash must read it: everything but glob syntax quoted with a backslash. */
function forBash(pattern: string): string {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string;
    const close = ch === "[" ? pattern.indexOf("]", i + 2) : -1;
    if (close !== -1 && !pattern.slice(i, close).includes("/")) {
      // A bracket expression goes to bash as written.
      out += pattern.slice(i, close + 1);
      i = close;
    } else if (ch === "\\") {
      out += pattern.slice(i, i + 2);
      i++;
    } else if (/[A-Za-z0-9*?[\]{},/._^-]/.test(ch)) {
      out += ch;
    } else {
      out += `\\${ch}`;
    }
  }
  return out;
}

/** Names a wide brace takes its alternatives from: literal in both spellings. */
const WIDE_NAMES = [...DIRS, ...FILES.filter((name) => !name.includes("["))];

/**
 * A brace of 8 to 15 alternatives, most of them literal names (some two names deep, a few
 * patterns): enough that dirq looks the literal ones up by name instead of trying each.
 */
function wideBrace(random: () => number): string {
  const count = 8 + Math.floor(random() * 8);
  const alternatives = Array.from({ length: count }, () => {
    if (random() < 0.15)
      return pick(
        random,
        PIECES.filter((piece) => !piece.includes("{")),
      );
    const name = pick(random, WIDE_NAMES);
    return random() < 0.15 ? `${name}/${pick(random, WIDE_NAMES)}` : name;
  });
  return `{${alternatives.join(",")}}`;
}

function generatePattern(random: () => number): string {
  const depth = 1 + Math.floor(random() * 3);
  const segments: string[] = [];
  for (let d = 0; d < depth; d++) {
    if (random() < 0.12) segments.push(wideBrace(random));
    else if (random() < 0.2) segments.push("**");
    else if (random() < 0.3) segments.push(pick(random, DIRS));
    else segments.push(pick(random, PIECES) + (random() < 0.2 ? pick(random, ["*", "", "?"]) : ""));
  }
  // A pattern without glob syntax is a literal path (an error when it names nothing).
  if (!/[*?[{]/.test(segments.join("/").replace(/\\./g, ""))) segments.push("*");
  return segments.join("/") + (random() < 0.2 ? "/" : "");
}

function makeTree(random: () => number): string {
  const root = mkdtempSync(join(tmpdir(), "dirq-glob-"));
  for (let i = 0; i < 160; i++) {
    let path = "";
    const depth = Math.floor(random() * 4);
    for (let d = 0; d < depth; d++) path += `${pick(random, DIRS)}/`;
    path += pick(random, FILES);
    try {
      mkdirSync(dirname(join(root, path)), { recursive: true });
      writeFileSync(join(root, path), "");
    } catch {
      // A file name already used as a folder (or the reverse): skip this one.
    }
  }
  return root;
}

/** What bash selects, pattern by pattern (one bash for all of them). */
function bashSelections(root: string, patterns: readonly string[]): Set<string>[] {
  const script = [
    "shopt -s globstar nullglob",
    "shopt -u dotglob extglob",
    ...patterns.map(
      (pattern, i) =>
        `for f in ${forBash(pattern)}; do ` +
        `if [ -L "$f" ]; then :; ` +
        `elif [ -d "$f" ] && ${pattern.endsWith("/") ? "true" : "false"}; then find "$f" -type f -printf '${i}\\t%p\\0'; ` +
        `elif [ -f "$f" ]; then printf '${i}\\t%s\\0' "$f"; fi; done`,
    ),
  ].join("\n");
  const out = reference("bash", ["-c", script], { cwd: root });
  const sets = patterns.map(() => new Set<string>());
  for (const record of out.split("\0")) {
    if (record === "") continue;
    const tab = record.indexOf("\t");
    const path = record
      .slice(tab + 1)
      .replace(/\/{2,}/g, "/")
      .replace(/^\.\//, "");
    sets[Number(record.slice(0, tab))]?.add(path);
  }
  return sets;
}

async function dirqSelections(root: string, patterns: readonly string[]): Promise<Set<string>[]> {
  const sets = patterns.map(() => new Set<string>());
  for (let start = 0; start < patterns.length; start += PER_RUN) {
    const batch = patterns.slice(start, start + PER_RUN);
    const sql = batch
      .map((pattern, i) => `SELECT ${start + i} AS q, path FROM './${pattern}'`)
      .join(" UNION ALL ");
    const result = await runDirq([sql, "--format", "json", "--no-ignore"], { cwd: root });
    assert.equal(result.code, 0, result.stderr);
    for (const row of JSON.parse(result.stdout) as { q: number; path: string }[]) {
      sets[row.q]?.add(row.path);
    }
  }
  return sets;
}

/**
 * The pattern with some of its single `*` (outside brackets, escapes and globstars) written as
 * captures `{c0}`, `{c1}`, ...; `null` when none was.
 */
function withCaptures(pattern: string, random: () => number): string | null {
  let out = "";
  let count = 0;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] as string;
    const close = ch === "[" ? pattern.indexOf("]", i + 2) : -1;
    if (ch === "\\" || (close !== -1 && !pattern.slice(i, close).includes("/"))) {
      const end = ch === "\\" ? i + 1 : close;
      out += pattern.slice(i, end + 1);
      i = end;
    } else if (ch === "*" && pattern[i + 1] !== "*" && pattern[i - 1] !== "*" && random() < 0.7) {
      out += `{c${count++}}`;
    } else {
      out += ch;
    }
  }
  return count === 0 ? null : out;
}

/** Every file of the tree, relative to it. */
function treeFiles(root: string): string[] {
  return (readdirSync(root, { recursive: true, withFileTypes: true }) as import("node:fs").Dirent[])
    .filter((entry) => entry.isFile())
    .map((entry) => `${entry.parentPath.slice(root.length + 1)}/${entry.name}`.replace(/^\//, ""));
}

describe(`globs select what bash globstar selects (seed ${SEED}, ${PATTERNS} patterns)`, () => {
  const random = seededRandom(SEED);
  const root = makeTree(random);
  after(() => process.env.DIRQ_TEST_KEEP || rmSync(root, { recursive: true, force: true }));
  const patterns = Array.from({ length: PATTERNS }, () => generatePattern(random));
  const expected = bashSelections(root, patterns);

  it("agrees with bash on every generated pattern", async () => {
    const actual = await dirqSelections(root, patterns);
    const failures: string[] = [];
    patterns.forEach((pattern, i) => {
      const want = [...(expected[i] ?? [])].sort();
      const got = [...(actual[i] ?? [])].sort();
      if (JSON.stringify(want) !== JSON.stringify(got)) {
        failures.push(
          `'./${pattern}': bash ${JSON.stringify(want)}\n   dirq ${JSON.stringify(got)}`,
        );
      }
    });
    assert.deepEqual(failures, [], `seed ${SEED}, tree ${root}:\n${failures.join("\n")}`);
  });

  it("a capture selects what * selects, and captures what it matched", () => {
    const files = treeFiles(root);
    const failures: string[] = [];
    let captured = 0;
    patterns.forEach((pattern, i) => {
      const written = withCaptures(pattern, random);
      if (written === null) return;
      captured++;
      const selects = compileGlob(written);
      const want = [...(expected[i] ?? [])].sort();
      const got = files.filter((path) => selects(path)).sort();
      if (JSON.stringify(want) !== JSON.stringify(got)) {
        failures.push(
          `'./${written}': bash (as *) ${JSON.stringify(want)}\n   dirq ${JSON.stringify(got)}`,
        );
      }
      const glob = compileBashGlob(written);
      for (const path of got) {
        const values = glob.fileCaptures(path);
        if (values === null) {
          // Selected as a file under a matched folder; without a trailing `/`, a file selected
          // is matched by some alternative, which gives its captures.
          if (!glob.selectsDirectories) failures.push(`'./${written}' on ${path}: no captures`);
          continue;
        }
        // Each value is what its `*` matched: the pattern with the values put back matches too.
        const back = written.replace(/\{(c\d+)\}/g, (_, name: string) =>
          (values[name] ?? "").replace(/[\\*?[\]{}]/g, "\\$&"),
        );
        const slash = Object.values(values).some((value) => value.includes("/"));
        if (slash || !compileBashGlob(back).matchesFile(path)) {
          failures.push(`'./${written}' on ${path}: captures ${JSON.stringify(values)}`);
        }
      }
    });
    assert.ok(captured >= PATTERNS / 4, `only ${captured} patterns had a * to capture`);
    assert.deepEqual(failures, [], `seed ${SEED}, tree ${root}:\n${failures.join("\n")}`);
  });

  it("generated patterns select something often enough to mean something", () => {
    const nonEmpty = expected.filter((set) => set.size > 0).length;
    assert.ok(nonEmpty >= PATTERNS / 4, `only ${nonEmpty} of ${PATTERNS} patterns match files`);
  });
});
