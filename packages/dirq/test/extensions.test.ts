import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { assertUserError, makeTree, parseRows, removeTree, runDirq, runOk } from "./helpers.js";
import { postQuery, queryRows, type ServerProcess, startServer } from "./server-support.js";

/**
 * A tiny SQLite extension built from C here (gcc and libsqlite3-dev's sqlite3ext.h): its
 * default entry point (derived by SQLite from the file name `tiny.so`) declares tiny_hello(),
 * a second entry point declares tiny_alt().
 */
const TINY_C = `
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

static void hello(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc; (void)argv;
  sqlite3_result_text(context, "hello from C", -1, SQLITE_STATIC);
}

static void alt(sqlite3_context *context, int argc, sqlite3_value **argv) {
  (void)argc;
  sqlite3_result_int64(context, 2 * sqlite3_value_int64(argv[0]));
}

int sqlite3_tiny_init(sqlite3 *db, char **error, const sqlite3_api_routines *api) {
  (void)error;
  SQLITE_EXTENSION_INIT2(api);
  return sqlite3_create_function(db, "tiny_hello", 0, SQLITE_UTF8, 0, hello, 0, 0);
}

int sqlite3_tinyalt_init(sqlite3 *db, char **error, const sqlite3_api_routines *api) {
  (void)error;
  SQLITE_EXTENSION_INIT2(api);
  return sqlite3_create_function(db, "tiny_alt", 1, SQLITE_UTF8, 0, alt, 0, 0);
}
`;

/** sqlite-vec's prebuilt Linux library, shipped inside its npm platform package. */
const VEC0 = createRequire(import.meta.url).resolve("sqlite-vec-linux-x64/vec0.so");

let root: string;

before(() => {
  root = makeTree({
    "ext/tiny.c": TINY_C,
    "notes/a.md": "abc",
    "notes/b.md": "abcdef",
    "broken.so": "not a shared library\n",
    "cfg/tiny.toml": `[[dirq.extension]]\npath = "lib/tiny.so"\n`,
    "cfg/tiny-alt.toml": `[[dirq.extension]]\npath = "lib/tiny.so"\nentrypoint = "sqlite3_tinyalt_init"\n`,
    "cfg/missing.toml": `[[dirq.extension]]\npath = "lib/missing.so"\n`,
  });
  execFileSync("gcc", ["-shared", "-fPIC", "-O2", "-o", "ext/tiny.so", "ext/tiny.c"], {
    cwd: root,
  });
  mkdirSync(join(root, "cfg/lib"));
  copyFileSync(join(root, "ext/tiny.so"), join(root, "cfg/lib/tiny.so"));
});

after(() => removeTree(root));

async function rows(args: readonly string[]): Promise<Record<string, unknown>[]> {
  return parseRows(await runOk(root, [...args, "--format", "json"]));
}

describe("--extension", () => {
  it("loads an extension by path, relative to the working directory", async () => {
    assert.deepEqual(await rows(["SELECT tiny_hello() AS h", "--extension", "ext/tiny.so"]), [
      { h: "hello from C" },
    ]);
  });

  it("loads by absolute path on dirq query too", async () => {
    const args = ["query", "SELECT tiny_hello() AS h", "--extension", join(root, "ext/tiny.so")];
    assert.deepEqual(await rows(args), [{ h: "hello from C" }]);
  });

  it("<path>::<entrypoint> calls that entry point", async () => {
    const sql = "SELECT tiny_alt(size) AS d FROM './notes' ORDER BY path";
    assert.deepEqual(await rows([sql, "--extension", "ext/tiny.so::sqlite3_tinyalt_init"]), [
      { d: 6 },
      { d: 12 },
    ]);
    // Only that entry point ran.
    const result = await runDirq(
      ["SELECT tiny_hello()", "--extension", "ext/tiny.so::sqlite3_tinyalt_init"],
      { cwd: root },
    );
    assertUserError(result, "no such function: tiny_hello");
  });

  it("is repeatable: a C extension and sqlite-vec from npm, queried for real", async () => {
    const sql =
      "SELECT path, tiny_hello() AS h, vec_length('[1, 2, 3]') AS n, " +
      "vec_distance_l2(vec_f32(json_array(size, 0)), vec_f32('[0, 0]')) AS distance " +
      "FROM './notes' ORDER BY distance";
    assert.deepEqual(await rows([sql, "--extension", "ext/tiny.so", "--extension", VEC0]), [
      { path: "notes/a.md", h: "hello from C", n: 3, distance: 3 },
      { path: "notes/b.md", h: "hello from C", n: 3, distance: 6 },
    ]);
  });

  it("sqlite-vec's table-valued vec_each and cosine distance answer", async () => {
    const sql =
      "SELECT value, vec_distance_cosine(vec_f32('[1, 0]'), vec_f32('[0, 1]')) AS distance " +
      "FROM vec_each(vec_f32('[1, 2]'))";
    assert.deepEqual(await rows([sql, "--extension", VEC0]), [
      { value: 1, distance: 1 },
      { value: 2, distance: 1 },
    ]);
  });

  it("a missing extension is an error naming it", async () => {
    const result = await runDirq(["SELECT 1", "--extension", "ext/nope.so"], { cwd: root });
    const message = assertUserError(result, join(root, "ext/nope.so"));
    assert.match(message, /--extension ext\/nope\.so/);
    assert.match(message, /not found/);
  });

  it("a file that is not a library is an error naming it", async () => {
    const result = await runDirq(["SELECT 1", "--extension", "broken.so"], { cwd: root });
    assertUserError(result, /broken\.so.*could not be loaded/);
  });

  it("an entry point that does not exist is an error naming the extension", async () => {
    const result = await runDirq(["SELECT 1", "--extension", "ext/tiny.so::nope_init"], {
      cwd: root,
    });
    assertUserError(result, /tiny\.so.*could not be loaded.*nope_init/);
  });

  it("an empty entry point is a usage error", async () => {
    const result = await runDirq(["SELECT 1", "--extension", "ext/tiny.so::"], { cwd: root });
    assertUserError(result, "<path>::<entrypoint>");
  });
});

describe("[[dirq.extension]]", () => {
  it("resolves a relative path against the config file's folder", async () => {
    assert.deepEqual(await rows(["SELECT tiny_hello() AS h", "-c", "cfg/tiny.toml"]), [
      { h: "hello from C" },
    ]);
  });

  it("takes an entrypoint key", async () => {
    assert.deepEqual(await rows(["SELECT tiny_alt(21) AS d", "-c", "cfg/tiny-alt.toml"]), [
      { d: 42 },
    ]);
  });

  it("is not loaded when --extension is given (the override rule)", async () => {
    const sql = "SELECT vec_length('[1]') AS n";
    assert.deepEqual(await rows([sql, "-c", "cfg/tiny.toml", "--extension", VEC0]), [{ n: 1 }]);
    const result = await runDirq(
      ["SELECT tiny_hello()", "-c", "cfg/tiny.toml", "--extension", VEC0],
      { cwd: root },
    );
    assertUserError(result, "no such function: tiny_hello");
    // A config entry that could not load is not even looked at.
    assert.deepEqual(await rows([sql, "-c", "cfg/missing.toml", "--extension", VEC0]), [{ n: 1 }]);
  });

  it("a missing config extension names the config file, the key and the path", async () => {
    const result = await runDirq(["SELECT 1", "-c", "cfg/missing.toml"], { cwd: root });
    assertUserError(result, /cfg\/missing\.toml: dirq\.extension\[0\].*not found/);
    assertUserError(result, join(root, "cfg/lib/missing.so"));
  });
});

describe("a worker function named like an extension's function", () => {
  before(() => {
    const clash = (name: string) =>
      `[[dirq.extension]]\npath = "lib/tiny.so"\n\n[[dirq.function]]\nname = "${name}"\ncommand = "node worker.mjs"\n`;
    writeFileSync(join(root, "cfg/clash.toml"), clash("tiny_hello"));
    writeFileSync(join(root, "cfg/clash-case.toml"), clash("TINY_HELLO"));
    writeFileSync(
      join(root, "cfg/function-only.toml"),
      `[[dirq.function]]\nname = "vec_length"\ncommand = "node worker.mjs"\n`,
    );
  });

  it("is refused at load, naming the key, the function and the extension", async () => {
    for (const config of ["cfg/clash.toml", "cfg/clash-case.toml"]) {
      const result = await runDirq(["SELECT 1", "-c", config], { cwd: root });
      const message = assertUserError(result, `${config}: dirq.function[0].name`);
      assert.match(message, /is a function of the SQLite extension .*cfg\/lib\/tiny\.so/i);
      assert.match(message, /tiny_hello/i);
    }
  });

  it("is refused when the extension comes from --extension (sqlite-vec from npm)", async () => {
    const result = await runDirq(
      ["SELECT 1", "-c", "cfg/function-only.toml", "--extension", VEC0],
      { cwd: root },
    );
    const message = assertUserError(result, "cfg/function-only.toml: dirq.function[0].name");
    assert.match(message, /"vec_length" is a function of the SQLite extension .*vec0\.so/);
    // Without the extension the name is free.
    assert.deepEqual(await rows(["SELECT 1 AS one", "-c", "cfg/function-only.toml"]), [{ one: 1 }]);
  });
});

describe("load_extension() in SQL", () => {
  const statements = [
    "SELECT load_extension('ext/tiny.so')",
    "SELECT LOAD_EXTENSION('ext/tiny.so', 'sqlite3_tiny_init')",
    "SELECT path FROM './notes' WHERE load_extension(path) IS NULL",
    "SELECT (SELECT load_extension('ext/tiny.so'))",
  ];
  for (const sql of statements) {
    it(`is refused: ${sql}`, async () => {
      const result = await runDirq([sql, "--extension", "ext/tiny.so"], { cwd: root });
      assertUserError(result, "load_extension() cannot be called from SQL");
    });
  }
});

describe("extensions in the server", () => {
  let server: ServerProcess;
  before(async () => {
    server = await startServer(
      ["--port", "0", "-c", "cfg/tiny.toml", "--extension", "ext/tiny.so", "--extension", VEC0],
      { cwd: root },
    );
  });
  after(() => server.kill());

  it("query processes load the same extensions", async () => {
    const sql = "SELECT tiny_hello() AS h, vec_length('[1, 2]') AS n FROM './notes' LIMIT 1";
    assert.deepEqual(await queryRows(server, sql), [{ h: "hello from C", n: 2 }]);
  });

  it("a missing --extension leaves the server degraded, naming it", async () => {
    const degraded = await startServer(["--port", "0", "--extension", "ext/nope.so"], {
      cwd: root,
    });
    try {
      const answer = await postQuery(degraded, "SELECT 1");
      assert.equal(answer.status, 503);
      assert.match(answer.text, /failed to load an extension: SQLite extension .*ext\/nope\.so/);
    } finally {
      await degraded.kill();
    }
  });

  it("refuses load_extension()", async () => {
    const answer = await fetch(`${server.url}/query`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ sql: "SELECT load_extension('ext/tiny.so')" }),
    });
    assert.equal(answer.status, 400);
    assert.match(await answer.text(), /load_extension\(\) cannot be called from SQL/);
  });
});
