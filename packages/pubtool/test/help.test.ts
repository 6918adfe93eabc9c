import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { makeTree, removeTree, runPubtool } from "./helpers.js";

const exec = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));
const COMMANDS = [
  "doctor",
  "preflight",
  "publish",
  "status",
  "verify",
  "token list",
  "auth login",
  "auth logout",
  "auth status",
];
/** Every option some command takes (besides --help and --version). */
const ALL_OPTIONS = ["--json", "--secrets", "--dry-run", "--config", "--client-id", "--package"];

const root = makeTree({});
after(() => removeTree(root));
const run = (args: string[]) => runPubtool(args, { cwd: root });

/** The long options a help text's `options:` section lists. */
function optionsOf(help: string): string[] {
  const section = help.slice(help.indexOf("\noptions:\n"));
  return [...section.matchAll(/^ {2}(?:-\w, )?(--[a-z][\w-]*)/gm)].map((m) => m[1] as string);
}

/** An argument list that gives `option` once (with a value when it takes one). */
function withOption(command: string, option: string): string[] {
  const value = ["--config", "--client-id", "--package"].includes(option) ? ["x"] : [];
  return [...command.split(" "), option, ...value];
}

describe("pubtool help", { concurrency: true }, () => {
  it("pubtool help, pubtool --help and bare pubtool print the overview, listing every command", async () => {
    const [help, flag, bare] = await Promise.all([run(["help"]), run(["--help"]), run([])]);
    assert.equal(help.code, 0, help.stderr);
    assert.equal(help.stdout, flag.stdout);
    assert.equal(help.stdout, bare.stdout);
    for (const command of [...COMMANDS, "help"]) {
      assert.match(help.stdout, new RegExp(`^ {2}${command}\\b`, "m"), command);
    }
  });

  for (const command of COMMANDS) {
    it(`pubtool ${command} --help, -h and pubtool help ${command} print its own usage`, async () => {
      const words = command.split(" ");
      const results = await Promise.all([
        run([...words, "--help"]),
        run([...words, "-h"]),
        run(["help", ...words]),
      ]);
      for (const result of results) {
        assert.equal(result.code, 0, result.stderr);
        assert.ok(result.stdout.startsWith(`usage: pubtool ${command}`), result.stdout);
        assert.equal(result.stdout, results[0]?.stdout);
      }
    });

    it(`pubtool ${command} takes exactly the options its --help lists`, async () => {
      const help = (await run([...command.split(" "), "--help"])).stdout;
      const listed = optionsOf(help);
      assert.ok(listed.includes("--help"), help);
      const results = await Promise.all(
        ALL_OPTIONS.map((option) => run(withOption(command, option))),
      );
      results.forEach((result, at) => {
        const option = ALL_OPTIONS[at] as string;
        const refused = /is not an option of|unknown option/.test(result.stderr);
        assert.equal(refused, !listed.includes(option), `${command} ${option}: ${result.stderr}`);
        if (refused) assert.equal(result.code, 2);
      });
    });
  }

  it("pubtool token --help and pubtool auth --help list their commands", async () => {
    const [token, auth] = await Promise.all([run(["token", "--help"]), run(["auth", "--help"])]);
    assert.match(token.stdout, /^ {2}token list \[-c <file>\] \[--secrets\]$/m);
    for (const command of ["auth login", "auth logout", "auth status"]) {
      assert.match(auth.stdout, new RegExp(`^ {2}${command}\\b`, "m"));
    }
  });

  it("pubtool help <unknown> is a usage error", async () => {
    const result = await run(["help", "frobnicate"]);
    assert.equal(result.code, 2);
    assert.equal(result.stderr, "pubtool help: no command frobnicate; see pubtool --help\n");
  });
});

describe("usage errors in pubtool's words", { concurrency: true }, () => {
  const CASES: [string[], string][] = [
    [["publish", "--foo"], "pubtool publish: unknown option --foo; see pubtool publish --help"],
    [["doctor", "-x"], "pubtool doctor: unknown option -x; see pubtool doctor --help"],
    [["publish", "-c"], "pubtool publish: --config needs a value; see pubtool publish --help"],
    [
      ["preflight", "--package"],
      "pubtool preflight: --package needs a value; see pubtool preflight --help",
    ],
    [
      ["publish", "--dry-run=yes"],
      "pubtool publish: --dry-run takes no value; see pubtool publish --help",
    ],
    [["doctor", "extra"], "pubtool doctor: unexpected argument extra; see pubtool doctor --help"],
    [
      ["auth", "login", "--json"],
      "pubtool auth login: --json is not an option of auth login; see pubtool auth login --help",
    ],
  ];
  for (const [args, expected] of CASES) {
    it(`pubtool ${args.join(" ")}`, async () => {
      const result = await run(args);
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stderr, `${expected}\n`);
      assert.doesNotMatch(result.stderr, /To specify a positional argument|ERR_PARSE_ARGS/);
    });
  }
});

describe("man page", () => {
  it("man/pubtool.1 is what scripts/build-man.mjs makes from the --help texts", async () => {
    const fresh = join(root, "pubtool.1");
    await exec(process.execPath, [join(PACKAGE_DIR, "scripts", "build-man.mjs"), fresh]);
    assert.equal(
      readFileSync(join(PACKAGE_DIR, "man", "pubtool.1"), "utf8"),
      readFileSync(fresh, "utf8"),
      "man/pubtool.1 is stale: run node scripts/build-man.mjs after npm run build",
    );
  });

  it("the package ships it, and man renders every command and option of every --help", async () => {
    const manifest = JSON.parse(readFileSync(join(PACKAGE_DIR, "package.json"), "utf8"));
    assert.deepEqual(manifest.man, ["./man/pubtool.1"]);
    const { stdout: packed } = await exec("npm", ["pack", "--dry-run", "--json"], {
      cwd: PACKAGE_DIR,
      maxBuffer: 1 << 26,
    });
    const files = (JSON.parse(packed) as { files: { path: string }[] }[])[0]?.files ?? [];
    assert.ok(
      files.some((file) => file.path === "man/pubtool.1"),
      "man/pubtool.1 in the tarball",
    );
    // As npm's global install links it: <prefix>/share/man/man1/pubtool.1.
    const manDir = join(root, "share", "man", "man1");
    mkdirSync(manDir, { recursive: true });
    symlinkSync(join(PACKAGE_DIR, "man", "pubtool.1"), join(manDir, "pubtool.1"));
    const { stdout: page, stderr } = await exec("man", ["pubtool"], {
      env: { ...process.env, MANPATH: join(root, "share", "man"), MANWIDTH: "100" },
    });
    assert.equal(stderr, "");
    const text = page.replace(/.\x08/g, "");
    for (const heading of ["NAME", "SYNOPSIS", "COMMANDS", "ENVIRONMENT", "FILES", "EXIT STATUS"]) {
      assert.match(text, new RegExp(`^${heading}$`, "m"), heading);
    }
    for (const command of COMMANDS) {
      const help = (await run([...command.split(" "), "--help"])).stdout;
      assert.ok(text.includes(`pubtool ${command}`), `man pubtool lacks ${command}`);
      for (const option of help.match(/(?<![\w-])--[a-z][\w-]*/g) ?? []) {
        assert.ok(text.includes(option), `man pubtool lacks ${option} (pubtool ${command} --help)`);
      }
    }
  });
});
