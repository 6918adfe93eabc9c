import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { readFileRows } from "../../src/parse/formats/read-file-rows.js";
import { MAX_EXPANDED_VALUES } from "../../src/parse/formats/yaml-rows.js";
import { python3, tempTree } from "../helpers.js";

const dir = tempTree({});

/** The rows of a YAML file, or its error's message. */
function read(name: string, text: string): Record<string, unknown>[] | string {
  writeFileSync(join(dir, name), text);
  const rows: Record<string, unknown>[] = [];
  try {
    readFileRows("yaml", null, join(dir, name), name, (batch) => {
      for (const row of batch) rows.push(Object.fromEntries(row));
    });
  } catch (error) {
    return (error as Error).message;
  }
  return rows;
}

/** A CI file's shape: one mapping of defaults merged into each of `jobs` jobs. */
function ciFile(jobs: number): string {
  const lines = ["- &defaults", "  image: node:20", "  retries: 2", "  tags: [linux, x64]"];
  for (let i = 0; i < jobs; i++) lines.push(`- <<: *defaults`, `  name: job${i}`);
  return `${lines.join("\n")}\n`;
}

describe("YAML aliases: the guard measures what they expand to", () => {
  it("two thousand ordinary merges read, as PyYAML reads them", () => {
    const text = ciFile(2000);
    const rows = read("ci.yaml", text);
    assert.ok(Array.isArray(rows), String(rows));
    const python = spawnSync(
      python3(),
      ["-c", "import sys, yaml; print(len(yaml.safe_load(sys.stdin)))"],
      { input: text, encoding: "utf8" },
    );
    assert.equal(python.status, 0, python.stderr);
    assert.equal(rows.length, Number(python.stdout));
    assert.deepEqual(rows[2000], {
      image: "node:20",
      retries: 2n,
      tags: '["linux","x64"]',
      name: "job1999",
    });
  });

  it("a billion laughs is the file's error, naming the limit", () => {
    const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let level = 1; level < 9; level++) {
      const previous = String.fromCharCode(96 + level);
      const name = String.fromCharCode(97 + level);
      lines.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(",")}]`);
    }
    assert.equal(
      read("lol.yaml", `${lines.join("\n")}\n`),
      `its aliases expand it to more than ${MAX_EXPANDED_VALUES.toLocaleString("en-US")} values (dirq's limit, against a "billion laughs")`,
    );
  });
});
