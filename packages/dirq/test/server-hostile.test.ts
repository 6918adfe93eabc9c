import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { Agent, type IncomingMessage, request as httpRequestRaw } from "node:http";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import fc from "fast-check";
import { harnessSeed } from "./differential.js";
import { snapshotTree } from "./helpers.js";
import {
  delay,
  eventually,
  openStuckSubscriber,
  queryRows,
  type RawSubscriber,
  type ServerProcess,
  serverFixtures,
} from "./server-support.js";

/*
 * Hostile and broken HTTP input: whatever a client sends, the server answers it with the right
 * status (never 500 for a user's mistake) or drops that connection, and keeps serving others.
 * Bodies and SQL are generated with fast-check from a fixed seed (DIRQ_TEST_SEED replays one).
 */

const { tree, serve } = serverFixtures();
const SEED = harnessSeed(19);

interface Answer {
  status: number;
  contentType: string;
  text: string;
}

/** Reads a response whole into an `Answer`. */
function readAnswer(
  res: IncomingMessage,
  resolve: (answer: Answer) => void,
  reject: (error: Error) => void,
): void {
  let text = "";
  res.setEncoding("utf8");
  res.on("data", (chunk: string) => (text += chunk));
  res.on("end", () =>
    resolve({ status: res.statusCode ?? 0, contentType: res.headers["content-type"] ?? "", text }),
  );
  res.on("error", reject);
}

/** One request on a keep-alive agent, with any body and content type. */
function send(
  server: ServerProcess,
  agent: Agent,
  options: { path?: string; method?: string; contentType?: string; body?: Buffer | string },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : Buffer.from(options.body);
    const headers: Record<string, string> = {};
    if (options.contentType !== undefined) headers["content-type"] = options.contentType;
    if (body !== undefined) headers["content-length"] = String(body.length);
    const req = httpRequestRaw(
      {
        host: "127.0.0.1",
        port: server.port,
        path: options.path ?? "/query",
        method: options.method ?? "POST",
        agent,
        headers,
      },
      (res) => readAnswer(res, resolve, reject),
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** Streams `body` in 256 KiB writes on a connection that closes after the answer. */
function uploadAndClose(server: ServerProcess, contentType: string, body: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequestRaw(
      {
        host: "127.0.0.1",
        port: server.port,
        path: "/query",
        method: "POST",
        headers: { "content-type": contentType, connection: "close" },
      },
      (res) => readAnswer(res, resolve, reject),
    );
    req.on("error", reject);
    const piece = 256 * 1024;
    for (let offset = 0; offset < body.length; offset += piece) {
      req.write(body.subarray(offset, offset + piece));
    }
    req.end();
  });
}

/** A user's mistake is a 4xx with a JSON error body; a good request is a 200 JSON array. */
function assertProperAnswer(answer: Answer, allowed: readonly number[], what: string): void {
  assert.ok(allowed.includes(answer.status), `${what}: status ${answer.status} ${answer.text}`);
  if (answer.status === 405) return;
  assert.match(answer.contentType, /^application\/json/, what);
  const body = JSON.parse(answer.text) as unknown;
  if (answer.status === 200) assert.ok(Array.isArray(body), what);
  else assert.equal(typeof (body as { error: unknown }).error, "string", what);
}

/** SQL-ish tokens: enough to make valid reads, writes, internal names and nonsense. */
const SQL_TOKENS = [
  "SELECT",
  "*",
  "FROM",
  "'./'",
  "'./docs'",
  "'./docs/*.md'",
  "'../'",
  "'/etc'",
  "'*.md'",
  "path",
  "size",
  "count(*)",
  "WHERE",
  "=",
  "<",
  "1",
  "'a'",
  "x'00ff'",
  "NULL",
  "(",
  ")",
  ",",
  ";",
  "AS",
  "x",
  "ORDER BY",
  "GROUP BY",
  "LIMIT",
  "UNION ALL",
  "JOIN",
  "ON",
  "INSERT INTO",
  "VALUES",
  "UPDATE",
  "SET",
  "DELETE",
  "DROP TABLE",
  "CREATE TABLE",
  "ATTACH",
  "DETACH",
  "'hostile.db'",
  "VACUUM",
  "INTO",
  "PRAGMA",
  "user_version",
  "BEGIN",
  "COMMIT",
  "sqlite_master",
  "_dirq_files",
  "_DIRQ_meta",
  "load_extension('x')",
  "json_each('[1,2]')",
  "?",
  ":p",
  "--",
  "/*",
  "*/",
  "'",
  '"',
  "\u0000",
  "\n",
  "é",
  "\ud83d\ude00",
];

describe("hostile HTTP input", { concurrency: true }, () => {
  let server: ServerProcess;
  let root: string;
  let initial: string;
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });

  before(async () => {
    root = tree({ "docs/a.md": "# a", "docs/b.md": "# b", "notes.txt": "n" });
    initial = snapshotTree(root);
    server = await serve(root);
  });

  it("random bytes as a body: 400 (or 200 when they happen to be a good request)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 4096 }), async (bytes) => {
        const answer = await send(server, agent, {
          contentType: "application/json",
          body: Buffer.from(bytes),
        });
        assertProperAnswer(answer, [200, 400], `bytes ${Buffer.from(bytes).toString("hex")}`);
      }),
      { seed: SEED, numRuns: 150 },
    );
  });

  it("any JSON value as a body, and good requests cut short: 200 or 400, never 500", async () => {
    const request = fc.oneof(
      fc.jsonValue(),
      fc.record({ sql: fc.jsonValue() }),
      fc.record({ sql: fc.string(), extra: fc.jsonValue() }),
    );
    await fc.assert(
      fc.asyncProperty(request, fc.nat(), async (value, cut) => {
        const text = JSON.stringify(value) ?? "null";
        for (const body of [text, text.slice(0, cut % (text.length + 1))]) {
          const answer = await send(server, agent, { contentType: "application/json", body });
          assertProperAnswer(answer, [200, 400], `body ${JSON.stringify(body)}`);
        }
      }),
      { seed: SEED, numRuns: 150 },
    );
  });

  it("generated SQL: 200 or 400, never 500, and nothing in the root changes", async () => {
    const statement = fc
      .array(fc.constantFrom(...SQL_TOKENS), { minLength: 1, maxLength: 12 })
      .map((tokens) => tokens.join(" "));
    await fc.assert(
      fc.asyncProperty(statement, async (sql) => {
        const answer = await send(server, agent, {
          contentType: "application/json",
          body: JSON.stringify({ sql }),
        });
        assertProperAnswer(answer, [200, 400], `sql ${JSON.stringify(sql)}`);
      }),
      { seed: SEED, numRuns: 300 },
    );
    assert.equal(snapshotTree(root), initial);
  });

  it("wrong content types are 415, with or without a body", async () => {
    const type = fc
      .stringMatching(/^[a-z]{1,12}\/[a-z+.-]{1,16}(; ?[a-z]+=[a-z0-9-]+)?$/)
      .filter((value) => value.split(";")[0]?.trim() !== "application/json");
    await fc.assert(
      fc.asyncProperty(type, fc.boolean(), async (contentType, withBody) => {
        const answer = await send(server, agent, {
          contentType,
          body: withBody ? JSON.stringify({ sql: "SELECT 1" }) : undefined,
        });
        assertProperAnswer(answer, [415], `content-type ${contentType}`);
      }),
      { seed: SEED, numRuns: 60 },
    );
  });

  it("huge bodies are 413, declared or streamed, and the server goes on", async () => {
    const huge = Buffer.alloc(8 * 1024 * 1024, "a");
    const declared = await send(server, agent, { contentType: "application/json", body: huge });
    assertProperAnswer(declared, [413], "declared 8 MiB");
    // A closing connection with unread bytes is reset, and the client still uploading then saw
    // a broken pipe instead of the answer, about one time in ten: hence the repeats.
    for (let i = 0; i < 20; i++) {
      const streamed = await uploadAndClose(server, "application/json", huge);
      assertProperAnswer(streamed, [413], `streamed 8 MiB, try ${i + 1}`);
      const refused = await uploadAndClose(server, "text/plain", huge);
      assertProperAnswer(refused, [415], `streamed 8 MiB as text/plain, try ${i + 1}`);
    }
    assert.deepEqual(await queryRows(server, "SELECT 1 AS one"), [{ one: 1 }]);
  });

  it("clients that send a byte a second get a 408 and hold nobody else up", async () => {
    const request = `POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 18\r\n\r\n{"sql":"SELECT 1"}`;
    const drips = Array.from(
      { length: 20 },
      () =>
        new Promise<string>((resolve) => {
          const socket = connect(server.port, "127.0.0.1");
          let received = "";
          let sent = 0;
          const timer = setInterval(() => {
            if (sent < request.length) socket.write(request[sent++] as string);
          }, 1000);
          socket.setEncoding("utf8");
          socket.on("data", (chunk: string) => (received += chunk));
          socket.on("error", () => {});
          socket.on("close", () => {
            clearInterval(timer);
            resolve(received);
          });
        }),
    );
    // While they drip, others are served.
    for (let i = 0; i < 5; i++) {
      assert.deepEqual(await queryRows(server, `SELECT ${i} AS n`), [{ n: i }]);
      await delay(500);
    }
    for (const received of await Promise.all(drips)) {
      assert.match(received, /^HTTP\/1\.1 408 /, received);
      assert.match(received, /"error":"the request was not received in time/);
    }
  });

  it("a client that disconnects mid-response costs nothing", async () => {
    const big =
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) " +
      "SELECT x, printf('%.100c', 'a') AS pad FROM c";
    for (let i = 0; i < 5; i++) {
      await new Promise<void>((resolve) => {
        const req = httpRequestRaw(
          {
            host: "127.0.0.1",
            port: server.port,
            path: "/query",
            method: "POST",
            headers: { "content-type": "application/json", connection: "close" },
          },
          (res) => res.once("data", () => res.destroy()),
        );
        req.on("error", () => {});
        req.on("close", () => resolve());
        // Half of them go away before the answer has started.
        if (i % 2 === 0) req.end(JSON.stringify({ sql: `${big} -- ${i}` }));
        else req.end(JSON.stringify({ sql: `${big} -- ${i}` }), () => req.destroy());
      });
    }
    assert.deepEqual(await queryRows(server, "SELECT 2 AS two"), [{ two: 2 }]);
  });

  it("header floods: too large is 431, many small headers are served, nobody else waits", async () => {
    const flood = (headers: number) =>
      new Promise<string>((resolve) => {
        const socket = connect(server.port, "127.0.0.1");
        let received = "";
        socket.setEncoding("utf8");
        socket.on("data", (chunk: string) => (received += chunk));
        socket.on("error", () => {});
        socket.on("close", () => resolve(received));
        const lines = Array.from({ length: headers }, (_, i) => `X-H${i}: v\r\n`).join("");
        socket.write(
          `POST /query HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 18\r\nConnection: close\r\n${lines}\r\n{"sql":"SELECT 1"}`,
        );
      });
    const answers = await Promise.all([
      ...Array.from({ length: 50 }, () => flood(5_000)),
      flood(1_000),
    ]);
    for (const answer of answers.slice(0, 50)) assert.match(answer, /^HTTP\/1\.1 431 /);
    assert.match(answers[50] as string, /^HTTP\/1\.1 200 /);
    assert.deepEqual(await queryRows(server, "SELECT 3 AS three"), [{ three: 3 }]);
  });

  // Once every test above is through: nothing was an internal error, no file changed.
  after(() => {
    agent.destroy();
    assert.doesNotMatch(server.stderr(), /internal error/);
    assert.equal(snapshotTree(root), initial);
    assert.equal(server.child.exitCode, null, "the server still runs");
  });
});

describe("event streams under load", () => {
  let server: ServerProcess;
  let root: string;

  it("starts", async () => {
    root = tree({ "docs/a.md": "a" });
    server = await serve(root);
    // A query names the path-table, so the server holds it and streams its changes.
    assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './'"), [{ n: 1 }]);
  });

  it("1,000 concurrent subscribers each see every change; queries are answered meanwhile", async () => {
    const subscribers: RawSubscriber[] = [];
    try {
      for (let i = 0; i < 1000; i += 100) {
        const batch = await Promise.all(
          Array.from({ length: 100 }, () => openStuckSubscriber("127.0.0.1", server.port)),
        );
        for (const subscriber of batch) subscriber.resume();
        subscribers.push(...batch);
      }
      await Promise.all(subscribers.map((s) => s.waitFor("event: ready", 60_000)));
      for (let n = 0; n < 3; n++) writeFileSync(join(root, "docs", `new-${n}.md`), "x");
      await Promise.all(
        subscribers.map(async (subscriber) => {
          for (let n = 0; n < 3; n++) {
            await subscriber.waitFor(`"file_path":"docs/new-${n}.md"`, 60_000);
          }
        }),
      );
      assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './'"), [{ n: 4 }]);
    } finally {
      for (const subscriber of subscribers) subscriber.close();
    }
    assert.deepEqual(await queryRows(server, "SELECT 1 AS one"), [{ one: 1 }]);
  });

  it("subscribers that disconnect mid-stream cost the others nothing", async () => {
    const staying = await openStuckSubscriber("127.0.0.1", server.port);
    staying.resume();
    await staying.waitFor("event: ready", 60_000);
    const leaving: Socket[] = [];
    for (let i = 0; i < 20; i++) {
      const subscriber = await openStuckSubscriber("127.0.0.1", server.port);
      subscriber.resume();
      leaving.push(subscriber.socket);
    }
    for (let n = 0; n < 200; n++) {
      writeFileSync(join(root, "docs", `burst-${n}.md`), "y");
      // The leaving ones go away while the burst is being streamed.
      if (n === 100) for (const socket of leaving) socket.destroy();
    }
    await staying.waitFor(`"file_path":"docs/burst-199.md"`, 60_000);
    await eventually(
      () => {
        const text = staying.received().toString("utf8");
        return Array.from({ length: 200 }).every((_, n) =>
          text.includes(`"file_path":"docs/burst-${n}.md"`),
        );
      },
      "the staying subscriber saw all 200 inserts",
      30_000,
    );
    staying.close();
    assert.deepEqual(await queryRows(server, "SELECT count(*) AS n FROM './'"), [{ n: 204 }]);
    assert.doesNotMatch(server.stderr(), /internal error/);
  });
});
