import { type Dirent, readdirSync } from "node:fs";
import { nativeFs, type ReadAhead } from "./native-fs.js";

/** What the walk reads of a folder's entry: Node's `Dirent` has it, and so does a native one. */
export interface ListedEntry {
  readonly name: string;
  isDirectory(): boolean;
  isFile(): boolean;
  isSymbolicLink(): boolean;
}

/** Type letters of dirq-fs.c's listing, as char codes. */
const DIRECTORY = 0x64; // d
const FILE = 0x66; // f
const SYMLINK = 0x6c; // l

class NativeEntry implements ListedEntry {
  constructor(
    readonly name: string,
    private readonly type: number,
  ) {}

  isDirectory(): boolean {
    return this.type === DIRECTORY;
  }

  isFile(): boolean {
    return this.type === FILE;
  }

  isSymbolicLink(): boolean {
    return this.type === SYMLINK;
  }
}

function parseListing(listing: string): NativeEntry[] {
  const split = listing.indexOf("\0");
  if (split === -1) return [];
  const names = listing.slice(split + 1).split("\0");
  const entries = new Array<NativeEntry>(names.length);
  for (let i = 0; i < names.length; i++) {
    entries[i] = new NativeEntry(names[i] as string, listing.charCodeAt(i));
  }
  return entries;
}

/**
 * The entries of a folder but `.` and `..`, in no promised order, names decoded as UTF-8 (a
 * name that is not valid UTF-8 has U+FFFD in it, as with Node's `readdirSync`). Through dirq's
 * native extension when it is loaded and the path is text, else Node's `readdirSync`; a folder
 * that cannot be read throws Node's error either way (it is read again from Node to get it).
 */
export function listDirectory(path: string | Buffer): ListedEntry[] {
  if (typeof path === "string") {
    const listing = nativeFs()?.listDir(path) ?? null;
    if (listing !== null) return parseListing(listing);
  }
  return readdirSync(path, { withFileTypes: true, encoding: "utf8" }) as Dirent[];
}

/**
 * Lists the folders of one walk. With dirq's native extension it reads ahead: the walk tells
 * it which folders it will enter next (`queue`), the extension's thread lists them meanwhile,
 * and `list` takes each listing when the walk gets there. Without it, `list` is
 * `listDirectory`. One walk at a time per thread reads ahead (a fill); `close` drops what the
 * walk queued and did not take.
 */
export class FolderLister {
  private readonly ahead: ReadAhead | null;

  constructor(readAhead: boolean) {
    this.ahead = readAhead ? (nativeFs()?.readAhead ?? null) : null;
    // Whatever an earlier walk on this thread left (it ended early) is dropped.
    this.ahead?.dropAll();
  }

  get readsAhead(): boolean {
    return this.ahead !== null;
  }

  /** Queues folders (absolute paths) in the order the walk will list them: their tickets. */
  queue(paths: readonly string[]): number[] {
    const tickets = new Array<number>(paths.length).fill(0);
    if (this.ahead === null || paths.length === 0) return tickets;
    const { first, accepted } = this.ahead.list(paths);
    for (let i = 0; i < accepted; i++) tickets[i] = first + i;
    return tickets;
  }

  /** A folder's entries (see `listDirectory`), from its queued listing when it has a ticket. */
  list(path: string | Buffer, ticket: number): ListedEntry[] {
    if (ticket > 0 && this.ahead !== null) {
      const listing = this.ahead.take(ticket, true);
      if (typeof listing === "string") return parseListing(listing);
    }
    return listDirectory(path);
  }

  close(): void {
    this.ahead?.dropAll();
  }
}
