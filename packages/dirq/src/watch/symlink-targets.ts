import { lstatSync, readlinkSync, realpathSync } from "node:fs";

/*
 * Keys here are the watcher's: raw paths held as latin1 strings (one character per byte, so a
 * name that is not UTF-8 keeps its identity), relative to the root, `/`-separated; `""` is the
 * root. Absolute paths are held the same way while a link is looked up.
 */

/** Linux's own limit on links followed in one lookup (MAXSYMLINKS): past it, a path is a loop. */
const MAX_HOPS = 40;

function latin1(path: string): Buffer {
  return Buffer.from(path, "latin1");
}

/** The folder of a key (or of an absolute path); `""` for the top. */
export function parentKey(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash === -1 ? "" : path.slice(0, slash);
}

/** The path reported to the handler: UTF-8, with U+FFFD for bytes that are not. */
export function reported(key: string): string {
  return Buffer.from(key, "latin1").toString("utf8");
}

/**
 * The paths inside the root that decide what the link at `key` resolves to: every link the
 * lookup passes through and the path it ends at, existing or not, as relative keys. A target
 * that does not exist (yet) is kept where it would be, so the link is reported again when it
 * appears; a loop keeps the links that make it, so undoing one is seen. `null` when `key` is
 * not a link (now).
 */
function dependenciesOf(rootAbsolute: string, key: string): string[] | null {
  const prefix = rootAbsolute.endsWith("/") ? rootAbsolute : `${rootAbsolute}/`;
  const inside = (absolute: string): string | null =>
    absolute.startsWith(prefix) ? absolute.slice(prefix.length) : null;
  let target: string;
  try {
    target = readlinkSync(latin1(`${prefix}${key}`), { encoding: "buffer" }).toString("latin1");
  } catch {
    return null;
  }
  const found: string[] = [];
  // The folder the lookup stands in, absolute without a trailing slash ("" is `/`); the
  // link's own folders are real ones (the watcher never lists through a symlinked folder).
  let folder = target.startsWith("/") ? "" : `${prefix}${parentKey(key)}`.replace(/\/$/, "");
  let rest = target.split("/");
  let hops = 1;
  let missing = false;
  let looped = false;
  while (rest.length > 0 && !looped) {
    const name = rest.shift() as string;
    if (name === "" || name === ".") continue;
    if (name === "..") {
      folder = parentKey(folder);
      continue;
    }
    const path = `${folder}/${name}`;
    if (missing) {
      folder = path;
      continue;
    }
    let stats;
    try {
      stats = lstatSync(latin1(path), { throwIfNoEntry: false });
    } catch {
      // ENOTDIR, EACCES, ENAMETOOLONG: nothing further down can be looked up either.
      stats = undefined;
    }
    if (stats?.isSymbolicLink()) {
      const own = inside(path);
      if (own !== null) found.push(own);
      looped = ++hops > MAX_HOPS;
      let next = "";
      try {
        next = readlinkSync(latin1(path), { encoding: "buffer" }).toString("latin1");
      } catch {
        // Gone since its lstat: the lookup now ends here.
        missing = true;
        folder = path;
        continue;
      }
      if (next.startsWith("/")) folder = "";
      rest = [...next.split("/"), ...rest];
      continue;
    }
    if (stats === undefined) missing = true;
    folder = path;
  }
  if (!looped) {
    const end = inside(folder);
    if (end !== null && end !== "") found.push(end);
  }
  return [...new Set(found)];
}

/**
 * The symlinks of a watched tree and the paths their targets depend on. An edit reaches the
 * watcher under the target's path only, while a link to a file is a row of its own with the
 * target's size, times and content: whoever reports a change must report the links that
 * lead to it too. Only what lies inside the root is kept: a link leading outside is never a
 * row, and nothing outside is watched.
 */
export class SymlinkTargets {
  private readonly rootAbsolute: string;
  /** Each link (key) and what its lookup depends on (keys). */
  private readonly links = new Map<string, readonly string[]>();
  /** Folder (key) → the links in it, so a folder that goes away drops its links at once. */
  private readonly byFolder = new Map<string, Set<string>>();
  /**
   * Reported path → links whose lookup depends on that path or on something below it: a
   * changed folder (moved, removed, read again after an overflow) reaches every link through it.
   */
  private readonly byPath = new Map<string, Set<string>>();
  /** Grows whenever a link is recorded, read again or forgotten. */
  version = 0;

  constructor(root: string) {
    let real = root;
    try {
      real = realpathSync(root);
    } catch {
      // A root that cannot be resolved has no links to follow either.
    }
    this.rootAbsolute = Buffer.from(real, "utf8").toString("latin1");
  }

  /**
   * Reads the entry at `key` again: records it when it is a link (with what it resolves
   * through now), forgets it when it is not.
   */
  update(key: string): void {
    this.forget(key);
    this.version++;
    const found = dependenciesOf(this.rootAbsolute, key);
    if (found === null || found.length === 0) return;
    this.links.set(key, found);
    add(this.byFolder, parentKey(key), key);
    for (const path of found) {
      for (const each of selfAndFolders(reported(path))) add(this.byPath, each, key);
    }
  }

  /** Forgets the link at `key`, or every link below it when it is a folder that went away. */
  forgetUnder(key: string): void {
    if (key === "") {
      this.clear();
      return;
    }
    this.forget(key);
    const prefix = `${key}/`;
    for (const [folder, links] of [...this.byFolder]) {
      if (folder === key || folder.startsWith(prefix)) for (const link of links) this.forget(link);
    }
  }

  /**
   * A folder moved from `from` to `to` (keys): its links are recorded under their new names,
   * read again (a relative target moved with them, an absolute one may now be broken).
   * Returns their new keys.
   */
  moveUnder(from: string, to: string): string[] {
    const prefix = `${from}/`;
    const moved: string[] = [];
    for (const [folder, links] of this.byFolder) {
      if (folder === from || folder.startsWith(prefix)) moved.push(...links);
    }
    return moved.map((link) => {
      this.forget(link);
      const key = `${to}${link.slice(from.length)}`;
      this.update(key);
      return key;
    });
  }

  clear(): void {
    this.version++;
    this.links.clear();
    this.byFolder.clear();
    this.byPath.clear();
  }

  /** Adds to `into` the links (keys) whose target a change of the reported `path` may change. */
  linksAt(path: string, into: Set<string>): void {
    const links = this.byPath.get(path);
    if (links !== undefined) for (const link of links) into.add(link);
  }

  /** Every path (key) some link's lookup depends on. */
  dependencies(): Set<string> {
    const all = new Set<string>();
    for (const found of this.links.values()) for (const path of found) all.add(path);
    return all;
  }

  private forget(key: string): void {
    const found = this.links.get(key);
    if (found === undefined) return;
    this.version++;
    this.links.delete(key);
    remove(this.byFolder, parentKey(key), key);
    for (const path of found) {
      for (const each of selfAndFolders(reported(path))) remove(this.byPath, each, key);
    }
  }
}

function add(index: Map<string, Set<string>>, at: string, link: string): void {
  let links = index.get(at);
  if (links === undefined) index.set(at, (links = new Set()));
  links.add(link);
}

function remove(index: Map<string, Set<string>>, at: string, link: string): void {
  const links = index.get(at);
  links?.delete(link);
  if (links?.size === 0) index.delete(at);
}

/** `a/b/c` → `a/b/c`, `a/b`, `a`. */
function selfAndFolders(path: string): string[] {
  const all = [path];
  for (let at = path.lastIndexOf("/"); at > 0; at = path.lastIndexOf("/", at - 1)) {
    all.push(path.slice(0, at));
  }
  return all;
}
