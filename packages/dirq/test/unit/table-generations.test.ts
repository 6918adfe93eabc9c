import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { TableGenerations } from "../../src/indexer/table-generations.js";

describe("TableGenerations", () => {
  it("moves the stamp of a changed table only, ignoring case; null moves every stamp", () => {
    // A case variant's SQLite name is counted under the name the user wrote.
    const generations = new TableGenerations(
      (table) => (table === "./Docs~2" ? "./docs" : table),
      () => 1,
    );
    const docs = generations.stamp(["./docs"]);
    const src = generations.stamp(["./src"]);
    generations.changed(["./DOCS"]);
    assert.notEqual(generations.stamp(["./docs"]), docs);
    assert.equal(generations.stamp(["./src"]), src);
    const afterDocs = generations.stamp(["./docs"]);
    generations.changed(["./Docs~2"]);
    assert.notEqual(generations.stamp(["./docs"]), afterDocs);
    generations.changed(null);
    assert.notEqual(generations.stamp(["./src"]), src);
  });

  it("counts the schema only for a statement that reads no table or the schema", () => {
    let schema = 1;
    const generations = new TableGenerations(
      (table) => table,
      () => schema,
    );
    const none = generations.stamp([]);
    const table = generations.stamp(["./docs"]);
    const master = generations.stamp(["sqlite_schema"]);
    schema = 2;
    assert.notEqual(generations.stamp([]), none);
    assert.notEqual(generations.stamp(["sqlite_schema"]), master);
    assert.equal(generations.stamp(["./docs"]), table);
  });
});
