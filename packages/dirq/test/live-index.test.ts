import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { open } from "../src/index.js";
import { DIRQ_BIN, runDirq, tempTree } from "./helpers.js";
import {
  delay,
  eventually,
  openReadyEvents,
  postQuery,
  type RowEvent,
  serverFixtures,
  untilServedAsFresh,
} from "./server-support.js";
import { descendants } from "./terminal.js";

/**
 * A hook that sleeps while a file says "slow" (long enough that every other event of a test
 * comes first), after leaving a mark in the folder named by its second argument so the test
 * knows it runs.
 */
const SLOW_HOOK = `import { readFileSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
const text = readFileSync(process.argv[2], "utf8");
const data = JSON.parse(text);
if (data.slow) {
  writeFileSync(process.argv[3] + "/" + basename(process.argv[2]) + ".started", "");
  await new Promise((resolve) => setTimeout(resolve, 6000));
}
process.stdout.write(JSON.stringify([{ v: data.v }]));
`;

function slowConfig(marks: string): string {
  return `[[table]]
name = "data"
glob = "data/*.json"
on-file = "node hook.mjs {path} ${marks}"
`;
}

/** Inotify watches held by a process (one line per watch in its inotify fds' fdinfo). */
function inotifyWatches(pid: number | "self"): number {
  let count = 0;
  const fdinfo = `/proc/${pid}/fdinfo`;
  for (const fd of readdirSync(fdinfo)) {
    let text: string;
    try {
      text = readFileSync(join(fdinfo, fd), "utf8");
    } catch {
      continue;
    }
    count += text.split("\n").filter((line) => line.startsWith("inotify wd:")).length;
  }
  return count;
}

/** A tree with `folders` ignored folders (by .gitignore) beside two that hold rows. */
function treeWithIgnoredFolders(folders: number): string {
  const spec: Record<string, string> = {
    ".gitignore": "build-*/\n",
    "docs/a.md": "a",
    "src/b.md": "b",
  };
  for (let i = 0; i < folders; i++) spec[`build-${i}/out.txt`] = "x";
  return tempTree(spec);
}

describe("live index: one slow hook holds back no other file", () => {
  const { serve } = serverFixtures();

  it("server: a path-table row and another file's hook rows arrive while one hook runs", async () => {
    const marks = tempTree({});
    const root = tempTree({
      "hook.mjs": SLOW_HOOK,
      "dirq.toml": slowConfig(marks),
      "data/slow.json": JSON.stringify({ v: 1 }),
      "notes/old.md": "old",
    });
    const server = await serve(root, ["-c", "dirq.toml"]);
    assert.equal((await postQuery(server, "SELECT count(*) AS n FROM './'")).status, 200);
    const stream = await openReadyEvents(server);
    try {
      writeFileSync(join(root, "data/slow.json"), JSON.stringify({ v: 2, slow: true }));
      await eventually(() => existsSync(join(marks, "slow.json.started")), "the slow hook runs");
      writeFileSync(join(root, "notes/new.md"), "new");
      writeFileSync(join(root, "data/fast.json"), JSON.stringify({ v: 3 }));
      // An error event is allowed: the hook may read the file between truncation and write.
      const isSlow = (row: RowEvent) =>
        row.table === "data" && row.file_path === "data/slow.json" && row.action !== "error";
      await stream.next((row) => row.table === "./" && row.file_path === "notes/new.md");
      await stream.next((row) => row.table === "data" && row.file_path === "data/fast.json");
      assert.deepEqual(stream.rows().filter(isSlow), [], "the slow hook's rows came first");
      // The slow file's rows come when its hook is done, and the answers match a fresh scan.
      const slow = await stream.next(isSlow, 60_000);
      assert.equal(slow.action, "update");
      assert.deepEqual(slow.row?.v, 2);
      const sql = "SELECT v FROM data ORDER BY v";
      const served = await postQuery(server, sql);
      const fresh = await runDirq([sql, "-c", "dirq.toml", "--format", "json"], { cwd: root });
      assert.equal(fresh.code, 0, fresh.stderr);
      assert.deepEqual(JSON.parse(served.text), JSON.parse(fresh.stdout));
    } finally {
      stream.close();
    }
  });

  it("SDK: events and queries go on while one extract is blocked; a statement waits only for its tables", async () => {
    const root = tempTree({ "data/slow.json": '{"v":1}', "data/fast.json": '{"v":1}' });
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let blocked!: () => void;
    const blocking = new Promise<void>((resolve) => {
      blocked = resolve;
    });
    const db = open({
      root,
      progress: false,
      live: true,
      tables: [
        {
          name: "data",
          glob: "data/*.json",
          extract: async (_path, content) => {
            const data = JSON.parse(content.toString("utf8")) as { v: number; slow?: boolean };
            if (data.slow) {
              blocked();
              await released;
            }
            return [{ v: data.v }];
          },
        },
      ],
    });
    try {
      await db.ready;
      assert.deepEqual(await db.query("SELECT count(*) AS n FROM './'"), [{ n: 2 }]);
      const events = db.watch();
      await events.ready;
      const seen: RowEvent[] = [];
      const collecting = (async () => {
        for await (const event of events) seen.push(event as RowEvent);
      })();
      writeFileSync(join(root, "data/slow.json"), '{"v":2,"slow":true}');
      await blocking;
      // Nothing the blocked extract holds is needed here: no wait.
      let done = false;
      const answers = Promise.all([
        db.query("SELECT 1 AS one"),
        db.query("SELECT count(*) AS n FROM './'"),
      ]).finally(() => {
        done = true;
      });
      // The delay only bounds a failure: the queries must not wait for the release.
      await Promise.race([answers, released, delay(15_000)]);
      assert.ok(done, "queries that read no table being parsed answered while the extract blocked");
      writeFileSync(join(root, "data/fast.json"), '{"v":5}');
      writeFileSync(join(root, "new.md"), "n");
      await eventually(
        () =>
          seen.some((e) => e.table === "data" && e.file_path === "data/fast.json") &&
          seen.some((e) => e.table === "./" && e.file_path === "new.md"),
        "the other files' events",
      );
      assert.ok(!seen.some((e) => e.table === "data" && e.file_path === "data/slow.json"));
      // A statement over `data` settles: it waits for the blocked file, then sees it.
      const settled = db.query("SELECT v FROM data ORDER BY v");
      release();
      assert.deepEqual(await settled, [{ v: 2 }, { v: 5 }]);
      await db.close();
      await collecting;
    } finally {
      release();
      await db.close();
    }
  });
});

describe("live index: statements see the files as they are", () => {
  it("SDK: a file written just before a query is in its answer, every time", async () => {
    const root = tempTree({ "data/0.json": '{"v":0}' });
    const db = open({
      root,
      progress: false,
      live: true,
      tables: [
        {
          name: "data",
          glob: "data/*.json",
          extract: (_path, content) => [JSON.parse(content.toString("utf8")) as { v: number }],
        },
      ],
    });
    try {
      await db.ready;
      await db.query("SELECT count(*) FROM './'");
      for (let i = 1; i <= 10; i++) {
        writeFileSync(join(root, `data/${i}.json`), JSON.stringify({ v: i }));
        const rows = await db.query("SELECT count(*) AS n, sum(v) AS s FROM data");
        assert.deepEqual(rows, [{ n: i + 1, s: (i * (i + 1)) / 2 }], `after file ${i}`);
        const files = await db.query("SELECT count(*) AS n FROM './data'");
        assert.deepEqual(files, [{ n: i + 1 }], `path-table after file ${i}`);
      }
    } finally {
      await db.close();
    }
  });

  it("piped REPL: a program that writes a file and then asks about it is never behind", async () => {
    const root = tempTree({
      "hook.mjs": `import { readFileSync } from "node:fs";
process.stdout.write(JSON.stringify([JSON.parse(readFileSync(process.argv[2], "utf8"))]));
`,
      "dirq.toml": `[[table]]\nname = "data"\nglob = "data/*.json"\non-file = "node hook.mjs {path}"\n`,
      "data/0.json": '{"v":0}',
    });
    const child = spawn(process.execPath, [DIRQ_BIN, "-c", "dirq.toml", "--format", "json"], {
      cwd: root,
      env: { ...process.env, DIRQ_PROGRESS: "never" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    const answer = async (lines: number) => {
      await eventually(() => stdout.split("\n").length > lines, `answer ${lines}`, 60_000);
      return stdout.split("\n")[lines - 1] as string;
    };
    try {
      child.stdin.write("SELECT count(*) AS n FROM './data'\n");
      assert.equal(await answer(1), '[{"n":1}]');
      let line = 1;
      for (let i = 1; i <= 10; i++) {
        writeFileSync(join(root, `data/${i}.json`), JSON.stringify({ v: i }));
        child.stdin.write(
          "SELECT count(*) AS n, sum(v) AS s FROM data\nSELECT count(*) AS n FROM './data'\n",
        );
        assert.equal(await answer(++line), JSON.stringify([{ n: i + 1, s: (i * (i + 1)) / 2 }]));
        assert.equal(await answer(++line), JSON.stringify([{ n: i + 1 }]));
      }
      child.stdin.end();
      assert.equal(await exited, 0, stderr);
    } finally {
      if (child.exitCode === null) child.kill();
    }
  });
});

describe("live index: reads take no lock", () => {
  it("SDK: overlapping queries that build tables, fill columns and read answer alike", async () => {
    const spec: Record<string, string> = {};
    for (let i = 0; i < 300; i++) spec[`${["a", "b", "c"][i % 3]}/${i}.json`] = `[{"v":${i}}]`;
    const root = tempTree(spec);
    const db = open({ root, progress: false, live: true, onFile: "cat {path}" });
    try {
      const statements = [
        "SELECT count(*) AS n, sum(v) AS s FROM './a'",
        "SELECT count(*) AS n, sum(v) AS s FROM './b'",
        "SELECT count(*) AS n, sum(v) AS s FROM './c'",
        "SELECT 1 AS one",
      ];
      const together = await Promise.all(
        [...statements, ...statements].map((sql) => db.query(sql)),
      );
      const oneByOne = [];
      for (const sql of [...statements, ...statements]) oneByOne.push(await db.query(sql));
      assert.deepEqual(together, oneByOne);
      assert.deepEqual(together[0], [{ n: 100, s: 14850 }]);
    } finally {
      await db.close();
    }
  });
});

describe("live index: one watcher setup for every client", () => {
  it("SDK: ignored folders get no watch", async () => {
    const root = treeWithIgnoredFolders(200);
    const before = inotifyWatches("self");
    const db = open({ root, progress: false, live: true });
    try {
      await db.ready;
      // The root, docs and src.
      assert.equal(inotifyWatches("self") - before, 3);
    } finally {
      await db.close();
    }
  });

  it("REPL: ignored folders get no watch", async () => {
    const root = treeWithIgnoredFolders(200);
    mkdirSync(join(root, "more"));
    const child = spawn(process.execPath, [DIRQ_BIN, "--format", "json"], {
      cwd: root,
      env: { ...process.env, DIRQ_PROGRESS: "never" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    try {
      child.stdin.write("SELECT 1 AS one\n");
      await eventually(() => stdout.includes('[{"one":1}]'), "the REPL answers");
      const pids = [
        child.pid as number,
        ...(descendants(child.pid as number) ?? []).map((p) => p.pid),
      ];
      const watches = pids.reduce((sum, pid) => {
        try {
          return sum + inotifyWatches(pid);
        } catch {
          return sum;
        }
      }, 0);
      // The root, docs, src and more.
      assert.equal(watches, 4);
      child.stdin.end();
      assert.equal(await exited, 0);
    } finally {
      if (child.exitCode === null) child.kill();
    }
  });
});

describe("live index: a table's file named before it exists", () => {
  const { serve } = serverFixtures();

  it("server: the file is read when it appears, as a fresh scan reads it", async () => {
    const root = tempTree({
      "dirq.toml":
        '[[table]]\nname = "big"\nglob = "big.csv"\nformat = "csv"\n\n' +
        '[[table]]\nname = "later"\nglob = "later"\nformat = "json"\n',
    });
    const server = await serve(root, ["-c", "dirq.toml"]);
    const stream = await openReadyEvents(server);
    try {
      const empty = await postQuery(server, "SELECT count(*) AS n FROM big");
      assert.deepEqual(JSON.parse(empty.text), [{ n: 0 }]);
      writeFileSync(join(root, "big.csv"), "a,b\n1,x\n2,y\n");
      mkdirSync(join(root, "later"));
      writeFileSync(join(root, "later/one.json"), JSON.stringify([{ v: 1 }]));
      await stream.next((event) => event.table === "big" && event.action === "insert", 30_000);
      await stream.next((event) => event.table === "later" && event.action === "insert", 30_000);
      for (const sql of ["SELECT a, b FROM big ORDER BY a", "SELECT v FROM later"]) {
        const served = async () => (await postQuery(server, sql)).text.trim();
        const fresh = async () => {
          const run = await runDirq([sql, "-c", "dirq.toml", "--format", "json"], { cwd: root });
          assert.equal(run.code, 0, run.stderr);
          return run.stdout.trim();
        };
        await untilServedAsFresh(served, fresh);
        assert.equal(await served(), await fresh(), `${sql}: the server answers as a fresh scan`);
      }
    } finally {
      stream.close();
    }
  });
});
