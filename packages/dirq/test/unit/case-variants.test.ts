import assert from "node:assert/strict";
import { test } from "node:test";
import { CaseVariants, withoutVariantNames } from "../../src/query/case-variants.js";

test("a path-table name that differs only in case gets a SQLite name of its own", () => {
  const variants = new CaseVariants();
  const sql = "SELECT * FROM './Case.md' JOIN './case.md'";
  const rewritten = variants.rewrite(sql, []);
  assert.notEqual(rewritten, sql);
  // The variant keeps the quotes it was written with.
  assert.match(rewritten, /^SELECT \* FROM '\.\/Case\.md' JOIN '\.\/case\.md.+'$/);
  const alias = /JOIN '(.+)'$/.exec(rewritten)?.[1] ?? "";
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

test("a qualifier spelled as a rewritten name is rewritten too; column names get it back", () => {
  const variants = new CaseVariants();
  const sql = `SELECT "./case.md".path, [./Case.md].path FROM './Case.md', "./case.md"`;
  const rewritten = variants.rewrite(sql, []);
  const alias = /, "(.+)"$/.exec(rewritten)?.[1] ?? "";
  assert.equal(variants.pathOf(alias), "./case.md");
  assert.equal(rewritten, `SELECT "${alias}".path, [./Case.md].path FROM './Case.md', "${alias}"`);
  assert.equal(withoutVariantNames(`"${alias}".path || 'x'`), `"./case.md".path || 'x'`);
  assert.equal(withoutVariantNames(`'${alias}'.size`), `'./case.md'.size`);
  // A name with the mark that is no variant's (no number after it) is left as it is.
  assert.equal(withoutVariantNames(`"./a\u2051b".x`), `"./a\u2051b".x`);
});
