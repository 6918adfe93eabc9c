import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { basename, join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { DIRQ_BIN, makeTree, removeTree, runDirq } from "./helpers.js";

const exec = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));

/** A folder with `dirq` (the npm launcher, as installed) for shells to find on PATH. */
const home = makeTree({ "files/a.toml": "", "files/b.txt": "" });
mkdirSync(join(home, "bin"));
symlinkSync(DIRQ_BIN, join(home, "bin", "dirq"));
const shellEnv = {
  ...process.env,
  PATH: [join(home, "bin"), process.env.PATH ?? ""].join(":"),
  HOME: home,
  ZDOTDIR: home,
  XDG_CONFIG_HOME: join(home, "config"),
  XDG_DATA_HOME: join(home, "data"),
};
after(() => removeTree(home));

function hasShell(shell: string): boolean {
  return spawnSync(shell, ["-c", "exit 0"]).status === 0;
}

async function inShell(shell: string, script: string): Promise<string> {
  const { stdout } = await exec(shell, ["-c", script], {
    cwd: join(home, "files"),
    env: shellEnv,
  });
  return stdout;
}

const lines = (text: string) => text.split("\n").filter(Boolean).sort();

describe("dirq server --help", () => {
  for (const flag of ["--help", "-h"]) {
    it(`server ${flag} prints the server's own usage`, async () => {
      const result = await runDirq(["server", flag], { cwd: home });
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, /^Usage: dirq server /);
      for (const option of ["--host", "--port", "--persist", "--extension", "--no-ignore"]) {
        assert.ok(result.stdout.includes(option), `${option} in:\n${result.stdout}`);
      }
      assert.doesNotMatch(result.stdout, /--on-file|--format/, "query-only options");
    });
  }
});

describe("dirq completion", () => {
  it("refuses a shell it has no script for, naming the ones it has", async () => {
    const result = await runDirq(["completion", "tcsh"], { cwd: home });
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /^dirq: no completion for shell 'tcsh': expected bash, zsh or fish/,
    );
  });

  /** What the bash function offers for the words typed so far (the last one is completed). */
  const bashOffers = (shell: "bash" | "zsh", words: string[]) => {
    const array = words.map((word) => `'${word}'`).join(" ");
    const setup =
      shell === "bash"
        ? "source <(dirq completion bash)"
        : "source <(dirq completion zsh); setopt ksharrays";
    return inShell(
      shell,
      `${setup}; COMP_WORDS=(${array}); COMP_CWORD=${words.length - 1}; _dirq; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ).then(lines);
  };

  const CASES: [string[], string[]][] = [
    [
      ["dirq", ""],
      ["completion", "init", "query", "repl", "server", "watch"],
    ],
    [["dirq", "repl", "--for"], ["--format"]],
    [
      ["dirq", "repl", "--format", ""],
      ["auto", "csv", "json", "table"],
    ],
    [["dirq", "--for"], ["--format"]],
    [
      ["dirq", "SELECT 1", "--format", ""],
      ["auto", "csv", "json", "table"],
    ],
    [
      ["dirq", "server", "--p"],
      ["--persist", "--port"],
    ],
    [
      ["dirq", "init", "--"],
      ["--force", "--help", "--output", "--root"],
    ],
    [
      ["dirq", "completion", ""],
      ["bash", "fish", "zsh"],
    ],
    [["dirq", "SELECT 1", "-c", "a"], ["a.toml"]],
    [["dirq", "--no-p"], ["--no-plugin"]],
  ];

  it("bash: the script registers itself, and offers subcommands, options and values", async () => {
    const registered = await inShell("bash", "source <(dirq completion bash); complete -p dirq");
    assert.equal(registered.trim(), "complete -F _dirq dirq");
    for (const [words, expected] of CASES) {
      assert.deepEqual(await bashOffers("bash", words), expected, words.join(" "));
    }
  });

  it(
    "zsh: the script registers through bashcompinit and offers the same",
    { skip: !hasShell("zsh") && "zsh is not installed" },
    async () => {
      const registered = await inShell(
        "zsh",
        "source <(dirq completion zsh); print -r -- ${_comps[dirq]}",
      );
      assert.match(registered.trim(), /_bash_complete -F _dirq/);
      for (const [words, expected] of CASES) {
        // zsh's compgen (bashcompinit) does not filter by the word typed: compadd does, later.
        const typed = words.at(-1) ?? "";
        const offered = (await bashOffers("zsh", words)).filter((word) => word.startsWith(typed));
        assert.deepEqual(offered, expected, words.join(" "));
      }
    },
  );

  it(
    "fish: the script loads and offers subcommands, options and values",
    { skip: !hasShell("fish") && "fish is not installed" },
    async () => {
      const offers = async (commandLine: string) =>
        lines(
          (await inShell("fish", `dirq completion fish | source; complete -C '${commandLine}'`))
            .split("\n")
            .map((line) => line.split("\t")[0] as string)
            .join("\n"),
        );
      assert.deepEqual(await offers("dirq "), [
        "completion",
        "init",
        "query",
        "repl",
        "server",
        "watch",
      ]);
      assert.deepEqual(await offers("dirq repl --for"), ["--format"]);
      assert.deepEqual(await offers("dirq --for"), ["--format"]);
      assert.deepEqual(await offers("dirq x --format "), ["auto", "csv", "json", "table"]);
      assert.deepEqual(await offers("dirq server --p"), ["--persist", "--port"]);
      assert.deepEqual(await offers("dirq completion "), ["bash", "fish", "zsh"]);
      assert.deepEqual(await offers("dirq x -c a"), ["a.toml"]);
    },
  );
});

describe("man page", () => {
  it("man/dirq.1 is what scripts/build-man.mjs makes from the --help texts", async () => {
    const fresh = join(home, "dirq.1");
    await exec(process.execPath, [join(PACKAGE_DIR, "scripts", "build-man.mjs"), fresh]);
    assert.equal(
      readFileSync(join(PACKAGE_DIR, "man", "dirq.1"), "utf8"),
      readFileSync(fresh, "utf8"),
      "man/dirq.1 is stale: run node scripts/build-man.mjs after npm run build",
    );
  });

  it("the package ships it as its man page, and man renders every option of every --help", async () => {
    const manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, "package.json"), "utf8"));
    assert.deepEqual(manifest.man, ["./man/dirq.1"]);
    const { stdout: packed } = await exec("npm", ["pack", "--dry-run", "--json"], {
      cwd: PACKAGE_DIR,
      maxBuffer: 1 << 26,
    });
    const files = (JSON.parse(packed) as { files: { path: string }[] }[])[0]?.files ?? [];
    assert.ok(
      files.some((file) => file.path === "man/dirq.1"),
      "man/dirq.1 in the tarball",
    );
    // `man dirq` as npm's global install links it: <prefix>/share/man/man1/dirq.1.
    const manDir = join(home, "share", "man", "man1");
    mkdirSync(manDir, { recursive: true });
    symlinkSync(join(PACKAGE_DIR, "man", "dirq.1"), join(manDir, "dirq.1"));
    const { stdout: page, stderr } = await exec("man", ["dirq"], {
      env: {
        ...process.env,
        MANPATH: join(home, "share", "man"),
        MANWIDTH: "100",
        MAN_KEEP_FORMATTING: "",
      },
    });
    assert.equal(stderr, "");
    const text = page.replace(/.\x08/g, "");
    for (const topic of ["", "query ", "repl ", "init ", "server ", "completion "]) {
      const { stdout: help } = await runDirq([...topic.split(" ").filter(Boolean), "--help"], {
        cwd: home,
      });
      for (const option of help.match(/(?<![\w-])--[a-z][\w-]*/g) ?? []) {
        assert.ok(text.includes(option), `man dirq lacks ${option} (dirq ${topic}--help)`);
      }
    }
  });
});

/**
 * Where a feature's tests live (docs/internals.md, "Where tests live"): an end-to-end file is
 * named after a feature prefix of that page's table, an in-process one after a module of src/.
 */
describe("test files are named so a feature's tests are found from its name", () => {
  const testDir = join(PACKAGE_DIR, "test");
  const internals = readFileSync(join(PACKAGE_DIR, "docs", "internals.md"), "utf8");
  const table = internals.slice(internals.indexOf("## Where tests live"));
  const prefixes = [...table.matchAll(/^\| ([^|]+)\|/gm)].flatMap(([, cell]) =>
    [...(cell ?? "").matchAll(/`([a-z0-9-]+)`/g)].map(([, prefix]) => prefix ?? ""),
  );
  const named = (file: string, names: readonly string[]) =>
    names.some((name) => file.startsWith(`${name}-`) || file.startsWith(`${name}.`));

  it("every end-to-end test file starts with a feature prefix of docs/internals.md", () => {
    assert.ok(prefixes.length >= 20, prefixes.join(", "));
    const files = readdirSync(testDir).filter((name) => name.endsWith(".test.ts"));
    assert.deepEqual(
      files.filter((file) => !named(file, prefixes)),
      [],
      "name it after a row of docs/internals.md's table, or add the feature's row",
    );
  });

  it("every in-process test file starts with the name of a module of src/ or eslint-rules/", () => {
    const src = join(PACKAGE_DIR, "src");
    const modules = [
      ...readdirSync(src, { recursive: true }).map((path) => basename(String(path), ".ts")),
      ...readdirSync(join(PACKAGE_DIR, "..", "..", "eslint-rules")).map((n) => basename(n, ".js")),
    ];
    const files = readdirSync(join(testDir, "unit"), { recursive: true })
      .map((path) => basename(String(path)))
      .filter((name) => name.endsWith(".test.ts"));
    assert.ok(files.length > 30);
    assert.deepEqual(
      files.filter((file) => !named(file, modules)),
      [],
    );
  });
});
