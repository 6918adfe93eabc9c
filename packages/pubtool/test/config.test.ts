import assert from "node:assert/strict";
import { after, describe, it } from "node:test";
import { makeTree, removeTree, runPubtool } from "./helpers.js";

const trees: string[] = [];
after(() => trees.forEach(removeTree));

async function withConfig(toml: string, args: string[] = ["preflight"]) {
  const root = makeTree({ "pubtool.toml": toml });
  trees.push(root);
  return runPubtool(args, { cwd: root });
}

describe("pubtool.toml validation", { concurrency: true }, () => {
  const cases: { name: string; toml: string; message: RegExp }[] = [
    {
      name: "workflow must be a bare file name",
      toml: '[[package]]\nname = "a"\nkind = "rustreg"\n[package.trust_policy]\nworkflow = ".github/workflows/release.yml"\n',
      message:
        /^pubtool: pubtool\.toml: package #1 "a": key trust_policy\.workflow: must be a bare file name such as "release\.yml", not a path$/m,
    },
    {
      name: "workflow is required in a trust_policy block",
      toml: '[[package]]\nname = "a"\nkind = "pyreg"\n[package.trust_policy]\nenvironment = "release"\n',
      message: /pubtool\.toml: package #1 "a": key trust_policy\.workflow: /,
    },
    {
      name: "kind must be one of the three registries",
      toml: '[[package]]\nname = "a"\nkind = "gem"\n',
      message: /pubtool\.toml: package #1 "a": key kind: must be "rustreg", "pyreg" or "jsreg"/,
    },
    {
      name: "unknown keys are errors",
      toml: '[[package]]\nname = "a"\nkind = "jsreg"\nregistry = "x"\n',
      message: /pubtool\.toml: package #1 "a": key registry: unknown key registry/,
    },
    {
      name: "unknown keys inside trust_policy are errors",
      toml: '[[package]]\nname = "a"\nkind = "jsreg"\n[package.trust_policy]\nworkflow = "r.yml"\nenviroment = "x"\n',
      message: /package #1 "a": key trust_policy\.enviroment: unknown key enviroment/,
    },
    {
      name: "repository must be owner/repo",
      toml: '[[package]]\nname = "a"\nkind = "jsreg"\n[package.trust_policy]\nworkflow = "r.yml"\nrepository = "https://github.com/a/b"\n',
      message: /key trust_policy\.repository: must be "<owner>\/<repo>"/,
    },
    {
      name: "paths must be an array of strings",
      toml: '[[package]]\nname = "a"\nkind = "pyreg"\npaths = "dist/*"\n',
      message: /package #1 "a": key paths: /,
    },
    {
      name: "a config that declares no package",
      toml: "# nothing yet\n",
      message: /^pubtool: pubtool\.toml: declares no package; add a \[\[package\]\] entry/m,
    },
    {
      name: "dist_tag is for jsreg packages only",
      toml: '[[package]]\nname = "a"\nkind = "pyreg"\ndist_tag = "beta"\n',
      message: /package #1 "a": key dist_tag: only jsreg packages have dist-tags/,
    },
    {
      name: "dist_tag must not look like a version",
      toml: '[[package]]\nname = "a"\nkind = "jsreg"\ndist_tag = "1.2.0"\n',
      message: /key dist_tag: must be a dist-tag name such as "next", not a version/,
    },
    {
      name: "name is required",
      toml: '[[package]]\nkind = "pyreg"\n',
      message: /package #1: key name: /,
    },
    {
      name: "invalid TOML",
      toml: "[[package]\n",
      message: /^pubtool: pubtool\.toml: invalid TOML: /m,
    },
    {
      name: "the same package twice",
      toml: '[[package]]\nname = "a"\nkind = "pyreg"\n[[package]]\nname = "a"\nkind = "pyreg"\n',
      message: /package "a": declared twice for pyreg/,
    },
  ];
  for (const testCase of cases) {
    it(testCase.name, async () => {
      const result = await withConfig(testCase.toml);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, testCase.message);
      assert.doesNotMatch(result.stderr, /\n\s+at /, "no stack trace");
    });
  }

  it("doctor validates the config too", async () => {
    const result = await withConfig('[[package]]\nname = "a"\nkind = "x"\n', ["doctor"]);
    assert.equal(result.code, 2);
  });

  it("a config that declares no package fails doctor and publish too, never a silent exit 0", async () => {
    for (const args of [
      ["doctor"],
      ["publish"],
      ["publish", "--dry-run"],
      ["status"],
      ["verify"],
    ]) {
      const result = await withConfig("", args);
      assert.equal(result.code, 2, `${args.join(" ")}: ${result.stderr}`);
      assert.match(result.stderr, /pubtool\.toml: declares no package/);
    }
  });

  it("an explicit --config that does not exist", async () => {
    const result = await withConfig("", ["doctor", "--config", "nope.toml"]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /pubtool: nope\.toml: no such config file/);
  });

  it("preflight without any config names the file to create", async () => {
    const root = makeTree({});
    trees.push(root);
    const result = await runPubtool(["preflight"], { cwd: root });
    assert.equal(result.code, 2);
    assert.match(result.stderr, /no pubtool\.toml in /);
  });
});

describe("command line", { concurrency: true }, () => {
  it("--help and --version", async () => {
    const root = makeTree({});
    trees.push(root);
    const [help, version] = await Promise.all([
      runPubtool(["--help"], { cwd: root }),
      runPubtool(["--version"], { cwd: root }),
    ]);
    assert.equal(help.code, 0);
    for (const command of ["doctor", "preflight", "publish", "token list", "auth login"]) {
      assert.ok(help.stdout.includes(command), command);
    }
    assert.match(version.stdout, /^\d+\.\d+\.\d+\n$/);
  });

  it("usage errors exit 2, name the command and where its usage is", async () => {
    const root = makeTree({});
    trees.push(root);
    const cases: [string[], string][] = [
      [["frobnicate"], "pubtool: unknown command frobnicate; see pubtool --help\n"],
      [
        ["doctor", "--secrets"],
        "pubtool doctor: --secrets is not an option of doctor; see pubtool doctor --help\n",
      ],
      [["token"], "pubtool token: a command is needed: token list; see pubtool token --help\n"],
      [["auth", "whoami"], "pubtool auth: unknown command auth whoami; see pubtool auth --help\n"],
    ];
    const results = await Promise.all(cases.map(([args]) => runPubtool(args, { cwd: root })));
    results.forEach((result, at) => {
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stderr, cases[at]?.[1]);
    });
  });
});

describe("-c on every command that --help says takes it", () => {
  it("each is accepted (a missing file is a config error, not a usage error)", async () => {
    const root = makeTree({});
    try {
      const help = await runPubtool(["--help"], { cwd: root });
      const commands = help.stdout
        .split("\n")
        .filter((line) => /^ {2}[a-z]/.test(line) && line.includes("-c <file>"))
        .map((line) => line.trim().split(/\s+\[/)[0] ?? "");
      assert.deepEqual(commands, [
        "doctor",
        "preflight",
        "publish",
        "status",
        "verify",
        "token list",
      ]);
      for (const command of commands) {
        const result = await runPubtool([...command.split(" "), "-c", "missing.toml"], {
          cwd: root,
        });
        assert.equal(result.code, 2, command);
        assert.equal(result.stderr, "pubtool: missing.toml: no such config file\n", command);
      }
      const login = await runPubtool(["auth", "login", "-c", "x.toml"], { cwd: root });
      assert.match(login.stderr, /^pubtool auth login: --config is not an option of auth login;/);
    } finally {
      removeTree(root);
    }
  });
});
