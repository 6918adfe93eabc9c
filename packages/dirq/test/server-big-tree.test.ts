import assert from "node:assert/strict";
import { mkdirSync, readdirSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { makeTree, removeTree } from "./helpers.js";
import {
  delay,
  eventually,
  openEvents,
  queryProcesses,
  queryRows,
  request,
  type ServerProcess,
  startServer,
} from "./server-support.js";

/** `folders` folders `d0`.. of `perFolder` files each under a new temporary root. */
function bigTree(folders: number, perFolder: number): string {
  const root = makeTree({});
  for (let d = 0; d < folders; d++) {
    mkdirSync(join(root, `d${d}`));
    for (let f = 0; f < perFolder; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), `${f}`);
  }
  return root;
}

async function count(server: ServerProcess, where = ""): Promise<number> {
  const rows = await queryRows(server, `SELECT count(*) AS n FROM './' ${where}`);
  return rows[0]?.n as number;
}

describe("a checkout in a big tree", () => {
  const FOLDERS = 1_000;
  const PER_FOLDER = 100;
  let root = "";
  let server: ServerProcess | undefined;
  before(() => {
    root = bigTree(FOLDERS, PER_FOLDER);
  });
  after(async () => {
    await server?.kill();
    removeTree(root);
  });

  it("fills a path-table with the index of its file column, so no change after it waits for that index", async () => {
    const own = await startServer(["--host", "127.0.0.1", "--port", "0"], { cwd: root });
    try {
      // One statement fills the table and then reads the schema: the index a refresh looks
      // files up by is there with the rows, not made after them (made after a fill of a
      // million rows, it held the first writes after the fill for over half a second).
      const [answer] = await queryRows(
        own,
        "SELECT (SELECT count(*) FROM './') AS n, (SELECT group_concat(name) FROM sqlite_master " +
          "WHERE type = 'index' AND tbl_name = './') AS indexes",
      );
      assert.deepEqual(answer, { n: FOLDERS * PER_FOLDER, indexes: "_dirq_lookup_./" });
    } finally {
      await own.kill();
    }
  });

  it("starts its pool's query processes before any statement, where a small tree starts one", async () => {
    // A burst slows the statements asked meanwhile, and a slow one makes the pool start a
    // process: in a big tree they are all started ahead, so none starts in a burst.
    const poolSize = Math.max(2, availableParallelism());
    const small = makeTree({ "a.txt": "a" });
    const servers = await Promise.all([
      startServer(["--host", "127.0.0.1", "--port", "0"], { cwd: root }),
      startServer(["--host", "127.0.0.1", "--port", "0"], { cwd: small }),
    ]);
    const [big, little] = servers as [ServerProcess, ServerProcess];
    try {
      await eventually(
        () => queryProcesses(big).length === poolSize,
        `${poolSize} query processes of the big tree's server before any statement`,
      );
      assert.equal(queryProcesses(little).length, 1);
      assert.equal(await count(big), FOLDERS * PER_FOLDER);
      assert.equal(queryProcesses(big).length, poolSize);
    } finally {
      await Promise.all(servers.map((server) => server.kill()));
      removeTree(small);
    }
  });

  it("answers statements while a burst of moved folders is applied, from its partial commits", async () => {
    server = await startServer(["--host", "127.0.0.1", "--port", "0"], { cwd: root });
    const total = FOLDERS * PER_FOLDER;
    assert.equal(await count(server), total);
    const events = await openEvents(server);
    for (let d = 0; d < FOLDERS; d++) renameSync(join(root, `d${d}`), join(root, `m${d}`));
    // Every answer while the burst is applied: how many files the index has under new names.
    const seen: number[] = [];
    const moved = "WHERE path GLOB 'm[0-9]*/*'";
    await eventually(
      async () => {
        seen.push(await count(server as ServerProcess, moved));
        return seen.at(-1) === total;
      },
      "every moved file under its new name",
      // Generous: beside the rest of the suite on a small machine the settle waits for CPU.
      300_000,
    );
    // A statement was answered between the burst's first commit and its last.
    const partial = seen.filter((n) => n > 0 && n < total);
    assert.ok(partial.length > 0, `answers seen: ${seen.join(", ")}`);
    assert.equal(await count(server), total);
    await events.until(
      () => events.rowCount() >= 2 * total,
      "a delete and an insert for every moved file",
      120_000,
    );
    events.close();
  });
});

describe("the watcher past its watch limit", () => {
  const FOLDERS = 200;
  const CAP = 150;
  const root = bigTree(FOLDERS, 5);
  let server: ServerProcess | undefined;
  after(async () => {
    await server?.kill();
    removeTree(root);
  });

  const folders = () => ["", ...readdirSync(root).filter((name) => name.startsWith("d"))];
  /** A folder the first test found without a watch. */
  let unwatchedFolder = "";

  /**
   * Changes every folder (a file made and removed), so that the next listing of a folder moves
   * its access time past its modification time (Linux's `relatime`).
   */
  function touchAll(): void {
    for (const name of folders()) {
      writeFileSync(join(root, name, ".touch"), "");
      unlinkSync(join(root, name, ".touch"));
    }
  }

  /** The folders listed since `touchAll`. */
  function listed(): string[] {
    return folders().filter((name) => {
      const { atimeMs, mtimeMs } = statSync(join(root, name));
      return atimeMs >= mtimeMs;
    });
  }

  it("checks only the folders that have no watch, by listing them; watched ones stay immediate", async () => {
    server = await startServer(["--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
      env: { DIRQ_MAX_WATCHES: String(CAP), DIRQ_LIVE_STATS: "1" },
    });
    assert.equal(await count(server), FOLDERS * 5);
    await eventually(() => /watch/.test((server as ServerProcess).stderr()), "the warning");
    const warning = server
      .stderr()
      .split("\n")
      .filter((line) => line.includes("watch"));
    assert.equal(warning.length, 1, server.stderr());
    const unwatched = FOLDERS + 1 - CAP;
    assert.match(
      warning[0] as string,
      new RegExp(`${unwatched} of ${FOLDERS + 1} folders have no watch`),
    );
    // Said once the first check has run: the real delay, from what that check took.
    assert.match(
      warning[0] as string,
      new RegExp(
        `stat their files \\(\\d+ files\\), one check every \\d+\\.\\d s \\(the first took \\d+\\.\\d s, \\d+\\.\\d s of CPU; .*\\), so their changes arrive up to about \\d+\\.\\d s late`,
      ),
    );
    touchAll();
    // A check lists every folder without a watch, and nothing else.
    await eventually(() => listed().length >= unwatched, "a check of the unwatched folders");
    await delay(3_000);
    const seen = listed();
    // A folder whose own change a watch reported (the root, for one) may be listed once more.
    assert.ok(seen.length <= unwatched + 2, `listed ${seen.length}: ${seen.join(" ")}`);
    // The server's own list of the folders without a watch (what a benchmark splits by): the
    // folders the checks list, all of them.
    const stats = JSON.parse((await request(`${server.url}/live/stats`)).text) as {
      unwatchedFolders: string[];
    };
    assert.equal(stats.unwatchedFolders.length, unwatched);
    const notListed = stats.unwatchedFolders.filter((name) => !seen.includes(name));
    assert.deepEqual(notListed, [], "every folder the server has no watch for was listed");
    const watched = folders().filter((name) => name !== "" && !seen.includes(name));
    unwatchedFolder = seen.find((name) => name !== "") as string;
    const events = await openEvents(server);
    // A new file in a watched folder arrives by its watch, one in an unwatched folder by a check.
    writeFileSync(join(root, watched[0] as string, "new.txt"), "new");
    writeFileSync(join(root, unwatchedFolder, "new.txt"), "new");
    for (const folder of [watched[0], unwatchedFolder]) {
      await events.next((row) => row.action === "insert" && row.file_path === `${folder}/new.txt`);
    }
    assert.equal(await count(server), FOLDERS * 5 + 2);
    events.close();
  });

  it("hands over only the files that changed since the previous check, however many it stats", async () => {
    const running = server as ServerProcess;
    // The root (one of them) holds no files.
    const unwatchedFiles = (FOLDERS - CAP) * 5;
    const first = await unwatchedChecks(running);
    // Nothing changes: the next checks stat every file without a watch and hand over none.
    await eventually(
      async () => (await unwatchedChecks(running)).checks >= first.checks + 2,
      "two more checks",
    );
    const quiet = await unwatchedChecks(running);
    assert.ok(quiet.filesChecked - first.filesChecked >= 2 * unwatchedFiles, JSON.stringify(quiet));
    assert.equal(quiet.filesHanded, first.filesHanded, JSON.stringify(quiet));
    // A check asks for watches until the system refuses one, not once per folder without one.
    assert.ok(
      quiet.watchesRefused - first.watchesRefused <= quiet.checks - first.checks,
      JSON.stringify({ first, quiet }),
    );
    const folder = unwatchedFolder;
    const events = await openEvents(running);
    writeFileSync(join(root, folder, "f0.txt"), "changed, and longer than before");
    await events.next((row) => row.action === "update" && row.file_path === `${folder}/f0.txt`);
    events.close();
    await eventually(
      async () => (await unwatchedChecks(running)).checks >= quiet.checks + 2,
      "two more checks",
    );
    const after = await unwatchedChecks(running);
    assert.equal(after.filesHanded - quiet.filesHanded, 1, JSON.stringify(after));
  });
});

interface UnwatchedChecks {
  checks: number;
  filesChecked: number;
  filesHanded: number;
  watchesRefused: number;
}

/** What the server's checks of its folders without a watch did so far (`GET /live/stats`). */
async function unwatchedChecks(server: ServerProcess): Promise<UnwatchedChecks> {
  const answer = await request(`${server.url}/live/stats`);
  const checks = (JSON.parse(answer.text) as { unwatchedChecks: UnwatchedChecks | null })
    .unwatchedChecks;
  assert.ok(checks !== null, answer.text);
  return checks;
}

describe("a path-table kept live", () => {
  const root = bigTree(10, 10);
  let server: ServerProcess | undefined;
  after(async () => {
    await server?.kill();
    removeTree(root);
  });

  it("gets the index of its file column once it is filled, not at the first change after it", async () => {
    server = await startServer(["--host", "127.0.0.1", "--port", "0"], { cwd: root });
    assert.equal(await count(server), 100);
    // No file changes: the index a refresh looks files up by is made because the table is live,
    // so the first write after a statement waits for no index of the whole table.
    const indexes = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = './'";
    await eventually(
      async () => (await queryRows(server as ServerProcess, indexes)).length > 0,
      "an index of the path-table './'",
    );
    writeFileSync(join(root, "d0", "new.txt"), "new");
    await eventually(async () => (await count(server as ServerProcess)) === 101, "the new file");
  });
});
