import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { isDeepStrictEqual } from "node:util";
import { fileURLToPath } from "node:url";
import { python3, runDirq, tempTree } from "./helpers.js";

/**
 * toml-test (github.com/toml-lang/toml-test, its TOML 1.0.0 cases, copied into
 * test/fixtures/toml-test/) through `--parse toml`, beside Python's `tomllib`: every valid case
 * is read into the values the suite's JSON gives, with their types (typeof in SQLite; inside a
 * nested value's JSON text, `3` and `3.0` apart), and every invalid case is that file's error.
 */

const FIXTURES = fileURLToPath(new URL("../../test/fixtures/toml-test/", import.meta.url));
const LISTED = readFileSync(join(FIXTURES, "files-toml-1.0.0"), "utf8").split("\n");
const VALID = LISTED.filter((name) => name.startsWith("valid/") && name.endsWith(".toml"));
const INVALID = LISTED.filter((name) => name.startsWith("invalid/"));

/** Valid cases whose rows differ from the suite's JSON by a documented rule (docs/formats.md). */
const VALID_DOCUMENTED = new Map([
  // Keys that differ only in ASCII case are one column, as SQLite compares names.
  ["valid/key/case-sensitive.toml", "sectioN and section are one column"],
]);

/** Valid cases dirq refuses, for a documented reason (docs/formats.md, "TOML"). */
const VALID_EXCEPTIONS = new Map([
  // A NUL in a key cannot be a column name (as for JSON's y_object_escaped_null_in_key).
  ["valid/key/quoted-unicode.toml", /its key "\\u0000" holds a NUL character/],
]);

/** A value in toml-test's JSON: `{type, value}` for a scalar, else an array or a table. */
type Tagged = { type: string; value: string } | Tagged[] | { [key: string]: Tagged };

const root = tempTree({});
cpSync(FIXTURES, root, { recursive: true });

/** tomllib's reading of each valid case in toml-test's JSON, or its error for each invalid one. */
function tomllibReadings(): { valid: Record<string, Tagged>; refused: string[] } {
  const script = `
import datetime, json, math, sys, tomllib
def tagged(v):
    if isinstance(v, dict): return {k: tagged(x) for k, x in v.items()}
    if isinstance(v, list): return [tagged(x) for x in v]
    if isinstance(v, bool): return {"type": "bool", "value": "true" if v else "false"}
    if isinstance(v, int): return {"type": "integer", "value": str(v)}
    if isinstance(v, float):
        text = "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
        return {"type": "float", "value": text}
    if isinstance(v, str): return {"type": "string", "value": v}
    if isinstance(v, datetime.datetime):
        return {"type": "datetime" if v.tzinfo else "datetime-local", "value": v.isoformat()}
    if isinstance(v, datetime.date): return {"type": "date-local", "value": v.isoformat()}
    return {"type": "time-local", "value": v.isoformat()}
valid, refused = {}, []
for name in sys.argv[1:]:
    try:
        # A byte-order mark is not data, in dirq's every format (tomllib would refuse it).
        with open(name, "rb") as f: value = tomllib.loads(f.read().decode("utf-8-sig"))
        if name.startswith("valid/"): valid[name] = tagged(value)
    except Exception:
        refused.append(name)
print(json.dumps({"valid": valid, "refused": refused}))
`;
  const run = spawnSync(python3(), ["-c", script, ...VALID, ...INVALID], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout) as { valid: Record<string, Tagged>; refused: string[] };
}

const DATE_TIME =
  /^(\d{4}-\d{2}-\d{2})?(?:[Tt ]?(\d{2}:\d{2}:\d{2})(?:\.(\d+))?)?([Zz]|[-+]\d{2}:\d{2})?$/;

/** A date, time or date-time in one spelling: `t`, `z` and `-00:00` as `T`, `Z`, no `.000`. */
function sameMoment(text: string): string {
  const match = DATE_TIME.exec(text);
  if (match === null) return `not a date: ${text}`;
  const [, date, time, fraction, offset] = match;
  const seconds = (fraction ?? "").replace(/0+$/, "");
  const zone = offset === undefined ? "" : /^([Zz]|[-+]00:00)$/.test(offset) ? "Z" : offset;
  const clock = time === undefined ? "" : `${time}${seconds === "" ? "" : `.${seconds}`}`;
  return [date, clock].filter(Boolean).join("T") + zone;
}

/** The kind of date or time a text spells, as toml-test names it. */
function kindOf(text: string): string {
  const match = DATE_TIME.exec(text);
  if (match === null) return "string";
  if (match[1] === undefined) return "time-local";
  if (match[2] === undefined) return "date-local";
  return match[4] === undefined ? "datetime-local" : "datetime";
}

/** A scalar of toml-test's JSON in one spelling, to compare two readings. */
function scalarKey({ type, value }: { type: string; value: string }): string {
  if (type === "integer") return `integer ${BigInt(value)}`;
  if (type === "float") {
    const infinity = value.startsWith("-") ? -Infinity : Infinity;
    const number = /nan/.test(value) ? NaN : /inf/.test(value) ? infinity : +value;
    return `float ${Object.is(number, -0) ? "-0" : number}`;
  }
  if (type.startsWith("date") || type.startsWith("time")) return `${type} ${sameMoment(value)}`;
  return `${type} ${value}`;
}

/** toml-test's JSON in one spelling (keys sorted), to compare two readings. */
function canonical(value: Tagged): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (
    typeof value.type === "string" &&
    typeof value.value === "string" &&
    Object.keys(value).length === 2
  )
    return scalarKey(value as { type: string; value: string });
  const table = value as Record<string, Tagged>;
  return Object.fromEntries(
    Object.keys(table)
      .sort()
      .map((key) => [key, canonical(table[key] as Tagged)]),
  );
}

/**
 * What dirq stores where the suite's JSON holds a value SQLite and JSON have no room for: NaN
 * is NULL (SQLite has no NaN), -0.0 is 0.0 (SQLite keeps no sign of zero), and inside a nested
 * value's JSON text NaN and the infinities are `null` (JSON has neither). docs/formats.md,
 * "TOML", says so.
 */
function asDirqStores(expected: unknown, nested: boolean): unknown {
  if (Array.isArray(expected)) return expected.map((item) => asDirqStores(item, true));
  if (typeof expected === "object" && expected !== null) {
    const table = expected as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(table).map((key) => [key, asDirqStores(table[key], nested)]),
    );
  }
  if (expected === "float NaN" || (nested && /^float -?Infinity$/.test(String(expected))))
    return "null";
  return expected === "float -0" ? "float 0" : expected;
}

/** A scalar dirq wrote (a column's value, or inside nested JSON text) in `canonical`'s spelling. */
function scalarAsRead(expected: unknown, type: string, text: string): string {
  const expectedType = typeof expected === "string" ? expected.split(" ")[0] : "";
  if (type === "integer" && expectedType === "bool")
    return `bool ${text === "1" || text === "true"}`;
  if (type === "integer") return `integer ${BigInt(text)}`;
  if (type === "real") {
    const number = /^-?Inf$/.test(text) ? Number(`${text}inity`) : Number(text);
    return `float ${Object.is(number, -0) ? "-0" : number}`;
  }
  if (/^(date|time)/.test(expectedType ?? "")) return `${kindOf(text)} ${sameMoment(text)}`;
  return `string ${text}`;
}

const NUMBER_MARK = "\uE000";

/** A nested value's JSON text, each number kept as its text (so that `3` and `3.0` differ). */
function parseKeepingNumbers(text: string): unknown {
  const marked = text.replace(
    /"(?:[^"\\]|\\.)*"|(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)/g,
    (token, number?: string) => (number === undefined ? token : `"${NUMBER_MARK}${number}"`),
  );
  return JSON.parse(marked);
}

/** A nested value as dirq wrote it, in `canonical`'s spelling (`expected` says which dates). */
function nestedAsRead(expected: unknown, value: unknown): unknown {
  if (Array.isArray(value))
    return value.map((item, i) => nestedAsRead((expected as unknown[] | undefined)?.[i], item));
  if (value === null) return "null";
  if (typeof value === "boolean") return `bool ${value}`;
  if (typeof value === "object") {
    const table = value as Record<string, unknown>;
    const within = (expected ?? {}) as Record<string, unknown>;
    return Object.fromEntries(
      Object.keys(table)
        .sort()
        .map((key) => [key, nestedAsRead(within[key], table[key])]),
    );
  }
  const text = String(value);
  if (!text.startsWith(NUMBER_MARK)) return scalarAsRead(expected, "text", text);
  const number = text.slice(1);
  return scalarAsRead(expected, /[.eE]/.test(number) ? "real" : "integer", number);
}

/** A column's value as dirq stored it: SQLite's typeof, and its text (a REAL's 17 digits). */
type Stored = [type: string, text: string | null];

/** A file's row as dirq stored it, in `canonical`'s spelling (`expected` says which dates). */
function rowAsRead(expected: Record<string, unknown>, row: Map<string, Stored>): unknown {
  const read: Record<string, unknown> = {};
  for (const [column, [type, text]] of row) {
    if (type === "null") continue;
    const key = Object.keys(expected).find((name) => name.toLowerCase() === column) ?? column;
    const want = expected[key];
    const nested = typeof want === "object" && want !== null;
    read[key] = nested
      ? nestedAsRead(want, parseKeepingNumbers(text ?? ""))
      : scalarAsRead(want, type, text ?? "");
  }
  // A NaN is NULL, so a key whose value is NaN is a NULL column, read as `null` here.
  for (const key of Object.keys(expected))
    if (!(key in read) && expected[key] === "null") read[key] = "null";
  return Object.fromEntries(
    Object.keys(read)
      .sort()
      .map((key) => [key, read[key]]),
  );
}

/** Each valid case's row as dirq reads it (`typeof` and text per column), by the file's path. */
async function dirqRows(): Promise<{ rows: Map<string, Map<string, Stored>>; stderr: string }> {
  const table = "'./valid/**/*.toml'";
  const first = await runDirq([`SELECT * FROM ${table} LIMIT 1`, "--parse", "toml"], { cwd: root });
  const columns = Object.keys((JSON.parse(first.stdout) as object[])[0] ?? {});
  const typed = columns.map((name) => {
    const c = `"${name.replaceAll('"', '""')}"`;
    const text = `CASE typeof(${c}) WHEN 'real' THEN printf('%!.17g', ${c}) ELSE CAST(${c} AS TEXT) END`;
    return `json_array(typeof(${c}), ${text}) AS ${c}`;
  });
  const sql = `SELECT _dirq_file_path, ${typed.join(", ")} FROM ${table}`;
  const run = await runDirq([sql, "--parse", "toml", "--format", "json"], { cwd: root });
  assert.ok(run.code === 0 || run.code === 23, run.stderr);
  const rows = new Map<string, Map<string, Stored>>();
  for (const object of JSON.parse(run.stdout) as Record<string, string>[]) {
    const row = new Map<string, Stored>();
    for (const name of columns)
      row.set(name.toLowerCase(), JSON.parse(object[name] ?? "") as Stored);
    rows.set(object._dirq_file_path ?? "", row);
  }
  return { rows, stderr: run.stderr };
}

/** The suite's JSON for a valid case. */
function suiteReading(name: string): Tagged {
  return JSON.parse(readFileSync(join(root, name.replace(/\.toml$/, ".json")), "utf8")) as Tagged;
}

describe("toml-test 1.0.0, beside Python's tomllib", () => {
  const tomllib = tomllibReadings();

  it("tomllib reads every valid case as the suite's JSON says, and refuses every invalid one", () => {
    assert.equal(VALID.length, 210);
    assert.equal(INVALID.length, 499);
    const differ = VALID.filter(
      (name) =>
        !isDeepStrictEqual(canonical(tomllib.valid[name] ?? []), canonical(suiteReading(name))),
    );
    assert.deepEqual(differ, []);
    assert.equal(tomllib.refused.length, INVALID.length, "tomllib refuses every invalid case");
  });

  it("every valid case is read into the suite's values and types, each exception documented", async () => {
    const { rows, stderr } = await dirqRows();
    const refused = [...stderr.matchAll(/^dirq: skipped (\S+): (.*)$/gm)];
    assert.deepEqual(
      refused.map((match) => match[1]),
      [...VALID_EXCEPTIONS.keys()],
    );
    for (const [, name, message] of refused)
      assert.match(message ?? "", VALID_EXCEPTIONS.get(name ?? "") ?? /$^/);
    const differ: string[] = [];
    const documented: string[] = [];
    for (const name of VALID.filter((name) => !VALID_EXCEPTIONS.has(name))) {
      const expected = asDirqStores(canonical(suiteReading(name)), false) as Record<
        string,
        unknown
      >;
      const read = rowAsRead(expected, rows.get(name) ?? new Map());
      if (isDeepStrictEqual(read, expected)) continue;
      if (VALID_DOCUMENTED.has(name)) documented.push(name);
      else
        differ.push(
          `${name}\n  dirq:  ${JSON.stringify(read)}\n  suite: ${JSON.stringify(expected)}`,
        );
    }
    assert.deepEqual(differ, []);
    assert.deepEqual(documented, [...VALID_DOCUMENTED.keys()]);
    const equal = VALID.length - refused.length - documented.length;
    process.stdout.write(
      `# toml-test 1.0.0 valid: dirq reads ${equal} of ${VALID.length} as the suite says (with NaN NULL), ${documented.length} by a documented rule, refuses ${refused.length}; tomllib reads ${Object.keys(tomllib.valid).length}\n`,
    );
  });

  it("every invalid case is that file's error, named with its line, as tomllib refuses it", async () => {
    const run = await runDirq(
      ["SELECT count(*) AS n FROM './invalid/**/*.toml'", "--parse", "toml"],
      {
        cwd: root,
      },
    );
    assert.equal(run.code, 23, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), [{ n: 0 }]);
    const refused = new Set(
      [...run.stderr.matchAll(/^dirq: skipped (\S+): /gm)].map((match) => match[1]),
    );
    assert.deepEqual(
      INVALID.filter((name) => !refused.has(name)),
      [],
      "toml-test says these are not TOML 1.0; dirq reads them",
    );
    const otherLines = run.stderr
      .split("\n")
      .filter((line) => !/^(dirq: skipped invalid\/|$)/.test(line));
    assert.deepEqual(otherLines, [], "only the files' lines");
    process.stdout.write(
      `# toml-test 1.0.0 invalid: dirq refuses ${refused.size} of ${INVALID.length}, tomllib ${tomllib.refused.length}\n`,
    );
  });
});
