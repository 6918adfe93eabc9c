import assert from "node:assert/strict";
import { mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { makeTree, removeTree } from "./helpers.js";
import {
  delay,
  eventually,
  queryRows,
  request,
  type ServerProcess,
  startServer,
} from "./server-support.js";

/** Every file under `root`, relative and sorted. */
function filesOnDisk(root: string, folder = ""): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
    const path = folder === "" ? entry.name : `${folder}/${entry.name}`;
    if (entry.isDirectory()) found.push(...filesOnDisk(root, path));
    else found.push(path);
  }
  return found.sort();
}

async function filesInIndex(server: ServerProcess): Promise<string[]> {
  const rows = await queryRows(server, "SELECT path FROM './' ORDER BY path");
  return rows.map((row) => row.path as string).sort();
}

interface LiveStats {
  unwatchedFolders: string[];
  unwatchedChecks: { checks: number } | null;
}

async function liveStats(server: ServerProcess): Promise<LiveStats> {
  return JSON.parse((await request(`${server.url}/live/stats`)).text) as LiveStats;
}

/** Waits until the server's checks of its unwatched folders have run `more` more times. */
async function checksPass(server: ServerProcess, more: number): Promise<void> {
  const start = (await liveStats(server)).unwatchedChecks?.checks ?? 0;
  await eventually(
    async () => ((await liveStats(server)).unwatchedChecks?.checks ?? 0) >= start + more,
    `${more} more checks of the folders without a watch`,
  );
}

/** The index equals the disk, or the assertion names what differs. */
async function assertIndexEqualsDisk(server: ServerProcess, root: string): Promise<void> {
  let live: string[] = [];
  let disk: string[] = [];
  try {
    await eventually(
      async () => {
        live = await filesInIndex(server);
        disk = filesOnDisk(root);
        return live.join("\n") === disk.join("\n");
      },
      "the index equals the files on disk",
      20_000,
    );
  } catch {
    const missing = disk.filter((path) => !live.includes(path));
    const extra = live.filter((path) => !disk.includes(path));
    assert.fail(`missing from the index: ${missing.join(" ")}; not on disk: ${extra.join(" ")}`);
  }
}

/**
 * Makes a new file in each of `folders` every few milliseconds until stopped, so that some are
 * made at every moment of the watcher's work: none must be lost, whenever it is made.
 */
function keepMaking(root: string, folders: readonly string[]): { stop: () => Promise<void> } {
  let running = true;
  const done = (async () => {
    for (let n = 0; running; n++) {
      for (const folder of folders) writeFileSync(join(root, folder, `n${n}.txt`), `${n}`);
      await delay(2);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await done;
    },
  };
}

describe("the watcher past its watch limit, while folders change", () => {
  const roots: string[] = [];
  let server: ServerProcess | undefined;
  after(async () => {
    await server?.kill();
    for (const root of roots) removeTree(root);
  });

  function tree(folders: number): string {
    const root = makeTree({});
    roots.push(root);
    for (let d = 0; d < folders; d++) {
      mkdirSync(join(root, `d${d}`));
      for (let f = 0; f < 2_000; f++) writeFileSync(join(root, `d${d}`, `f${f}.txt`), `${f}`);
    }
    return root;
  }

  it("loses no file made in a folder while it gets a watch back", async () => {
    const root = tree(8);
    // The root and three folders have a watch; the other five are checked.
    server = await startServer(["--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
      env: { DIRQ_MAX_WATCHES: "4", DIRQ_LIVE_STATS: "1" },
    });
    // The path-table is filled now, and kept current from here on by the watcher alone.
    assert.equal((await filesInIndex(server)).length, 8 * 2_000);
    await checksPass(server, 1);
    const unwatched = (await liveStats(server)).unwatchedFolders;
    assert.equal(unwatched.length, 5, unwatched.join(" "));
    const watched = readdirSync(root).filter((name) => !unwatched.includes(name));
    const making = keepMaking(root, unwatched);
    await checksPass(server, 1);
    // Watches freed: the folders without one get them as their checks find them changed.
    for (const name of watched) rmSync(join(root, name), { recursive: true });
    const running = server;
    await eventually(
      async () => (await liveStats(running)).unwatchedFolders.length <= 2,
      "watches given to the folders that had none",
    );
    await delay(200);
    await making.stop();
    await assertIndexEqualsDisk(server, root);
    await server.kill();
    server = undefined;
  });

  it("loses no file made in folders without a watch while the watched folder above them is renamed", async () => {
    const root = makeTree({});
    roots.push(root);
    const inner = ["q0", "q1", "q2", "q3"];
    for (const name of inner) {
      mkdirSync(join(root, "p", name), { recursive: true });
      for (let f = 0; f < 500; f++) writeFileSync(join(root, "p", name, `f${f}.txt`), `${f}`);
    }
    // The root and `p` have a watch; the folders in `p` are checked.
    server = await startServer(["--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
      env: { DIRQ_MAX_WATCHES: "2", DIRQ_LIVE_STATS: "1" },
    });
    assert.equal((await filesInIndex(server)).length, inner.length * 500);
    await checksPass(server, 1);
    assert.equal((await liveStats(server)).unwatchedFolders.length, inner.length);
    let at = "p";
    const until = Date.now() + 8_000;
    for (let n = 0; Date.now() < until; n++) {
      for (const name of inner) writeFileSync(join(root, at, name, `n${n}.txt`), `${n}`);
      // Renamed back and forth every few writes: each rename's events often come in the
      // batch after a check listed the folders under the old name, or after the next rename.
      if (n % 5 === 4) {
        const to = at === "p" ? "r" : "p";
        renameSync(join(root, at), join(root, to));
        at = to;
      }
      await delay(2);
    }
    // Still checked, under the name they have now.
    const running = server;
    const expected = inner.map((name) => `${at}/${name}`).join(" ");
    let unwatched = "";
    await eventually(async () => {
      unwatched = (await liveStats(running)).unwatchedFolders.sort().join(" ");
      return unwatched === expected;
    }, `the folders without a watch are ${expected}`).catch(() =>
      assert.fail(`folders without a watch: ${unwatched}`),
    );
    await checksPass(server, 2);
    await assertIndexEqualsDisk(server, root);
    await server.kill();
    server = undefined;
  });

  it("keeps files changed just before their folder without a watch is renamed", async () => {
    const root = tree(8);
    server = await startServer(["--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
      env: { DIRQ_MAX_WATCHES: "4", DIRQ_LIVE_STATS: "1" },
    });
    const sizes = "SELECT path, size FROM './' ORDER BY path";
    assert.equal((await queryRows(server, sizes)).length, 8 * 2_000);
    await checksPass(server, 1);
    const unwatched = (await liveStats(server)).unwatchedFolders;
    // Changed, then renamed before any check can see the change under the old name.
    for (const name of readdirSync(root)) {
      writeFileSync(join(root, name, "f0.txt"), "changed before the rename");
      renameSync(join(root, name), join(root, `m${name}`));
    }
    const running = server;
    const expected = unwatched
      .map((name) => `m${name}`)
      .sort()
      .join(" ");
    await eventually(
      async () => (await liveStats(running)).unwatchedFolders.sort().join(" ") === expected,
      `the folders without a watch are ${expected}`,
    );
    await checksPass(server, 2);
    await assertIndexEqualsDisk(server, root);
    const changed = await queryRows(
      server,
      `SELECT path FROM './' WHERE path GLOB '*/f0.txt' AND size != 25`,
    );
    assert.deepEqual(changed, []);
    await server.kill();
    server = undefined;
  });

  it("follows a folder renamed inside a folder that has no watch either", async () => {
    const root = makeTree({});
    roots.push(root);
    for (const name of ["b", "c"]) {
      mkdirSync(join(root, "a", name, "deeper"), { recursive: true });
      for (let f = 0; f < 50; f++) writeFileSync(join(root, "a", name, `f${f}.txt`), `${f}`);
    }
    // Only the root has a watch.
    server = await startServer(["--host", "127.0.0.1", "--port", "0"], {
      cwd: root,
      env: { DIRQ_MAX_WATCHES: "1", DIRQ_LIVE_STATS: "1" },
    });
    assert.equal((await filesInIndex(server)).length, 100);
    await checksPass(server, 1);
    writeFileSync(join(root, "a/b/f0.txt"), "changed before the rename");
    renameSync(join(root, "a/b"), join(root, "a/x"));
    renameSync(join(root, "a/c"), join(root, "a/b"));
    writeFileSync(join(root, "a/x/deeper/new.txt"), "new");
    const running = server;
    const expected = ["a", "a/b", "a/b/deeper", "a/x", "a/x/deeper"].join(" ");
    await eventually(
      async () => (await liveStats(running)).unwatchedFolders.sort().join(" ") === expected,
      `the folders without a watch are ${expected}`,
    );
    await checksPass(server, 2);
    await assertIndexEqualsDisk(server, root);
    const sizes = await queryRows(server, "SELECT size FROM './' WHERE path = 'a/x/f0.txt'");
    assert.deepEqual(sizes, [{ size: 25 }]);
    await server.kill();
    server = undefined;
  });
});
