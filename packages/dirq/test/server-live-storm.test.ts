import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { seededRandom } from "./differential.js";
import {
  type LiveStream,
  openLive,
  type ServerProcess,
  serverFixtures,
  untilLiveCurrent,
} from "./server-support.js";

/**
 * Seeded storms of file changes (create, edit, atomic rewrite, delete, folder rename) under
 * the eight shapes of statement, with subscribers that disconnect and resume: at the end each
 * subscriber's snapshot with every diff applied is a fresh `POST /query` answer.
 */

const { tree, serve } = serverFixtures();

const CONFIG = `[[table]]
name = "items"
glob = "data/**/*.json"
format = "json"
schema = { id = "INTEGER", grp = "TEXT", v = "INTEGER", name = "TEXT" }

[[table]]
name = "groups"
glob = "groups/*.json"
format = "json"
schema = { grp = "TEXT", label = "TEXT" }
`;

const STATEMENTS: { sql: string; key?: string[] }[] = [
  { sql: "SELECT id, name, v FROM items WHERE v > 50", key: ["id"] },
  { sql: "SELECT id, v * 2 + 1 AS w, upper(name) AS n FROM items" },
  { sql: "SELECT grp, count(*) AS n, sum(v) AS s FROM items GROUP BY grp", key: ["grp"] },
  {
    sql: "SELECT i.id, g.label FROM items i JOIN groups g ON g.grp = i.grp ORDER BY i.id, g.label",
  },
  { sql: "SELECT id, v FROM items ORDER BY v DESC, id LIMIT 10" },
  { sql: "SELECT DISTINCT grp FROM items" },
  {
    sql: "SELECT id, rank() OVER (PARTITION BY grp ORDER BY v DESC, id) AS r FROM items ORDER BY id",
  },
  { sql: "SELECT path, size FROM './data' ORDER BY path" },
];

const CHANGES = 200;
const FOLDERS = ["d0", "d1", "d2", "d3"];

/** One subscriber: its stream while connected, what it held when it left, when it comes back. */
interface Subscriber {
  statement: (typeof STATEMENTS)[number];
  stream: LiveStream | null;
  held: LiveStream | null;
  backAt: number;
}

class Storm {
  private id = 0;
  private readonly pick = <T>(list: readonly T[]): T =>
    list[Math.floor(this.random() * list.length)] as T;

  constructor(
    readonly root: string,
    readonly random: () => number,
  ) {}

  private rows(): string {
    const count = 1 + Math.floor(this.random() * 3);
    return JSON.stringify(
      Array.from({ length: count }, () => ({
        id: ++this.id,
        grp: `g${Math.floor(this.random() * 5)}`,
        v: Math.floor(this.random() * 100),
        name: `n${Math.floor(this.random() * 50)}`,
      })),
    );
  }

  private files(): string[] {
    return FOLDERS.flatMap((folder) => {
      const dir = join(this.root, "data", folder);
      return existsSync(dir) ? readdirSync(dir).map((name) => `data/${folder}/${name}`) : [];
    });
  }

  /** One seeded change of the tree. */
  change(): void {
    const roll = this.random();
    const files = this.files();
    const existing = files.length > 0 ? this.pick(files) : null;
    const folder = this.pick(FOLDERS);
    if (roll < 0.3 || existing === null) {
      mkdirSync(join(this.root, "data", folder), { recursive: true });
      writeFileSync(join(this.root, "data", folder, `f${this.id}.json`), this.rows());
    } else if (roll < 0.55) {
      writeFileSync(join(this.root, existing), this.rows());
    } else if (roll < 0.75) {
      writeFileSync(join(this.root, "tmp/next.json"), this.rows());
      renameSync(join(this.root, "tmp/next.json"), join(this.root, existing));
    } else if (roll < 0.9) {
      rmSync(join(this.root, existing));
    } else if (roll < 0.95) {
      const target = join(this.root, "data", folder);
      const source = join(this.root, existing, "..");
      if (!existsSync(target)) renameSync(source, target);
    } else {
      const labels = Array.from({ length: 1 + Math.floor(this.random() * 3) }, (_, i) => ({
        grp: `g${Math.floor(this.random() * 5)}`,
        label: `L${i}${Math.floor(this.random() * 9)}`,
      }));
      writeFileSync(join(this.root, "groups/g.json"), JSON.stringify(labels));
    }
  }
}

/** Leaves or comes back, as the seed says. */
async function churn(
  server: ServerProcess,
  subscriber: Subscriber,
  step: number,
  random: () => number,
) {
  if (subscriber.stream !== null && random() < 0.03) {
    subscriber.stream.close();
    await subscriber.stream.ended;
    subscriber.held = subscriber.stream;
    subscriber.stream = null;
    subscriber.backAt = step + 1 + Math.floor(random() * 10);
  } else if (subscriber.stream === null && step >= subscriber.backAt) {
    await comeBack(server, subscriber);
  }
}

async function comeBack(server: ServerProcess, subscriber: Subscriber): Promise<void> {
  const held = subscriber.held as LiveStream;
  subscriber.stream = await openLive(server, subscriber.statement, {
    lastId: held.lastId as string,
    rows: held.rows,
    snapshot: held.snapshot,
  });
}

describe("live query storms", () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: ${CHANGES} changes under eight statements, subscribers leaving and coming back`, async () => {
      const root = tree({
        ".dirq.toml": CONFIG,
        "tmp/.keep": "",
        "groups/g.json": JSON.stringify([
          { grp: "g0", label: "zero" },
          { grp: "g1", label: "one" },
        ]),
      });
      const random = seededRandom(seed);
      const storm = new Storm(root, random);
      for (let i = 0; i < 20; i++) storm.change();
      const server = await serve(root, ["-c", ".dirq.toml"]);
      const subscribers: Subscriber[] = [];
      for (const statement of STATEMENTS) {
        const stream = await openLive(server, statement);
        assert.equal(stream.status, 200, `${statement.sql}: ${stream.error}`);
        subscribers.push({ statement, stream, held: null, backAt: 0 });
      }
      let resumed = 0;
      try {
        for (let step = 0; step < CHANGES; step++) {
          storm.change();
          for (const subscriber of subscribers) {
            const wasAway = subscriber.stream === null;
            await churn(server, subscriber, step, random);
            if (wasAway && subscriber.stream !== null) resumed++;
          }
          if (random() < 0.3) await new Promise((resolve) => setTimeout(resolve, random() * 20));
        }
        for (const subscriber of subscribers) {
          if (subscriber.stream === null) await comeBack(server, subscriber);
        }
        for (const subscriber of subscribers) {
          await untilLiveCurrent(server, subscriber.stream as LiveStream, subscriber.statement.sql);
        }
        const diffs = subscribers
          .flatMap((s) => s.stream?.frames ?? [])
          .filter((f) => f.event === "diff");
        assert.ok(diffs.length > 0, "no diff frame at all");
        assert.ok(resumed > 0, "no subscriber came back");
      } finally {
        for (const subscriber of subscribers) subscriber.stream?.close();
      }
    });
  }
});
