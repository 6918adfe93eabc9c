import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { makeTree, removeTree } from "./helpers.js";

const exec = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));
const LIBRARY = process.platform === "darwin" ? "dirq_fs.dylib" : "dirq_fs.so";

/**
 * dirq has no install script: its first run builds the native extension. On a machine without
 * a C compiler (`CC=false`) that run says so, once, with how to build it later.
 */
describe(
  "the native extension is built by the first run, not at install",
  { timeout: 600_000 },
  () => {
    const work = makeTree({ "tree/a.txt": "a" });
    after(() => removeTree(work));

    test("no C compiler: the first run says the extension is missing and how to build it, once", async () => {
      const packed = join(work, "packed");
      mkdirSync(packed);
      const { stdout: name } = await exec(
        "npm",
        ["pack", "--silent", "--pack-destination", packed],
        {
          cwd: PACKAGE_DIR,
          maxBuffer: 1 << 24,
        },
      );
      const prefix = join(work, "prefix");
      const env = {
        ...process.env,
        CC: "false",
        // Dependencies from npm's cache where it has them; npm ci caches tarballs but not the
        // registry's metadata, which a fresh machine's install still asks the registry for.
        npm_config_prefer_offline: "true",
        PATH: [dirname(process.execPath), process.env.PATH ?? ""].join(":"),
      };
      const install = await exec(
        "npm",
        [
          "install",
          "-g",
          "--prefix",
          prefix,
          "--no-audit",
          "--no-fund",
          join(packed, name.trim().split("\n").pop() ?? ""),
        ],
        { env, maxBuffer: 1 << 24 },
      );
      // npm 11 lists the install scripts it has no approval for: dirq has none.
      assert.doesNotMatch(install.stderr, /\bdirq@/, install.stderr);
      const installed = join(prefix, "lib", "node_modules", "dirq");
      assert.ok(!existsSync(join(installed, "native", "build")), "nothing ran at install");
      // npm links the man page where `man dirq` finds it.
      assert.ok(existsSync(join(prefix, "share", "man", "man1", "dirq.1")));

      const cache = join(work, "cache");
      const dirq = (args: string[], extraEnv: Record<string, string> = {}) =>
        exec(join(prefix, "bin", "dirq"), args, {
          cwd: join(work, "tree"),
          env: { ...env, DIRQ_CACHE_DIR: cache, DIRQ_PROGRESS: "never", ...extraEnv },
        });
      const help = await dirq(["--help"]);
      assert.equal(help.stderr, "", "--help builds nothing and says nothing");
      const first = await dirq(["SELECT count(*) AS n FROM './'"]);
      assert.equal(first.stdout, '[{"n":1}]\n');
      assert.match(
        first.stderr,
        /^dirq: note: dirq's native file system extension could not be built \(compiling .*dirq-fs\.c and \S*dirq-csv\.c and \S*dirq-jsonl\.c with false failed.*\)\. dirq works without it; .*install a C compiler .* and run node \S+build-native\.mjs\. This note is shown once\n$/,
      );
      const second = await dirq(["SELECT count(*) AS n FROM './'"]);
      assert.equal(second.stdout, '[{"n":1}]\n');
      assert.equal(second.stderr, "", "said once");

      // As the note says: with a compiler, the script builds it, and later runs use it.
      execFileSync(process.execPath, [join(installed, "scripts", "build-native.mjs")], {
        env: { ...env, CC: "cc" },
      });
      assert.ok(existsSync(join(installed, "native", "build", LIBRARY)));
      assert.ok(!existsSync(join(installed, "native", "build", "not-built.txt")));
      const built = await dirq(["SELECT count(*) AS n FROM './'"]);
      assert.deepEqual([built.stdout, built.stderr], ['[{"n":1}]\n', ""]);
    });

    test("a package folder that cannot be written: the first run builds it in the cache folder", async (t) => {
      const prefix = join(work, "prefix");
      const installed = join(prefix, "lib", "node_modules", "dirq");
      if (!existsSync(installed)) {
        t.skip("needs the install of the test before");
        return;
      }
      rmSync(join(installed, "native", "build"), { recursive: true, force: true });
      const native = join(installed, "native");
      // A read-only bind mount of the package's native/ (root only): as a global install owned
      // by root looks to its users.
      try {
        execFileSync("mount", ["--bind", native, native], { stdio: "ignore" });
      } catch {
        t.skip("bind mounts are not allowed here");
        return;
      }
      try {
        execFileSync("mount", ["-o", "remount,ro,bind", native], { stdio: "ignore" });
        const cache = join(work, "cache-read-only");
        const result = await exec(join(prefix, "bin", "dirq"), ["SELECT count(*) AS n FROM './'"], {
          cwd: join(work, "tree"),
          env: { ...process.env, DIRQ_CACHE_DIR: cache, DIRQ_PROGRESS: "never" },
        });
        assert.deepEqual([result.stdout, result.stderr], ['[{"n":1}]\n', ""]);
        const folders = readdirSync(cache).filter((entry) => entry.startsWith("native-"));
        assert.equal(folders.length, 1, readdirSync(cache).join(" "));
        assert.ok(existsSync(join(cache, folders[0] ?? "", LIBRARY)), "built in the cache folder");
        assert.ok(!existsSync(join(native, "build")), "nothing written in the package");
      } finally {
        execFileSync("umount", [native]);
      }
    });

    test("a failure another install recorded in the cache folder: a writable package still builds its own", async (t) => {
      const prefix = join(work, "prefix");
      const installed = join(prefix, "lib", "node_modules", "dirq");
      if (!existsSync(installed)) {
        t.skip("needs the install of the first test");
        return;
      }
      rmSync(join(installed, "native", "build"), { recursive: true, force: true });
      const { version } = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as {
        version: string;
      };
      const cache = join(work, "cache-failed-elsewhere");
      const record = join(cache, `native-${version}-${process.platform}-${process.arch}`);
      mkdirSync(record, { recursive: true });
      writeFileSync(join(record, "not-built.txt"), "scripts/build-native.mjs ended (exit 1)\n");
      const result = await exec(join(prefix, "bin", "dirq"), ["SELECT count(*) AS n FROM './'"], {
        cwd: join(work, "tree"),
        env: { ...process.env, DIRQ_CACHE_DIR: cache, DIRQ_PROGRESS: "never" },
      });
      assert.deepEqual([result.stdout, result.stderr], ['[{"n":1}]\n', ""]);
      assert.ok(existsSync(join(installed, "native", "build", LIBRARY)), "built in the package");
    });
  },
);
