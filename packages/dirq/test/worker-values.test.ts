import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { harnessSeed, seededRandom } from "./differential.js";
import {
  assertUserError,
  makeTree,
  parseRows,
  removeTree,
  runDirq,
  runOk,
  shellHook,
} from "./helpers.js";

/**
 * A worker that answers with the JSON text it is given, as written: `raw('9007199254740993')`
 * replies `{"id": n, "result": 9007199254740993}`, digits and all, so that nothing on the
 * worker's side rounds it. `blob(n)` replies with a string of n bytes of JSON text.
 */
const WORKER = `
import { createInterface } from "node:readline";
const lines = createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { id, args } = JSON.parse(line);
  process.stdout.write('{"id":' + id + ',"result":' + args[0] + "}\\n");
});
lines.on("close", () => process.exit(0));
`;

const CONFIG = `
[[dirq.function]]
name = "raw"
command = "node worker.mjs"
deterministic = true

[[table]]
name = "cases"
glob = "cases/*.json"
on-file = "sh hook.sh {path}"
`;

const SEED = harnessSeed(35_3);

/** A random integer of `bits` bits or fewer, either sign. */
function randomInteger(random: () => number, bits: number): bigint {
  let value = 0n;
  for (let i = 0; i < bits; i += 16) value = (value << 16n) | BigInt(Math.floor(random() * 65536));
  value &= (1n << BigInt(bits)) - 1n;
  return random() < 0.5 ? -value : value;
}

/**
 * JSON texts whose numbers a reader may get wrong: integers either side of ±2^53 and of
 * SQLite's 64-bit range, random ones of every width, the same inside objects and arrays, and
 * plain reals, strings of digits and small integers for contrast.
 */
function cases(random: () => number): string[] {
  const edges = [2n ** 53n, 2n ** 63n];
  const texts = new Set<string>([
    "9007199254740993",
    "-9007199254740993",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "123456789012345678901234567890",
    "1.5",
    "-0.25",
    "1e300",
    "42",
    "0",
    '"9007199254740993"',
    "null",
    "true",
    '{"n":9007199254740993,"list":[-9007199254740995,1.5]}',
    "[12345678901234567,2,3]",
  ]);
  for (const edge of edges) {
    for (const delta of [-2n, -1n, 0n, 1n, 2n]) {
      texts.add(String(edge + delta));
      texts.add(String(-edge + delta));
    }
  }
  for (let i = 0; i < 40; i++) {
    const bits = 50 + Math.floor(random() * 16);
    texts.add(String(randomInteger(random, bits)));
  }
  for (let i = 0; i < 6; i++) {
    texts.add(`{"id":${randomInteger(random, 62)},"x":[${randomInteger(random, 60)}]}`);
  }
  return [...texts];
}

let root: string;
let caseTexts: string[];

before(() => {
  caseTexts = cases(seededRandom(SEED));
  const tree: Record<string, string> = {
    "worker.mjs": WORKER,
    // One row: `raw` the file's JSON text, `v` that text as the hook prints it.
    "hook.sh": shellHook("raw-and-value.sh"),
    "dirq.toml": CONFIG,
  };
  caseTexts.forEach((text, i) => {
    tree[`cases/${String(i).padStart(3, "0")}.json`] = text;
  });
  root = makeTree(tree);
});

after(() => removeTree(root));

describe(`a worker's numbers are read as a hook's are (seed ${SEED})`, () => {
  it("every value, and its SQLite type, equals the on-file hook's for the same JSON", async () => {
    // quote() shows each value as SQLite holds it: exact digits of an INTEGER, a REAL's form.
    const sql =
      "SELECT raw, quote(v) AS hook, typeof(v) AS hook_type, " +
      "quote(raw(raw)) AS worker, typeof(raw(raw)) AS worker_type FROM cases ORDER BY raw";
    const rows = parseRows(await runOk(root, [sql, "-c", "dirq.toml", "--format", "json"]));
    assert.equal(rows.length, caseTexts.length);
    const differences = rows
      .filter((row) => row.hook !== row.worker || row.hook_type !== row.worker_type)
      .map(
        (row) =>
          `${row.raw}: hook ${row.hook} (${row.hook_type}), worker ${row.worker} (${row.worker_type})`,
      );
    assert.deepEqual(differences, [], `seed ${SEED}`);
  });

  it("9007199254740993 from a worker is that exact INTEGER", async () => {
    const sql =
      "SELECT raw('9007199254740993') AS v, typeof(raw('9007199254740993')) AS t, " +
      "raw('-9007199254740993') - 1 AS below, raw('{\"n\": 9007199254740993}') AS nested";
    const stdout = await runOk(root, [sql, "-c", "dirq.toml", "--format", "json"]);
    // The CLI's JSON prints exact digits; parsed with JSON.parse they would round.
    assert.equal(
      stdout.trim(),
      '[{"v":9007199254740993,"t":"integer","below":-9007199254740994,"nested":"{\\"n\\":9007199254740993}"}]',
    );
  });
});

describe("a large worker reply", () => {
  it("a reply of 8 MiB arriving in many reads comes back whole, its long integers exact", async () => {
    // The worker echoes its argument as the result: a JSON array of 8 MiB of digits-free
    // text, then an integer beyond 2^53 and a nested one.
    const sql =
      "SELECT length(r) AS n, substr(r, -44) AS tail FROM " +
      "(SELECT raw('[\"' || hex(zeroblob(4194304)) || '\",9007199254740993,{\"k\":-9007199254740995}]') AS r)";
    const stdout = await runOk(root, [sql, "-c", "dirq.toml", "--format", "json"]);
    const [row] = parseRows(stdout);
    assert.equal(row?.n, 8 * 1024 * 1024 + 45);
    assert.equal(row?.tail, '0",9007199254740993,{"k":-9007199254740995}]');
  });
});

/** SQLite's own functions, as the bundled SQLite lists them (`pragma_function_list`). */
async function builtInNames(): Promise<string[]> {
  const sql = "SELECT DISTINCT name FROM pragma_function_list ORDER BY name";
  const rows = parseRows(await runOk(root, [sql, "--format", "json"]));
  return rows.map((row) => row.name as string).filter((name) => /^[A-Za-z_]\w*$/.test(name));
}

function functionConfig(name: string): string {
  return `[[dirq.function]]\nname = "ok_one"\ncommand = "node worker.mjs"\n\n[[dirq.function]]\nname = "${name}"\ncommand = "node worker.mjs"\n`;
}

describe(`a [[dirq.function]] may not hide an SQLite function (seed ${SEED})`, () => {
  it("the built-ins the issue names, any case, and a seeded sample of pragma function_list, are refused naming the key", async () => {
    const listed = await builtInNames();
    for (const name of [
      "count",
      "max",
      "min",
      "json_extract",
      "substr",
      "length",
      "lower",
      "upper",
    ]) {
      assert.ok(listed.includes(name), `${name} is in pragma_function_list`);
    }
    const random = seededRandom(SEED);
    const sample = new Set([
      "count",
      "max",
      "min",
      "json_extract",
      "substr",
      "length",
      "lower",
      "upper",
      "COUNT",
      "Json_Extract",
    ]);
    while (sample.size < 18) sample.add(listed[Math.floor(random() * listed.length)] as string);
    const { writeFileSync } = await import("node:fs");
    for (const name of sample) {
      writeFileSync(join(root, "clash.toml"), functionConfig(name));
      const result = await runDirq(["SELECT 1 AS one", "-c", "clash.toml"], { cwd: root });
      const message = assertUserError(result, "clash.toml: dirq.function[1].name");
      assert.match(message, new RegExp(`"${name}" is an SQLite built-in function`), message);
    }
  });

  it("count(*) is never answered by a worker: the config is refused before any row", async () => {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(join(root, "count.toml"), functionConfig("count"));
    const result = await runDirq(["SELECT count(*) AS n FROM './cases'", "-c", "count.toml"], {
      cwd: root,
    });
    assertUserError(
      result,
      /count\.toml: dirq\.function\[1\]\.name: "count" is an SQLite built-in function/,
    );
  });

  it("a name SQLite does not have is accepted", async () => {
    const { writeFileSync } = await import("node:fs");
    writeFileSync(join(root, "fine.toml"), functionConfig("counter"));
    const rows = parseRows(
      await runOk(root, ["SELECT counter('1') AS n", "-c", "fine.toml", "--format", "json"]),
    );
    assert.deepEqual(rows, [{ n: 1 }]);
  });
});
