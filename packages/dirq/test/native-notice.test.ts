import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { makeTree, removeTree } from "./helpers.js";

const exec = promisify(execFile);
const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));

/**
 * An install on a machine without a C compiler (`CC=false`): npm hides the install script's
 * warning, so the first run says it, once, on stderr, with how to build the extension.
 */
describe("no C compiler at install", { timeout: 600_000 }, () => {
  const work = makeTree({ "tree/a.txt": "a" });
  after(() => removeTree(work));

  test("the first run says the native extension is missing and how to build it, once", async () => {
    const packed = join(work, "packed");
    mkdirSync(packed);
    const { stdout: name } = await exec("npm", ["pack", "--silent", "--pack-destination", packed], {
      cwd: PACKAGE_DIR,
      maxBuffer: 1 << 24,
    });
    const prefix = join(work, "prefix");
    const env = {
      ...process.env,
      CC: "false",
      // Offline: dependencies come from npm's cache (filled by the repository's npm ci).
      npm_config_offline: "true",
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
    assert.doesNotMatch(install.stderr, /native file system extension/, "npm hides it");
    const installed = join(prefix, "lib", "node_modules", "dirq");
    assert.ok(existsSync(join(installed, "native", "build", "not-built.txt")));
    // npm links the man page where `man dirq` finds it.
    assert.ok(existsSync(join(prefix, "share", "man", "man1", "dirq.1")));

    const cache = join(work, "cache");
    const dirq = (args: string[]) =>
      exec(join(prefix, "bin", "dirq"), args, {
        cwd: join(work, "tree"),
        env: { ...env, DIRQ_CACHE_DIR: cache, DIRQ_PROGRESS: "never" },
      });
    const first = await dirq(["SELECT count(*) AS n FROM './'"]);
    assert.equal(first.stdout, '[{"n":1}]\n');
    assert.match(
      first.stderr,
      /^dirq: note: dirq's native file system extension was not built at install \(compiling .*dirq-fs\.c with false failed.*\)\. dirq works without it; .*install a C compiler .* npm rebuild dirq .*shown once\n$/,
    );
    const second = await dirq(["SELECT count(*) AS n FROM './'"]);
    assert.equal(second.stdout, '[{"n":1}]\n');
    assert.equal(second.stderr, "", "said once");
    const help = await dirq(["--help"]);
    assert.equal(help.stderr, "");
  });
});
