import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { join, relative } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { DIRQ_BIN, makeTree, removeTree } from "./helpers.js";

/**
 * Every shell example (```sh and ```bash blocks) in the READMEs and docs/*.md runs here, as
 * a reader would paste it, in bash with `set -e -o pipefail`, in a small tree holding what
 * the examples query. A block that shows output writes its commands after `$ `; its output
 * must have as many lines as the one shown (sizes and counts differ from tree to tree).
 */
const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));
const REPO = join(PACKAGE_DIR, "..", "..");
const DOCS = [
  join(REPO, "README.md"),
  join(PACKAGE_DIR, "README.md"),
  ...readdirSync(join(PACKAGE_DIR, "docs"))
    .filter((name) => name.endsWith(".md"))
    .map((name) => join(PACKAGE_DIR, "docs", name)),
];

/** Examples that cannot run in a test, by file and first line, with why. */
const SKIPPED = new Map<string, string>([
  [
    "packages/dirq/docs/http.md: curl -N 'http://localhost:7117/live?sql=SELECT%20id,title%20FROM%20posts&key=id'",
    "a stream that never ends: test/server-live.test.ts follows /live",
  ],
  [
    "packages/dirq/docs/live-queries.md: dirq server -c .dirq.toml &",
    "a server and a stream that never end: test/server-live.test.ts follows /live",
  ],
  [
    `packages/dirq/docs/cli.md: dirq watch "SELECT basename, size FROM './notes/*.md' ORDER BY size DESC" --key basename`,
    "runs until Ctrl-C: test/watch-piped.test.ts and test/watch-terminal.test.ts run it",
  ],
  [
    "README.md: npm ci && npx dirq \"SELECT path, size FROM './' ORDER BY size DESC LIMIT 5\"",
    "installs the whole repository: scripts/test/quick-start.test.mjs runs it in a fresh copy",
  ],
  [
    "packages/dirq/docs/install.md: npm ci                          # installs and builds the three packages",
    "installs the whole repository: scripts/test/quick-start.test.mjs runs the README's npm ci",
  ],
  [
    "packages/dirq/docs/install.md: npm run release:build",
    "builds every package of a release (release/test/ runs the release build end to end)",
  ],
  ["README.md: npm test", "the full test suite itself"],
  [
    "README.md: npx pubtool doctor        # workflows, permissions, environment, declared trust policy",
    "pubtool's: needs a repository with CI workflows, and publish reads registries over the network",
  ],
  [
    "packages/dirq/README.md: dirq [-c <config>]... [--parse <format> | --on-file <command>] [--no-ignore] [--persist[=<path>]] [--format ...]   # REPL",
    "a usage synopsis, not commands",
  ],
  [
    "packages/dirq/README.md: dirq \"SELECT path, size FROM './examples' ORDER BY size DESC LIMIT 3\" --format table",
    "its output names this package's examples/: test/examples.test.ts runs it in the package and compares byte for byte",
  ],
  [
    "packages/dirq/docs/cli.md: dirq \"SELECT path, size FROM './' ORDER BY path\" --format table",
    "its output names the files of its own tree: test/examples.test.ts runs it on that tree and compares byte for byte",
  ],
  [
    'packages/dirq/README.md: dirq init && dirq query "SELECT * FROM posts LIMIT 5" -c .dirq.toml',
    "needs a folder whose data files are all in posts/ (init names its table after their folder): test/init.test.ts runs it in one",
  ],
  [
    "packages/dirq/docs/config.md: dirq init                                        # a starter .dirq.toml for the files it finds",
    "needs a folder whose data files are all in posts/ (init names its table after their folder): test/init.test.ts runs it in one",
  ],
  [
    "packages/dirq/docs/install.md: cargo install dirq --features cli        # the crate in rust/ of the repository",
    "installs from crates.io: release/test/end-to-end.test.mjs runs cargo install from a local registry",
  ],
  [
    "packages/dirq/docs/install.md: cargo install dirq --features cli --version =0.1.0 --locked",
    "installs from crates.io: release/test/end-to-end.test.mjs runs cargo install from a local registry",
  ],
  [
    "packages/dirq/docs/extensions.md: dirq \"SELECT vec_length('[1, 2, 3]')\" --extension ./vec0.so",
    "needs compiled SQLite extensions at ./vec0.so, ./tiny.so and /opt/ext/vec0.so",
  ],
  [
    "packages/dirq/docs/extensions.md: dirq \"SELECT path, embed(basename) FROM './docs'\" -c dirq.toml",
    "needs the embedding worker and the config the page shows in parts",
  ],
]);

interface Example {
  id: string;
  where: string;
  commands: string;
  /** Lines of output the block shows (`$ ` blocks only), else null. */
  shownLines: number | null;
}

function examples(): Example[] {
  const found: Example[] = [];
  for (const path of DOCS) {
    const text = readFileSync(path, "utf8");
    const file = relative(REPO, path);
    for (const match of text.matchAll(/^( *)```(?:sh|bash)\n([\s\S]*?)^ *```$/gm)) {
      const indent = (match[1] as string).length;
      const lines = (match[2] as string)
        .split("\n")
        .slice(0, -1)
        .map((line) => line.slice(indent));
      const line = text.slice(0, match.index).split("\n").length;
      const prompted = lines.some((entry) => entry.startsWith("$ "));
      const commands = prompted
        ? lines.filter((entry) => entry.startsWith("$ ")).map((entry) => entry.slice(2))
        : lines;
      found.push({
        id: `${file}: ${commands[0] ?? ""}`,
        where: `${file}:${line}`,
        commands: commands.join("\n"),
        shownLines: prompted ? lines.filter((entry) => !entry.startsWith("$ ")).length : null,
      });
    }
  }
  return found;
}

/** What the examples query: posts as JSON, sources, docs and a site, a posts config. */
const TREE = {
  "posts/hello.json": JSON.stringify({ title: "Hello", words: 120, author: "ann" }),
  "posts/2024/deep.json": JSON.stringify({ title: "Deep", words: 900, author: "bo" }),
  "posts/2024/short.json": JSON.stringify({ title: "Short", words: 12, author: "ann" }),
  "src/engine.ts": `export const big = "${"x".repeat(12_000)}";\n`,
  "src/small.ts": "export {};\n",
  "docs/index.md": "# docs\n",
  "site/index.md": "# site\n",
  "packages/tool/index.ts": "export {};\n",
  "packages/tool/package.json": JSON.stringify({ name: "tool", version: "1.0.0" }),
  "dirq.toml": `[[table]]\nname = "posts"\nglob = "posts/**/*.json"\non-file = "jq -c '[.]' {path}"\n`,
};

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  return typeof address === "object" && address !== null ? address.port : 0;
}

/**
 * Runs before each example: fail on the first failing command; curl waits for a server the
 * example has just started in the background, fails on an HTTP error (a 415 is a failure,
 * not a printed body), and a stream (`-N`) ends after two seconds; background jobs end with
 * the example. A stream waits for the server by hand: curl's --retry counts its own time-out
 * as a failure to retry, so an ended stream would be opened again, 40 times.
 */
const PRELUDE = `set -e -o pipefail
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
curl() {
  case " $* " in
    *" -sN "*|*" -N "*)
      local code
      for _ in $(seq 40); do
        code=0
        command curl --fail --max-time 2 "$@" || code=$?
        [ "$code" -eq 7 ] || break
        sleep 1
      done
      [ "$code" -eq 0 ] || [ "$code" -eq 28 ] ;;
    *) command curl --retry 40 --retry-connrefused --retry-delay 1 --fail "$@" ;;
  esac
}
`;

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runBash(script: string, cwd: string, path: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", script], {
      cwd,
      env: { ...process.env, PATH: path, DIRQ_PROGRESS: "never" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("shell examples in README.md and docs/*.md", { concurrency: true }, () => {
  const bin = makeTree({});
  mkdirSync(join(bin, "bin"));
  // `dirq` as an installed package provides it: the npm launcher on PATH.
  symlinkSync(DIRQ_BIN, join(bin, "bin", "dirq"));
  const path = [join(bin, "bin"), process.env.PATH ?? ""].join(":");
  const trees: string[] = [];
  after(() => {
    removeTree(bin);
    for (const tree of trees) removeTree(tree);
  });

  const all = examples();

  test("the skip list names only examples that exist", () => {
    const ids = new Set(all.map((example) => example.id));
    for (const id of SKIPPED.keys()) assert.ok(ids.has(id), `no such example: ${id}`);
    assert.ok(all.length >= 10, `found ${all.length} examples`);
  });

  for (const example of all) {
    const why = SKIPPED.get(example.id);
    test(`${example.where}: ${example.commands.split("\n")[0]}`, { skip: why }, async () => {
      const tree = makeTree(TREE);
      trees.push(tree);
      const port = await freePort();
      // The examples use the default port; another test may hold it.
      const commands = example.commands.replaceAll("7117", String(port));
      const ran = await runBash(`${PRELUDE}${commands}\n`, tree, path);
      assert.equal(
        ran.code,
        0,
        `${example.where} failed (${ran.code}):\n${commands}\nstdout: ${ran.stdout}\nstderr: ${ran.stderr}`,
      );
      if (example.shownLines !== null) {
        assert.equal(ran.stdout.trimEnd().split("\n").length, example.shownLines, ran.stdout);
      }
    });
  }
});
