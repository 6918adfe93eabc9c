import assert from "node:assert/strict";
import { test } from "node:test";
import { CaseVariants } from "../../src/query/case-variants.js";

test("a path-table name that differs only in case gets a SQLite name of its own", () => {
  const variants = new CaseVariants();
  const sql = "SELECT * FROM './Case.md' JOIN './case.md'";
  const rewritten = variants.rewrite(sql, []);
  assert.notEqual(rewritten, sql);
  assert.match(rewritten, /^SELECT \* FROM '\.\/Case\.md' JOIN "\.\/case\.md.+"$/);
  const alias = /JOIN "(.+)"$/.exec(rewritten)?.[1] ?? "";
  assert.equal(variants.pathOf(alias), "./case.md");
  assert.equal(variants.pathOf("./Case.md"), "./Case.md");
});

test("names in use count, and strings outside FROM or JOIN are left alone", () => {
  const variants = new CaseVariants();
  assert.equal(
    variants.rewrite("SELECT './case.md' FROM './Case.md'", ["./Case.md"]),
    "SELECT './case.md' FROM './Case.md'",
  );
  assert.notEqual(
    variants.rewrite("SELECT 1 FROM './case.md'", ["./Case.md"]),
    "SELECT 1 FROM './case.md'",
  );
});
