import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { open } from "../src/index.js";
import { assertUserError, makeTree, parseRows, removeTree, runDirq, runOk } from "./helpers.js";

/*
 * A `schema` key may be any column name a CSV header or a hook's key holds: a quoted TOML key
 * (`"Region Name" = "TEXT"`) makes the column with that exact name, quoted in SQL. The CSV is
 * shaped like the datasets/country-codes one (headers with spaces, dashes and leading digits),
 * whose numeric codes (`008`, `840`) stay TEXT only through such a schema.
 */

const COUNTRIES = [
  'official_name_en,ISO3166-1-numeric,ISO4217-currency_numeric_code,Region Name,1st-level,"say ""hi""",Dial',
  "Albania,008,008,Europe,a,x,355",
  "Andorra,020,978,Europe,b,y,376",
  "United States of America,840,840,Americas,c,z,1",
  "",
].join("\r\n");

/** The schema in the order the columns are made; `region name` matches `Region Name`. */
const SCHEMA_KEYS = [
  "official_name_en",
  "ISO3166-1-numeric",
  "ISO4217-currency_numeric_code",
  "region name",
  "1st-level",
  'say "hi"',
  "Dial",
];

const CONFIG = `[[table]]
name = "countries"
glob = "data/country-codes.csv"
format = "csv"
schema = { official_name_en = "TEXT", "ISO3166-1-numeric" = "TEXT", "ISO4217-currency_numeric_code" = "TEXT", "region name" = "TEXT", 1st-level = "TEXT", 'say "hi"' = "TEXT", Dial = "INTEGER" }

[[table]]
name = "people"
glob = "people/*.json"
on-file = "cat {path}"
schema = { "first name" = "TEXT", "É" = "TEXT", "é" = "INTEGER" }
`;

const root = makeTree({
  "data/country-codes.csv": COUNTRIES,
  "people/a.json": '[{"first name": "Ada", "É": "upper", "é": 7, "other": 1}]',
  "dirq.toml": CONFIG,
  "dup.toml": `[[table]]\nname = "t"\nglob = "*.csv"\nformat = "csv"\nschema = { "Region Name" = "TEXT", "REGION NAME" = "TEXT" }\n`,
  "empty.toml": `[[table]]\nname = "t"\nglob = "*.csv"\nformat = "csv"\nschema = { "" = "TEXT" }\n`,
  "reserved.toml": `[[table]]\nname = "t"\nglob = "*.csv"\nformat = "csv"\nschema = { "_dirq_x y" = "TEXT" }\n`,
});
after(() => removeTree(root));

const CODES_SQL = `SELECT official_name_en AS name, "ISO3166-1-numeric" AS numeric,
  typeof("ISO3166-1-numeric") AS numeric_type, "ISO4217-currency_numeric_code" AS currency,
  "Region Name" AS region, "1st-level" AS level, "say ""hi""" AS quoted, Dial,
  typeof(Dial) AS dial_type FROM countries ORDER BY name`;

const EXPECTED = [
  ["Albania", "008", "008", "Europe", "a", "x", 355],
  ["Andorra", "020", "978", "Europe", "b", "y", 376],
  ["United States of America", "840", "840", "Americas", "c", "z", 1],
].map(([name, numeric, currency, region, level, quoted, dial]) => ({
  name,
  numeric,
  numeric_type: "text",
  currency,
  region,
  level,
  quoted,
  Dial: dial,
  dial_type: "integer",
}));

describe("schema keys that are any column name", { concurrency: true }, () => {
  for (const [reader, env] of [
    ["native CSV reader", {}],
    ["csv-parse", { DIRQ_NATIVE_FS: "0" }],
  ] as const) {
    it(`a CSV's headers with spaces, dashes and quotes are columns, codes TEXT (${reader})`, async () => {
      const stdout = await runOk(root, ["-c", "dirq.toml", CODES_SQL, "--format", "json"], env);
      assert.deepEqual(parseRows(stdout), EXPECTED);
    });
  }

  it("the columns are made with the schema's spelling, in its order", async () => {
    // dirq's own hidden columns come after them.
    const stdout = await runOk(root, [
      "SELECT name FROM pragma_table_info('countries') WHERE cid < 7",
      "-c",
      "dirq.toml",
      "--format",
      "json",
    ]);
    assert.deepEqual(
      parseRows(stdout).map((row) => row.name),
      SCHEMA_KEYS,
    );
  });

  it("the REPL reads the same table", async () => {
    const result = await runDirq(["-c", "dirq.toml", "--format", "json"], {
      cwd: root,
      input: `${CODES_SQL.replaceAll("\n", " ")}\n`,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(parseRows(result.stdout), EXPECTED);
  });

  it("a hook table's keys with spaces, and names only non-ASCII case tells apart", async () => {
    const stdout = await runOk(root, [
      "-c",
      "dirq.toml",
      'SELECT "first name", "É", "é", typeof("é") AS t FROM people',
      "--format",
      "json",
    ]);
    assert.equal(stdout, '[{"first name":"Ada","É":"upper","é":7,"t":"integer"}]\n');
  });

  it("a live index applies an edit of the file to such columns (the SDK)", async () => {
    const tree = makeTree({ "data/country-codes.csv": COUNTRIES });
    const db = open({
      root: tree,
      progress: false,
      live: true,
      tables: [
        {
          name: "countries",
          glob: "data/*.csv",
          format: "csv",
          schema: { official_name_en: "TEXT", "ISO3166-1-numeric": "TEXT", "Region Name": "TEXT" },
        },
      ],
    });
    try {
      const sql = `SELECT "ISO3166-1-numeric" AS code, "Region Name" AS region FROM countries ORDER BY code`;
      assert.deepEqual((await db.query(sql)).length, 3);
      const edited = COUNTRIES.replace("Andorra,020,978,Europe", "Andorra,020,978,Southern Europe");
      writeFileSync(
        join(tree, "data/country-codes.csv"),
        `${edited}Angola,024,973,Africa,d,w,244\r\n`,
      );
      assert.deepEqual(await db.query(sql), [
        { code: "008", region: "Europe" },
        { code: "020", region: "Southern Europe" },
        { code: "024", region: "Africa" },
        { code: "840", region: "Americas" },
      ]);
    } finally {
      await db.close();
      removeTree(tree);
    }
  });

  const refused: [string, string][] = [
    [
      "dup.toml",
      'table[0].schema."REGION NAME": duplicate column: SQLite column names ignore ASCII case',
    ],
    ["empty.toml", 'table[0].schema."": column names must not be empty'],
    [
      "reserved.toml",
      'table[0].schema."_dirq_x y": column names starting with _dirq_ are reserved',
    ],
  ];
  for (const [config, message] of refused) {
    it(`${config} is refused, naming the key`, async () => {
      assertUserError(await runDirq(["SELECT 1", "-c", config], { cwd: root }), message);
    });
  }
});
