import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { takeNoPluginFlag, withPluginConfigs } from "../src/launcher/plugin-args.js";
import { assertUserError, DIRQ_BIN, makeTree, parseRows, removeTree, runDirq } from "./helpers.js";
import { processTree, queryRows, type ServerProcess, startServer } from "./server-support.js";

const run = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));
const REPO_NODE_MODULES = fileURLToPath(new URL("../../../../node_modules", import.meta.url));

/** A plugin package's files: a fragment with one table, parsed by its own hook script. */
function pluginFiles(name: string, table: string, config = "dirq.toml"): Record<string, string> {
  return {
    "package.json": JSON.stringify({ name, version: "1.0.0", dirq: { config } }),
    [config]: `[[table]]\nname = "${table}"\nglob = "**/*.csv"\non-file = "./parse.mjs {path}"\n`,
    "parse.mjs": `#!/usr/bin/env node
import { readFileSync } from "node:fs";
const [header, ...lines] = readFileSync(process.argv[2], "utf8").trim().split("\\n");
const keys = header.split(",");
process.stdout.write(JSON.stringify(lines.map((line) => Object.fromEntries(line.split(",").map((v, i) => [keys[i], v])))));
`,
  };
}

function writePackage(dir: string, files: Record<string, string>): void {
  mkdirSync(dir, { recursive: true });
  for (const [path, content] of Object.entries(files)) writeFileSync(join(dir, path), content);
  if (existsSync(join(dir, "parse.mjs"))) chmodSync(join(dir, "parse.mjs"), 0o755);
}

/** Shared with the Python launcher's test: both launchers compose command lines alike. */
export const PLUGIN_ARGS_CASES = fileURLToPath(
  new URL("../../test/fixtures/plugin-args-cases.json", import.meta.url),
);

describe("npm launcher: plugin composition", () => {
  test("fragments go after the user's last -c, else after the subcommand or SQL, else last", () => {
    const { fragments, cases } = JSON.parse(readFileSync(PLUGIN_ARGS_CASES, "utf8")) as {
      fragments: string[];
      cases: [string[], string[]][];
    };
    for (const [argv, expected] of cases) {
      assert.deepEqual(withPluginConfigs(argv, fragments), expected, JSON.stringify(argv));
    }
  });

  test("--no-plugin is taken out before a --, never after", () => {
    assert.deepEqual(takeNoPluginFlag(["SELECT 1", "--no-plugin"]), {
      argv: ["SELECT 1"],
      noPlugin: true,
    });
    assert.deepEqual(takeNoPluginFlag(["query", "--", "--no-plugin"]), {
      argv: ["query", "--", "--no-plugin"],
      noPlugin: false,
    });
  });
});

describe("npm launcher: discovery in the working directory's node_modules", () => {
  let root: string;
  before(() => {
    root = makeTree({
      "data/people.csv": "name,city\nada,london\nalan,wilmslow\n",
      "user.toml": `[[table]]\nname = "mine"\nglob = "data/*.csv"\non-file = "cat {path}"\n`,
      "sub/dir/.keep": "",
    });
    writePackage(
      join(root, "node_modules", "dirq-plugin-people"),
      pluginFiles("dirq-plugin-people", "people"),
    );
    writePackage(
      join(root, "node_modules", "@acme", "dirq-cities"),
      pluginFiles("@acme/dirq-cities", "cities"),
    );
    writePackage(join(root, "node_modules", "unrelated"), {
      "package.json": '{"name":"unrelated"}',
    });
  });
  after(() => removeTree(root));

  test("plugin tables are queryable, from the root and from a folder below it", async () => {
    const sql =
      "SELECT (SELECT group_concat(name) FROM people) AS p, (SELECT count(*) FROM cities) AS c";
    const result = await runDirq([sql], { cwd: root });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(parseRows(result.stdout), [{ p: "ada,alan", c: 2 }]);
    // From sub/dir the root is sub/dir, with no csv files: the tables exist, empty.
    const below = await runDirq(["SELECT count(*) AS n FROM people"], {
      cwd: join(root, "sub", "dir"),
    });
    assert.equal(below.code, 0, below.stderr);
    assert.deepEqual(parseRows(below.stdout), [{ n: 0 }]);
  });

  test("--no-plugin (consumed) and DIRQ_NO_PLUGIN=1 turn discovery off", async () => {
    const off = await runDirq(["SELECT * FROM people", "--no-plugin"], { cwd: root });
    assertUserError(off, /no such table: people/);
    const env = await runDirq(["query", "SELECT * FROM people"], {
      cwd: root,
      env: { DIRQ_NO_PLUGIN: "1" },
    });
    assertUserError(env, /no such table: people/);
    const ok = await runDirq(["query", "--no-plugin", "SELECT count(*) AS n FROM './data'"], {
      cwd: root,
    });
    assert.deepEqual(parseRows(ok.stdout), [{ n: 1 }]);
  });

  test("fragments load after the user's -c configs, in package-name order", async () => {
    const clash = makeTree({
      "u.toml": `[[table]]\nname = "people"\nglob = "*.csv"\non-file = "cat {path}"\n`,
    });
    try {
      writePackage(join(clash, "node_modules", "b-plugin"), pluginFiles("b-plugin", "dup"));
      writePackage(join(clash, "node_modules", "a-plugin"), pluginFiles("a-plugin", "dup"));
      const result = await runDirq(["SELECT 1", "-c", "u.toml"], { cwd: clash });
      assertUserError(
        result,
        /b-plugin\/dirq\.toml: table\[0\]\.name: table 'dup' is already defined at .*a-plugin\/dirq\.toml: table\[0\]/,
      );
      writePackage(join(clash, "node_modules", "c-plugin"), pluginFiles("c-plugin", "people"));
      const user = await runDirq(["SELECT 1", "-c", "u.toml", "--no-plugin"], { cwd: clash });
      assert.equal(user.code, 0, user.stderr);
    } finally {
      removeTree(clash);
    }
  });

  test("a plugin whose fragment is missing is a launcher error naming the package", async () => {
    const broken = makeTree({ "x.txt": "" });
    try {
      writePackage(join(broken, "node_modules", "dirq-broken"), {
        "package.json": JSON.stringify({ name: "dirq-broken", dirq: { config: "gone.toml" } }),
      });
      const result = await runDirq(["SELECT 1"], { cwd: broken });
      assertUserError(
        result,
        /^plugin dirq-broken \(.*\): its config fragment gone\.toml is missing/,
      );
      // A fragment path through a file (ENOTDIR) is as missing, not an internal error.
      writePackage(join(broken, "node_modules", "dirq-broken"), {
        "package.json": JSON.stringify({
          name: "dirq-broken",
          dirq: { config: "package.json/dirq.toml" },
        }),
      });
      const throughFile = await runDirq(["SELECT 1"], { cwd: broken });
      assertUserError(
        throughFile,
        /^plugin dirq-broken \(.*\): its config fragment package\.json\/dirq\.toml is missing/,
      );
      const skipped = await runDirq(["SELECT 1", "--no-plugin"], { cwd: broken });
      assert.equal(skipped.code, 0, skipped.stderr);
      // Commands that read no config never discover, so a broken plugin cannot break them.
      for (const args of [["--help"], ["server", "--help"], ["query", "-h"], ["--version"]]) {
        const outcome = await runDirq(args, { cwd: broken });
        assert.equal(outcome.code, 0, `${args.join(" ")}: ${outcome.stderr}`);
        assert.notEqual(outcome.stdout, "");
      }
      const init = await runDirq(["init"], { cwd: broken });
      assert.equal(init.code, 0, init.stderr);
      assert.ok(existsSync(join(broken, ".dirq.toml")));
    } finally {
      removeTree(broken);
    }
  });
});

describe("npm launcher: the discovery cache", () => {
  let cacheHome: string;
  before(() => {
    cacheHome = mkdtempSync(join(tmpdir(), "dirq-plugin-cache-"));
  });
  after(() => removeTree(cacheHome));

  const PLUGIN_TABLES =
    "SELECT group_concat(name) AS names FROM pragma_table_list WHERE name GLOB 't_*'";

  /** The plugin tables a run sees, by name, sorted. */
  async function tablesSeen(cwd: string, env: Record<string, string> = {}): Promise<string[]> {
    const result = await runDirq([PLUGIN_TABLES], {
      cwd,
      env: { XDG_CACHE_HOME: cacheHome, ...env },
    });
    assert.equal(result.code, 0, result.stderr);
    const [row] = parseRows(result.stdout) as { names: string | null }[];
    return (row?.names ?? "").split(",").filter(Boolean).sort();
  }

  /**
   * Dates the node_modules folder, its scope folders and its installer state files ten seconds
   * back: the cache does not trust times from the last two seconds, which a test's fresh files
   * all are.
   */
  function settle(nodeModules: string): void {
    const past = new Date(Date.now() - 10_000);
    const paths = [nodeModules, join(nodeModules, ".package-lock.json")];
    for (const entry of readdirSync(nodeModules)) {
      if (entry.startsWith("@")) paths.push(join(nodeModules, entry));
    }
    for (const path of paths) if (existsSync(path)) utimesSync(path, past, past);
  }

  function cachedPlaces(): string[] {
    const path = join(cacheHome, "dirq", "plugins.json");
    if (!existsSync(path)) return [];
    const file = JSON.parse(readFileSync(path, "utf8")) as { places: Record<string, unknown> };
    return Object.keys(file.places);
  }

  test("a settled node_modules is recorded and answered from; an install shows at once", async () => {
    const root = makeTree({ "x.txt": "" });
    try {
      const nodeModules = join(root, "node_modules");
      writePackage(join(nodeModules, "plugin-a"), pluginFiles("plugin-a", "t_a"));
      writePackage(join(nodeModules, "@acme", "plugin-b"), pluginFiles("@acme/plugin-b", "t_b"));
      writePackage(join(nodeModules, "plain"), { "package.json": '{"name":"plain"}' });
      writeFileSync(join(nodeModules, ".package-lock.json"), "{}");

      // Fresh times: read, not recorded.
      assert.deepEqual(await tablesSeen(root), ["t_a", "t_b"]);
      assert.ok(!cachedPlaces().includes(nodeModules), cachedPlaces().join(" "));

      settle(nodeModules);
      assert.deepEqual(await tablesSeen(root), ["t_a", "t_b"]);
      assert.ok(cachedPlaces().includes(nodeModules), cachedPlaces().join(" "));
      assert.deepEqual(await tablesSeen(root), ["t_a", "t_b"], "answered from the record");

      // A package added (the folder's entries change), one in a scope (only the scope
      // folder's entries change), one removed: each after the folder was recorded.
      writePackage(join(nodeModules, "plugin-c"), pluginFiles("plugin-c", "t_c"));
      assert.deepEqual(await tablesSeen(root), ["t_a", "t_b", "t_c"]);
      settle(nodeModules);
      assert.deepEqual(await tablesSeen(root), ["t_a", "t_b", "t_c"]);
      assert.ok(cachedPlaces().includes(nodeModules));
      writePackage(join(nodeModules, "@acme", "plugin-d"), pluginFiles("@acme/plugin-d", "t_d"));
      assert.deepEqual(await tablesSeen(root), ["t_a", "t_b", "t_c", "t_d"]);
      settle(nodeModules);
      assert.deepEqual(await tablesSeen(root), ["t_a", "t_b", "t_c", "t_d"]);
      assert.ok(cachedPlaces().includes(nodeModules));
      removeTree(join(nodeModules, "plugin-a"));
      assert.deepEqual(await tablesSeen(root), ["t_b", "t_c", "t_d"]);

      // A package manager updating a package's files in place rewrites its state file.
      settle(nodeModules);
      assert.deepEqual(await tablesSeen(root), ["t_b", "t_c", "t_d"]);
      writeFileSync(
        join(nodeModules, "plain", "package.json"),
        JSON.stringify({ name: "plain", dirq: { config: "dirq.toml" } }),
      );
      writeFileSync(
        join(nodeModules, "plain", "dirq.toml"),
        '[[table]]\nname = "t_plain"\nglob = "*.none"\non-file = "cat {path}"\n',
      );
      // A manifest edited by hand in a folder that is not a symlink: the documented blind spot.
      assert.deepEqual(await tablesSeen(root), ["t_b", "t_c", "t_d"]);
      assert.deepEqual(await tablesSeen(root, { DIRQ_PLUGIN_CACHE: "0" }), [
        "t_b",
        "t_c",
        "t_d",
        "t_plain",
      ]);
      writeFileSync(join(nodeModules, ".package-lock.json"), '{"lockfileVersion":3}');
      assert.deepEqual(await tablesSeen(root), ["t_b", "t_c", "t_d", "t_plain"]);
    } finally {
      removeTree(root);
    }
  });

  test("a linked package is read at every start; a removed fragment is the usual error", async () => {
    const root = makeTree({ "x.txt": "" });
    const source = makeTree({});
    try {
      const nodeModules = join(root, "node_modules");
      writePackage(join(nodeModules, "plugin-a"), pluginFiles("plugin-a", "t_a"));
      writePackage(source, { "package.json": '{"name":"dev-plugin","version":"0.0.1"}' });
      symlinkSync(source, join(nodeModules, "dev-plugin"));
      settle(nodeModules);
      assert.deepEqual(await tablesSeen(root), ["t_a"]);
      assert.ok(cachedPlaces().includes(nodeModules), cachedPlaces().join(" "));

      // npm link: the manifest is edited where it lives, not in node_modules.
      writePackage(source, pluginFiles("dev-plugin", "t_dev"));
      assert.deepEqual(await tablesSeen(root), ["t_a", "t_dev"]);

      rmSync(join(nodeModules, "plugin-a", "dirq.toml"));
      const result = await runDirq(["SELECT 1"], { cwd: root, env: { XDG_CACHE_HOME: cacheHome } });
      assertUserError(result, /^plugin plugin-a \(.*\): its config fragment dirq\.toml is missing/);
    } finally {
      removeTree(root);
      removeTree(source);
    }
  });

  test("a damaged cache file is read as none and written anew", async () => {
    const root = makeTree({ "x.txt": "" });
    try {
      const nodeModules = join(root, "node_modules");
      writePackage(join(nodeModules, "plugin-a"), pluginFiles("plugin-a", "t_a"));
      settle(nodeModules);
      const path = join(cacheHome, "dirq", "plugins.json");
      mkdirSync(dirname(path), { recursive: true });
      for (const damage of [
        "not json",
        '{"format":1,"places":{"x":1}}',
        JSON.stringify({ format: 1, places: { [nodeModules]: { scopes: [], stamp: "x" } } }),
      ]) {
        writeFileSync(path, damage);
        assert.deepEqual(await tablesSeen(root), ["t_a"], damage);
        assert.ok(cachedPlaces().includes(nodeModules), damage);
      }

      // A current record naming a package folder outside its node_modules is not taken.
      const elsewhere = makeTree({});
      try {
        writePackage(elsewhere, pluginFiles("elsewhere", "t_elsewhere"));
        const file = JSON.parse(readFileSync(path, "utf8")) as {
          places: Record<string, { plugins: unknown[] }>;
        };
        file.places[nodeModules]?.plugins.push({
          folder: "elsewhere",
          plugin: { name: "elsewhere", directory: elsewhere, config: join(elsewhere, "dirq.toml") },
        });
        writeFileSync(path, JSON.stringify(file));
        assert.deepEqual(await tablesSeen(root), ["t_a"]);
      } finally {
        removeTree(elsewhere);
      }
    } finally {
      removeTree(root);
    }
  });
});

/** Every file under a folder, recursively. */
function listFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? listFiles(join(folder, entry.name)) : [join(folder, entry.name)],
  );
}

describe("npm launcher: the packed tarball", { timeout: 600_000 }, () => {
  let work: string;
  before(() => {
    work = mkdtempSync(join(tmpdir(), "dirq-pack-"));
  });
  after(() => removeTree(work));

  test("installs into an empty folder and runs a query, with an installed plugin", async () => {
    const npm = (args: string[], cwd: string) =>
      run("npm", [...args, "--no-audit", "--no-fund", "--loglevel=error"], {
        cwd,
        maxBuffer: 1 << 26,
      });
    const { stdout } = await npm(["pack", "--pack-destination", work, "--json"], PACKAGE_DIR);
    const tarball = join(work, (JSON.parse(stdout) as { filename: string }[])[0]?.filename ?? "");
    const files =
      (JSON.parse(stdout) as { files: { path: string }[] }[])[0]?.files.map((f) => f.path) ?? [];
    assert.ok(
      files.includes("bin/dirq.cjs") && files.includes("dist/src/index.d.ts"),
      files.join(" "),
    );
    assert.ok(
      files.includes("native/dirq-fs.c") && files.includes("scripts/build-native.mjs"),
      "the native extension's source and build script ship, its build does not",
    );
    assert.ok(!files.some((path) => path.startsWith("native/build/")), files.join(" "));
    assert.ok(!files.some((path) => path.startsWith("dist/test/")), "tests are not shipped");
    const plugin = join(work, "plugin-src");
    writePackage(plugin, pluginFiles("dirq-plugin-people", "people"));
    const packedPlugin = await npm(["pack", "--pack-destination", work, "--json"], plugin);
    const pluginTarball = join(
      work,
      (JSON.parse(packedPlugin.stdout) as { filename: string }[])[0]?.filename ?? "",
    );

    const app = join(work, "app");
    mkdirSync(app);
    // With --ignore-scripts nothing runs at install time: no download, no compiler. SQLite's
    // addon is prebuilt inside its npm package (@rocicorp/zero-sqlite3) and found at run time.
    await npm(["install", "--prefer-offline", "--ignore-scripts", tarball, pluginTarball], app);
    assert.ok(
      !existsSync(join(app, "node_modules", "better-sqlite3")),
      "no package that compiles or downloads its addon at install",
    );
    // dirq has no install script (npm 11 asks for approval of each): the first run builds
    // its native extension, whether or not install scripts ran.
    const installed = JSON.parse(
      readFileSync(join(app, "node_modules", "dirq", "package.json"), "utf8"),
    ) as { scripts?: Record<string, string> };
    for (const script of ["preinstall", "install", "postinstall", "prepare"]) {
      assert.equal(installed.scripts?.[script], undefined, `no ${script} script`);
    }
    const libraryName = process.platform === "darwin" ? "dirq_fs.dylib" : "dirq_fs.so";
    const library = join(app, "node_modules", "dirq", "native", "build", libraryName);
    assert.ok(!existsSync(library), "nothing compiled at install");
    writeFileSync(join(app, "people.csv"), "name,city\nada,london\n");

    const bin = join(app, "node_modules", ".bin", "dirq");
    const env = { ...process.env, DIRQ_PROGRESS: "never" };
    const viaBin = await run(bin, ["SELECT name, city FROM people"], { cwd: app, env });
    assert.deepEqual(JSON.parse(viaBin.stdout), [{ name: "ada", city: "london" }]);
    const viaNpx = await run("npx", ["--offline", "dirq", "SELECT count(*) AS n FROM './*.csv'"], {
      cwd: app,
      env,
    });
    assert.deepEqual(JSON.parse(viaNpx.stdout), [{ n: 1 }]);
    const version = await run(bin, ["--version"], { cwd: app, env });
    assert.equal(
      version.stdout.trim(),
      JSON.parse(readFileSync(join(PACKAGE_DIR, "package.json"), "utf8")).version,
    );

    // Elsewhere (no node_modules near the working directory): the launcher's own plugins.
    const elsewhere = join(work, "elsewhere");
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, "more.csv"), "name,city\nalan,wilmslow\n");
    const fromOwn = await run(bin, ["SELECT name FROM people"], { cwd: elsewhere, env });
    assert.deepEqual(JSON.parse(fromOwn.stdout), [{ name: "alan" }]);
    const off = await run(bin, ["SELECT name FROM people", "--no-plugin"], {
      cwd: elsewhere,
      env,
    }).catch((error: { code: number; stderr: string }) => error);
    assert.equal((off as { code: number }).code, 1);
    assert.match((off as { stderr: string }).stderr, /^dirq: no such table: people/);

    // No shipped file points at a source map the package does not hold.
    const dangling = listFiles(join(app, "node_modules", "dirq", "dist")).filter(
      (file) =>
        /\.(c|m)?js$/.test(file) && readFileSync(file, "latin1").includes("//# sourceMappingURL="),
    );
    assert.deepEqual(dangling, []);

    // The SDK from the installed package, with its type declarations beside it.
    const sdk = `import { open } from "dirq";
const db = open({ progress: false, tables: [{ name: "t", glob: "*.csv", extract: (p, c) => [{ p, lines: String(c).split("\\n").length }] }] });
console.log(JSON.stringify(await db.query("SELECT * FROM t")));
await db.close();`;
    writeFileSync(join(app, "sdk.mjs"), sdk);
    const viaSdk = await run(process.execPath, ["sdk.mjs"], { cwd: app, env });
    assert.deepEqual(JSON.parse(viaSdk.stdout), [{ p: "people.csv", lines: 3 }]);
    // The same from CommonJS: `require("dirq")` gets the package's CommonJS entry.
    writeFileSync(
      join(app, "sdk.cjs"),
      `const { open } = require("dirq");
(async () => {
${sdk.replace('import { open } from "dirq";', "")}
})();`,
    );
    const viaRequire = await run(process.execPath, ["sdk.cjs"], { cwd: app, env });
    assert.deepEqual(JSON.parse(viaRequire.stdout), [{ p: "people.csv", lines: 3 }]);
    assert.equal(viaRequire.stderr, "");
    // The shipped declarations type a consumer, and keep internals out of reach.
    writeFileSync(
      join(app, "consumer.mts"),
      `import { open, isDirqError, type Row, type RowEvent } from "dirq";
const db = open({
  tables: [{ name: "t", glob: "*.csv", extract: (path: string, content: Buffer) => [{ path, n: content.length }] }],
});
const rows: Row[] = await db.query("SELECT 1");
for await (const event of db.watch()) {
  // A reader that fell behind gets a reset (query again) instead of the events it lost.
  if (event.action === "reset") continue;
  const known: RowEvent = event;
  if (known.action === "error") console.log(known.error.toUpperCase(), isDirqError(known));
  else console.log(known.row, rows);
  break;
}
// @ts-expect-error the engine is internal
import("dirq").then((dirq) => dirq.openIndex);
await db.close();
export {};
`,
    );
    // A CommonJS consumer gets the same declarations through the package's `require` entry.
    writeFileSync(
      join(app, "consumer.cts"),
      `import dirq = require("dirq");
const db = dirq.open({ root: "." });
void db.query("SELECT 1").then((rows: dirq.Row[]) => rows.length);
// @ts-expect-error the engine is internal
void dirq.openIndex;
export {};
`,
    );
    // No `types` of the consumer's own: the Node types dirq's declarations use come with it
    // (its dependency on @types/node), as for a consumer that has none installed.
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          noEmit: true,
          strict: true,
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2022",
          lib: ["es2022"],
          types: [],
        },
        files: ["consumer.mts", "consumer.cts"],
      }),
    );
    const tsc = join(REPO_NODE_MODULES, "typescript", "bin", "tsc");
    await run(process.execPath, [tsc, "-p", "."], { cwd: app });

    // The first run compiled the native extension into the package's folder (it can be
    // written here); a stat query gives the same rows through it as through Node's fs.
    assert.ok(existsSync(library), "the first run compiles native/dirq-fs.c");
    const statQuery = ["SELECT path, size FROM './' ORDER BY path"];
    const withFs = await run(bin, statQuery, { cwd: app, env: { ...env, DIRQ_NATIVE_FS: "0" } });
    const withNative = await run(bin, statQuery, { cwd: app, env });
    assert.equal(withNative.stdout, withFs.stdout);

    // That first run also recorded where SQLite's addon is, and the CLI loads it from there
    // without node-gyp-build's search: with the prebuilds folder hidden, a copy the record
    // names still loads; a record for another Node ABI, or of a file that is gone, is passed
    // over for the search.
    const dirqDir = join(app, "node_modules", "dirq");
    const recordPath = join(dirqDir, "native", "build", "sqlite-addon.json");
    const record = JSON.parse(readFileSync(recordPath, "utf8")) as Record<string, string>;
    assert.equal(record.abi, process.versions.modules);
    const addon = resolve(dirqDir, record.path ?? "");
    assert.ok(existsSync(addon), `the recorded addon ${addon} exists`);
    const copy = join(dirqDir, "native", "build", "sqlite-copy.node");
    copyFileSync(addon, copy);
    const writeRecord = (changes: Record<string, string>) =>
      writeFileSync(recordPath, JSON.stringify({ ...record, ...changes }));
    const prebuilds = join(app, "node_modules", "@rocicorp", "zero-sqlite3", "prebuilds");
    const count = ["SELECT count(*) AS n FROM './*.csv'"];
    renameSync(prebuilds, `${prebuilds}-hidden`);
    try {
      writeRecord({ path: "native/build/sqlite-copy.node" });
      const viaRecord = await run(bin, count, { cwd: app, env });
      assert.deepEqual(JSON.parse(viaRecord.stdout), [{ n: 1 }]);
      writeRecord({ path: "native/build/sqlite-copy.node", abi: "1" });
      const searched = await run(bin, count, { cwd: app, env }).catch(
        (error: { code: number; stderr: string }) => error,
      );
      assert.equal((searched as { code: number }).code, 1, "another ABI's record is not used");
      assert.match((searched as { stderr: string }).stderr, /No native build was found/);
    } finally {
      renameSync(`${prebuilds}-hidden`, prebuilds);
    }
    writeRecord({ path: "native/build/gone.node" });
    const fellBack = await run(bin, count, { cwd: app, env });
    assert.deepEqual(JSON.parse(fellBack.stdout), [{ n: 1 }]);
  });
});

describe("npm launcher: the V8 code cache", () => {
  let root: string;
  let cacheHome: string;
  before(() => {
    root = makeTree({ "a.txt": "a\n" });
    cacheHome = mkdtempSync(join(tmpdir(), "dirq-code-cache-"));
  });
  after(() => {
    removeTree(root);
    removeTree(cacheHome);
  });

  const cacheFiles = (folder: string) =>
    existsSync(folder) ? readdirSync(folder).filter((name) => name.endsWith(".v8cache")) : [];
  /**
   * The bundle's caches: `cli-...` for runs with no quote among their arguments, `cli+paths-...`
   * for the others (a path table is quoted); not its chunks' (`cli.<chunk>-...`).
   */
  const bundleCaches = (folder: string, name = "cli") =>
    cacheFiles(folder).filter((file) => file.startsWith(`${name}-`));

  test("the first run writes one for this Node build, later runs read it as it is", async () => {
    const env = { XDG_CACHE_HOME: cacheHome, DIRQ_NO_PLUGIN: "1" };
    const folder = join(cacheHome, "dirq");
    const first = await runDirq(["SELECT count(*) AS n FROM './'"], { cwd: root, env });
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(parseRows(first.stdout), [{ n: 1 }]);
    const written = cacheFiles(folder);
    assert.equal(written.length, 1, written.join(" "));
    assert.ok(written[0]?.startsWith(`cli+paths-${process.version}-${process.arch}-`), written[0]);
    const path = join(folder, written[0] ?? "");
    const before = statSync(path).mtimeMs;
    const second = await runDirq(["SELECT count(*) AS n FROM './'"], { cwd: root, env });
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(cacheFiles(folder), written);
    assert.equal(statSync(path).mtimeMs, before, "an accepted cache is not rewritten");

    // A damaged cache: V8 rejects it, the run compiles as usual and writes a good one.
    writeFileSync(path, "not a code cache");
    const damaged = await runDirq(["SELECT count(*) AS n FROM './'"], { cwd: root, env });
    assert.equal(damaged.code, 0, damaged.stderr);
    assert.deepEqual(parseRows(damaged.stdout), [{ n: 1 }]);
    assert.ok(statSync(path).size > 1000, "rewritten");
  });

  test("a run of a kind the cache lacks adds its code; the header names the kinds held", async () => {
    const home = mkdtempSync(join(tmpdir(), "dirq-code-cache-"));
    try {
      const folder = join(home, "dirq");
      const env = { XDG_CACHE_HOME: home, DIRQ_NO_PLUGIN: "1" };
      // The header line, padded so that V8's bytes start 8-byte aligned, and V8's size.
      const cache = (kind = "cli") => {
        const [name] = bundleCaches(folder, kind);
        const bytes = readFileSync(join(folder, name ?? ""));
        const end = bytes.indexOf(0x0a) + 1;
        assert.equal(end % 8, 0, `header of ${end} bytes`);
        const header = bytes.toString("latin1", 0, end);
        // The checksum of V8's bytes, then the kinds.
        assert.match(header, /^dirq-code-cache [0-9a-f]{8} [a-z,]* *\n$/);
        return { kinds: header.slice(25).trim(), size: bytes.length - end };
      };
      const dirq = async (args: string[]) => {
        const result = await runDirq(args, { cwd: root, env });
        assert.equal(result.code, 0, result.stderr);
        return result.stdout;
      };
      // `--version` first, as after an install: its cache holds next to none of a query's code.
      await dirq(["--version"]);
      const first = cache();
      assert.equal(first.kinds, "");
      assert.deepEqual(parseRows(await dirq(["SELECT 1 AS x"])), [{ x: 1 }]);
      const query = cache();
      assert.equal(query.kinds, "query");
      assert.ok(query.size > first.size + 50_000, `${first.size} -> ${query.size}`);
      // The same kind again: the cache is read as it is.
      const [name] = bundleCaches(folder);
      const written = statSync(join(folder, name ?? "")).mtimeMs;
      await dirq(["SELECT 2 AS x"]);
      assert.equal(statSync(join(folder, name ?? "")).mtimeMs, written, "not rewritten");
      // A statement that quotes a path table reads and writes the other cache, which holds the
      // walk's and the fill's code too; the first one's is left as it was.
      assert.deepEqual(parseRows(await dirq(["SELECT count(*) AS n FROM './'"])), [{ n: 1 }]);
      const tables = cache("cli+paths");
      assert.equal(tables.kinds, "query,tables");
      assert.ok(tables.size > query.size, `${query.size} -> ${tables.size}`);
      assert.deepEqual(cache(), query);
      // An answer printed as a table adds its kind and its code.
      assert.equal(await dirq(["SELECT 3 AS x", "--format", "table"]), "x\n-\n3\n(1 row)\n");
      assert.equal(cache().kinds, "query,table");
      assert.equal(bundleCaches(folder).length, 1, cacheFiles(folder).join(" "));
      assert.equal(bundleCaches(folder, "cli+paths").length, 1, cacheFiles(folder).join(" "));
    } finally {
      removeTree(home);
    }
  });

  test("Node's flags get a cache of their own, named by the binary's and the bundle's numbers", async () => {
    const home = mkdtempSync(join(tmpdir(), "dirq-code-cache-"));
    try {
      const folder = join(home, "dirq");
      const env = { XDG_CACHE_HOME: home, DIRQ_NO_PLUGIN: "1" };
      const plain = await runDirq(["SELECT 1 AS x"], { cwd: root, env });
      assert.equal(plain.code, 0, plain.stderr);
      const flagged = await runDirq(["SELECT 1 AS x"], {
        cwd: root,
        env: { ...env, NODE_OPTIONS: "--no-warnings" },
      });
      assert.deepEqual([flagged.code, parseRows(flagged.stdout)], [0, [{ x: 1 }]]);
      const names = cacheFiles(folder);
      assert.equal(names.length, 2, names.join(" "));
      const node = statSync(process.execPath);
      const numbers = `cli-${process.version}-${process.arch}-${node.size}-${node.mtimeMs}-`;
      assert.ok(
        names.every((name) => name.startsWith(numbers)),
        `${names.join(" ")} should start with ${numbers}`,
      );
      const rests = names.map((name) => name.slice(numbers.length));
      assert.equal(
        rests.filter((rest) => /^\d+-[\d.]+\.v8cache$/.test(rest)).length,
        1,
        rests.join(" "),
      );
      assert.equal(
        rests.filter((rest) => /^\d+-[\d.]+-[0-9a-f]{8}\.v8cache$/.test(rest)).length,
        1,
        rests.join(" "),
      );
    } finally {
      removeTree(home);
    }
  });

  test("a chunk has a code cache of its own, written when there is none or V8 refuses it", async () => {
    const home = mkdtempSync(join(tmpdir(), "dirq-code-cache-"));
    try {
      const folder = join(home, "dirq");
      const env = { XDG_CACHE_HOME: home, DIRQ_NO_PLUGIN: "1" };
      // An emoji is measured by string-width, which is a chunk (`width`).
      const table = async () => {
        const result = await runDirq(["SELECT '\u{1F600}' AS x", "--format", "table"], {
          cwd: root,
          env,
        });
        assert.deepEqual(
          [result.code, result.stderr, result.stdout],
          [0, "", "x\n--\n\u{1F600}\n(1 row)\n"],
        );
      };
      const chunkCache = () => {
        const names = cacheFiles(folder).filter((name) => name.startsWith("cli.width-"));
        assert.equal(names.length, 1, cacheFiles(folder).join(" "));
        return join(folder, names[0] ?? "");
      };
      // A one-shot JSON answer, and a table of plain text, load no chunk.
      for (const format of ["json", "table"]) {
        const plain = await runDirq(["SELECT 1 AS x", "--format", format], { cwd: root, env });
        assert.equal(plain.code, 0, plain.stderr);
      }
      assert.deepEqual(cacheFiles(folder), bundleCaches(folder));
      await table();
      const path = chunkCache();
      const written = statSync(path).mtimeMs;
      await table();
      assert.equal(statSync(path).mtimeMs, written, "an accepted cache is not rewritten");
      writeFileSync(path, "not a code cache");
      await table();
      assert.ok(statSync(chunkCache()).size > 1000, "rewritten");
    } finally {
      removeTree(home);
    }
  });

  test("a server's query processes run the bundle's, with a cache written after a statement and kept through kills", async () => {
    const home = mkdtempSync(join(tmpdir(), "dirq-code-cache-"));
    try {
      const folder = join(home, "dirq");
      const env = { XDG_CACHE_HOME: home, DIRQ_NO_PLUGIN: "1" };
      const queryCaches = () =>
        cacheFiles(folder).filter((name) => name.startsWith("cli.query-process-"));
      /** A server that answers a statement and is stopped (its query process is killed). */
      const session = async (check: (server: ServerProcess) => Promise<void>) => {
        const server = await startServer(["--port", "0"], { cwd: root, env });
        try {
          assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './'"), [{ n: 1 }]);
          await check(server);
        } finally {
          await server.kill();
        }
      };
      await session(async (server) => {
        const commands = processTree(server.pid).map((pid) =>
          readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0"),
        );
        const queryProcess = commands.find((args) => args.includes("--dirq-query-process"));
        assert.equal(queryProcess?.[1], DIRQ_BIN, JSON.stringify(commands));
        // Written on a turn of the event loop after the answer.
        while (queryCaches().length === 0) await new Promise((done) => setTimeout(done, 20));
      });
      const [name] = queryCaches();
      const path = join(folder, name ?? "");
      const written = statSync(path).mtimeMs;
      assert.equal(existsSync(`${path}.run`), false, "a killed query process left no marker");
      await session(async () => {
        assert.ok(existsSync(`${path}.ok`), "the next query process took the cache");
      });
      assert.equal(statSync(path).mtimeMs, written, "an accepted cache is not rewritten");
      assert.deepEqual(queryCaches(), [name]);
      // A cache V8 refuses: the statement is answered, and a good cache is written again.
      writeFileSync(path, "not a code cache");
      await session(async () => {
        while (statSync(path).size < 1000) await new Promise((done) => setTimeout(done, 20));
      });
    } finally {
      removeTree(home);
    }
  });

  test("the launcher and the bundle's files are ASCII (V8 would hold one as UTF-16)", () => {
    const bundle = join(PACKAGE_DIR, "dist", "src", "cli-bundle");
    const files = readdirSync(bundle).map((name) => join("dist", "src", "cli-bundle", name));
    assert.ok(files.length > 1, files.join(" "));
    for (const file of ["bin/dirq.cjs", ...files]) {
      const bytes = readFileSync(join(PACKAGE_DIR, file));
      const wide = bytes.findIndex((byte) => byte > 0x7f);
      assert.equal(wide, -1, `${file} has a non-ASCII byte at offset ${wide}`);
    }
  });

  test("only the newest caches of each file are kept", async () => {
    const home = mkdtempSync(join(tmpdir(), "dirq-code-cache-"));
    try {
      const folder = join(home, "dirq");
      mkdirSync(folder);
      const old = new Date(Date.now() - 86_400_000);
      // The run (a quote among its arguments, an emoji to measure) writes `cli+paths` and
      // `cli.width` caches; each group of ten is cut to eight, the new one among them.
      for (const file of ["cli+paths", "cli.width"]) {
        for (let i = 0; i < 10; i++) {
          const stale = join(folder, `${file}-v0.0.${i}-x64-00000000.v8cache`);
          writeFileSync(stale, "old");
          utimesSync(stale, old, old);
        }
      }
      const result = await runDirq(["SELECT '\u{1F600}'", "--format", "table"], {
        cwd: root,
        env: { XDG_CACHE_HOME: home, DIRQ_NO_PLUGIN: "1" },
      });
      assert.equal(result.code, 0, result.stderr);
      for (const file of ["cli+paths", "cli.width"]) {
        const kept = cacheFiles(folder).filter((name) => name.startsWith(`${file}-`));
        assert.equal(kept.length, 8, kept.join(" "));
        assert.ok(
          kept.some((name) => name.startsWith(`${file}-${process.version}-`)),
          kept.join(" "),
        );
      }
    } finally {
      removeTree(home);
    }
  });

  test("off with DIRQ_CODE_CACHE=0; a cache folder that cannot be made is no error", async () => {
    const home = mkdtempSync(join(tmpdir(), "dirq-code-cache-"));
    try {
      const off = await runDirq(["SELECT 1 AS x"], {
        cwd: root,
        env: { XDG_CACHE_HOME: home, DIRQ_CODE_CACHE: "0", DIRQ_NO_PLUGIN: "1" },
      });
      assert.deepEqual([off.code, off.stderr, parseRows(off.stdout)], [0, "", [{ x: 1 }]]);
      assert.deepEqual(readdirSync(home), []);
      // A file where the folder would go: the cache cannot be written, the query still answers.
      const blocked = join(home, "not-a-folder");
      writeFileSync(blocked, "");
      const result = await runDirq(["SELECT 1 AS x"], {
        cwd: root,
        env: { XDG_CACHE_HOME: blocked, DIRQ_NO_PLUGIN: "1" },
      });
      assert.deepEqual([result.code, result.stderr, parseRows(result.stdout)], [0, "", [{ x: 1 }]]);
    } finally {
      removeTree(home);
    }
  });
});

describe("npm launcher: a damaged code cache never stops a run", () => {
  const root = makeTree({ "a.txt": "a" });
  after(() => removeTree(root));

  async function answers(home: string): Promise<void> {
    const result = await runDirq(["SELECT 41 + 1 AS x"], {
      cwd: root,
      env: { XDG_CACHE_HOME: home, DIRQ_NO_PLUGIN: "1" },
    });
    assert.deepEqual([result.code, result.stderr, parseRows(result.stdout)], [0, "", [{ x: 42 }]]);
  }

  function caches(home: string): string[] {
    return readdirSync(join(home, "dirq"))
      .filter((name) => name.endsWith(".v8cache"))
      .map((name) => join(home, "dirq", name));
  }

  test("bytes changed inside a cache of the right length: the runs answer and a good cache is written again", async () => {
    const home = mkdtempSync(join(tmpdir(), "dirq-damaged-"));
    try {
      await answers(home);
      await answers(home);
      const [cache] = caches(home);
      assert.ok(cache !== undefined && existsSync(`${cache}.ok`), "a cache that ran is recorded");
      const bytes = readFileSync(cache);
      // Flipped where V8's own bytes are, as a disk or copy error would, at eight places.
      for (let i = 0; i < 8; i++) {
        const at = 256 + Math.floor(((bytes.length - 512) * i) / 8);
        bytes[at] = (bytes[at] as number) ^ 0x5a;
      }
      writeFileSync(cache, bytes);
      for (let run = 0; run < 3; run++) await answers(home);
      assert.notDeepEqual(readFileSync(cache), bytes);
    } finally {
      removeTree(home);
    }
  });

  test("a run that died with its cache: the next run does not use it and writes a new one", async () => {
    const home = mkdtempSync(join(tmpdir(), "dirq-died-"));
    try {
      await answers(home);
      await answers(home);
      const [cache] = caches(home);
      assert.ok(cache !== undefined && existsSync(`${cache}.ok`), "a verified cache");
      // A run that never ends by itself, killed as a crash would end it: no exit handler runs.
      const endless =
        "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT max(n) FROM c";
      const child = spawn(process.execPath, [DIRQ_BIN, endless], {
        cwd: root,
        env: { ...process.env, XDG_CACHE_HOME: home, DIRQ_NO_PLUGIN: "1" },
        stdio: "ignore",
      });
      const exited = new Promise((resolve) => child.once("exit", resolve));
      while (!existsSync(`${cache}.run`)) await new Promise((resolve) => setTimeout(resolve, 10));
      child.kill("SIGKILL");
      await exited;
      assert.ok(existsSync(`${cache}.run`), "the marker of the run that died is left");
      await answers(home);
      // Removed with its record, compiled without it, written anew (not yet verified).
      assert.equal(existsSync(`${cache}.ok`), false, "the cache it died with is not used");
      assert.ok(existsSync(cache), "a new cache is written");
      assert.equal(existsSync(`${cache}.run`), false, "no marker once the runs are over");
      await answers(home);
      assert.ok(existsSync(`${cache}.ok`), "the new cache is verified and used");
    } finally {
      removeTree(home);
    }
  });

  test(
    "a cache folder under /proc: the run answers at once, with no cache",
    { timeout: 60_000 },
    async () => {
      for (const env of [{ XDG_CACHE_HOME: "/proc" }, { XDG_CACHE_HOME: "", HOME: "/proc" }]) {
        const result = await runDirq(["SELECT 1 AS x"], {
          cwd: root,
          env: { ...env, DIRQ_NO_PLUGIN: "1" },
        });
        assert.deepEqual([result.code, parseRows(result.stdout)], [0, [{ x: 1 }]]);
      }
    },
  );
});

describe("npm launcher: the Node modules a start loads", () => {
  // Writes the built-in modules loaded after it (Node's own start-up excluded) as the process
  // exits: a module a statement never uses is paid for at every start.
  const PROBE = `const before = new Set(process.moduleLoadList);
process.on("exit", () => {
  const loaded = process.moduleLoadList.filter((name) => !before.has(name));
  require("node:fs").writeFileSync(process.env.DIRQ_TEST_LOADED, JSON.stringify(loaded));
});
`;

  test("one-shot queries load no built-in they do not use (perf_hooks for a fill's clock, crypto for --persist)", async () => {
    const root = makeTree({ "a.txt": "a\n", "b/c.md": "cc\n" });
    const home = mkdtempSync(join(tmpdir(), "dirq-loaded-"));
    try {
      const probe = join(home, "probe.cjs");
      writeFileSync(probe, PROBE);
      const runs = [
        ["SELECT 1"],
        ["SELECT count(*) AS n FROM './'"],
        ["SELECT path FROM './**/*.md'"],
        ["SELECT path, size FROM './' ORDER BY size DESC LIMIT 10"],
        // Written, then read and refreshed: a persisted index compares table definitions.
        ["SELECT path FROM './**/*.md'", "--persist"],
        ["SELECT path FROM './**/*.md'", "--persist"],
      ];
      for (const args of runs) {
        const loadedPath = join(home, "loaded.json");
        const result = await runDirq(args, {
          cwd: root,
          env: {
            NODE_OPTIONS: `--require ${JSON.stringify(probe)}`,
            DIRQ_TEST_LOADED: loadedPath,
            DIRQ_NO_PLUGIN: "1",
            XDG_CACHE_HOME: home,
          },
        });
        assert.equal(result.code, 0, result.stderr);
        const loaded = JSON.parse(readFileSync(loadedPath, "utf8")) as string[];
        for (const unused of ["perf_hooks", "child_process", "crypto", "worker_threads", "url"]) {
          assert.ok(
            !loaded.includes(`NativeModule ${unused}`),
            `${args.join(" ")} loaded ${unused}: ${loaded}`,
          );
        }
      }
    } finally {
      removeTree(root);
      removeTree(home);
    }
  });
});
