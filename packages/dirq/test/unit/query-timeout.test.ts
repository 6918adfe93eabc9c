import assert from "node:assert/strict";
import { test } from "node:test";
import { QUERY_TIMEOUT_MS, queryTimeoutMs } from "../../src/server/run-server.js";

test("the server's statement limit is 30 s unless DIRQ_QUERY_TIMEOUT_MS sets another", () => {
  assert.equal(QUERY_TIMEOUT_MS, 30_000);
  assert.equal(queryTimeoutMs({}), 30_000);
  assert.equal(queryTimeoutMs({ DIRQ_QUERY_TIMEOUT_MS: "5000" }), 5_000);
  for (const ignored of ["", "0", "-1", "1.5", "soon"]) {
    assert.equal(queryTimeoutMs({ DIRQ_QUERY_TIMEOUT_MS: ignored }), 30_000, ignored);
  }
});
