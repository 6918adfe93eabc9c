import assert from "node:assert/strict";
import { mkdirSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { tempTree } from "../helpers.js";
import { type TreeWatcher, watchTree, type WatchOptions } from "../../src/watch/file-watcher.js";

// The watcher itself on a real tree: a change of a symlinked file's target is reported under
// the link's path too, however the link, its target or the links on the way change.

const watchers: TreeWatcher[] = [];

after(async () => {
  await Promise.all(watchers.map((watcher) => watcher.close()));
});

function write(root: string, path: string, content: string): void {
  mkdirSync(join(root, path, ".."), { recursive: true });
  writeFileSync(join(root, path), content);
}

/** A watcher that collects every reported path; `step` runs a change and waits for paths. */
async function watching(root: string, options: Partial<WatchOptions> = {}) {
  let seen = new Set<string>();
  let wake: (() => void) | null = null;
  const errors: unknown[] = [];
  const watcher = watchTree(root, {
    ...options,
    onBatch: async (batch) => {
      for (const path of batch.paths) seen.add(path);
      wake?.();
    },
    onError: (error) => errors.push(error),
  });
  watchers.push(watcher);
  await watcher.ready;
  let sentinels = 0;

  const waitFor = async (paths: readonly string[], what: string) => {
    // Only a bound for a watcher that never reports: the wait ends as soon as the paths come.
    const timer = setInterval(() => wake?.(), 1_000);
    const deadline = Date.now() + 120_000;
    try {
      while (!paths.every((path) => seen.has(path))) {
        assert.ok(Date.now() < deadline, `${what}: never reported ${paths} (got ${[...seen]})`);
        await new Promise<void>((resolve) => (wake = resolve));
      }
    } finally {
      clearInterval(timer);
    }
  };

  return {
    errors,
    /**
     * Lets what came before reach the handler (inotify keeps one queue, in order: a file
     * written now is reported after everything earlier), then runs `change` and waits until
     * each of `paths` was reported since.
     */
    async step(what: string, change: () => void, paths: readonly string[]): Promise<void> {
      const sentinel = `sentinel-${++sentinels}`;
      write(root, sentinel, "s");
      await waitFor([sentinel], "sentinel");
      seen = new Set();
      change();
      await waitFor(paths, what);
    },
  };
}

describe("watcher: links follow their targets", { concurrency: true }, () => {
  it("reports links (chains, links through a linked folder) when their target changes", async () => {
    const root = tempTree({ "data/target.json": "1", "data/other.json": "o" });
    symlinkSync("data/target.json", join(root, "link.json"));
    symlinkSync("link.json", join(root, "chain.json"));
    symlinkSync("data", join(root, "folder-link"));
    symlinkSync("folder-link/target.json", join(root, "through.json"));
    symlinkSync(join(root, "data/target.json"), join(root, "absolute.json"));
    const w = await watching(root);

    await w.step("edit the target", () => write(root, "data/target.json", "22"), [
      "data/target.json",
      "link.json",
      "chain.json",
      "through.json",
      "absolute.json",
    ]);
    await w.step(
      "retarget the link in the middle of a chain",
      () => {
        symlinkSync("data/other.json", join(root, ".tmp-link"));
        renameSync(join(root, ".tmp-link"), join(root, "link.json"));
      },
      ["link.json", "chain.json"],
    );
    await w.step("edit the new target", () => write(root, "data/other.json", "oo"), [
      "link.json",
      "chain.json",
    ]);
    await w.step("edit the old target", () => write(root, "data/target.json", "333"), [
      "through.json",
      "absolute.json",
    ]);
    await w.step("remove the linked folder", () => unlinkSync(join(root, "folder-link")), [
      "through.json",
    ]);
    assert.deepEqual(w.errors, []);
  });

  it("keeps following a target that goes away and comes back, or is renamed over", async () => {
    const root = tempTree({ "data/target.json": "1" });
    symlinkSync("data/target.json", join(root, "link.json"));
    const w = await watching(root);

    await w.step("remove the target", () => unlinkSync(join(root, "data/target.json")), [
      "link.json",
    ]);
    await w.step("create it again", () => write(root, "data/target.json", "22"), ["link.json"]);
    await w.step(
      "an editor's save (a rename over the target)",
      () => {
        write(root, "data/.target.json.swp", "333");
        renameSync(join(root, "data/.target.json.swp"), join(root, "data/target.json"));
      },
      ["link.json"],
    );
    await w.step(
      "move the target's folder away",
      () => renameSync(join(root, "data"), join(root, "gone")),
      ["link.json"],
    );
    await w.step("and back", () => renameSync(join(root, "gone"), join(root, "data")), [
      "link.json",
    ]);
    await w.step("edit the target again", () => write(root, "data/target.json", "4444"), [
      "link.json",
    ]);
    assert.deepEqual(w.errors, []);
  });

  it("follows links made after start, moved in with a folder, and into ignored folders", async () => {
    const root = tempTree({ "data/target.json": "1", "build/out.json": "b" });
    const outside = tempTree({});
    const w = await watching(root, { ignoredFolders: () => (path) => path === "build" });

    await w.step(
      "make links",
      () => {
        symlinkSync("data/target.json", join(root, "late.json"));
        symlinkSync("build/out.json", join(root, "out.json"));
        symlinkSync("build/gen/x.json", join(root, "future.json"));
      },
      ["late.json", "out.json", "future.json"],
    );
    await w.step("edit the target", () => write(root, "data/target.json", "22"), ["late.json"]);
    await w.step("edit a target in an ignored folder", () => write(root, "build/out.json", "bb"), [
      "out.json",
    ]);
    await w.step("make a missing target's folder", () => mkdirSync(join(root, "build/gen")), [
      "future.json",
    ]);
    await w.step("write the missing target", () => write(root, "build/gen/x.json", "x"), [
      "future.json",
    ]);
    await w.step("edit it", () => write(root, "build/gen/x.json", "xx"), ["future.json"]);

    // Leads nowhere where it is made; into the root's data/ once its folder is moved in.
    mkdirSync(join(outside, "moved"));
    symlinkSync("../data/target.json", join(outside, "moved/in.json"));
    await w.step(
      "move a folder holding a link in",
      () => renameSync(join(outside, "moved"), join(root, "sub")),
      ["sub"],
    );
    await w.step("edit the target once more", () => write(root, "data/target.json", "333"), [
      "late.json",
      "sub/in.json",
    ]);
    assert.deepEqual(w.errors, []);
  });
});
