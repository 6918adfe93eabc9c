import { type Dirent, readdirSync } from "node:fs";
import { nativeFs, type ReadAhead } from "./native-fs.js";

/**
 * A folder's entries but `.` and `..`: their names, sorted by name in UTF-16 order, and each
 * one's type as a letter in `types` (`types.charCodeAt(i)` is entry i's: DIRECTORY, FILE,
 * SYMLINK or OTHER). Two flat values rather than an object per entry: a walk of 100,000 files
 * made 100,000 of those, and their garbage collection, for four letters.
 */
export interface Listing {
  readonly names: string[];
  readonly types: string;
}

/** Type letters of a `Listing` (and of dirq-fs.c's listing), as char codes. */
export const DIRECTORY = 0x64; // d
export const FILE = 0x66; // f
export const SYMLINK = 0x6c; // l
export const OTHER = 0x6f; // o

const EMPTY: Listing = { names: [], types: "" };

/** dirq-fs.c's listing: a type letter per entry, then a NUL before each name. */
function parseListing(listing: string): Listing {
  const split = listing.indexOf("\0");
  if (split === -1) return EMPTY;
  return { names: listing.slice(split + 1).split("\0"), types: listing.slice(0, split) };
}

function typeOf(entry: Dirent): string {
  if (entry.isDirectory()) return "d";
  if (entry.isFile()) return "f";
  if (entry.isSymbolicLink()) return "l";
  return "o";
}

/**
 * Sorts a listing by name in UTF-16 order. The native listing comes sorted in byte order,
 * which is the same order unless a name has characters beyond U+FFFF: a check is a tenth of
 * a sort.
 */
function sortedByName(listing: Listing): Listing {
  const { names, types } = listing;
  let sorted = true;
  for (let i = 1; i < names.length && sorted; i++) {
    sorted = (names[i - 1] as string) <= (names[i] as string);
  }
  if (sorted) return listing;
  const order = names.map((_, i) => i);
  order.sort((a, b) => {
    const x = names[a] as string;
    const y = names[b] as string;
    return x < y ? -1 : x > y ? 1 : 0;
  });
  return {
    names: order.map((i) => names[i] as string),
    types: order.map((i) => types[i] as string).join(""),
  };
}

/**
 * The entries of a folder but `.` and `..`, sorted by name (UTF-16 order), names decoded as
 * UTF-8 (a name that is not valid UTF-8 has U+FFFD in it, as with Node's `readdirSync`).
 * Through dirq's native extension when it is loaded and the path is text, else Node's
 * `readdirSync`; a folder that cannot be read throws Node's error either way (it is read again
 * from Node to get it).
 */
export function listDirectory(path: string | Buffer): Listing {
  if (typeof path === "string") {
    const listing = nativeFs()?.listDir(path) ?? null;
    if (listing !== null) return sortedByName(parseListing(listing));
  }
  const entries = readdirSync(path, { withFileTypes: true, encoding: "utf8" }) as Dirent[];
  return sortedByName({
    names: entries.map((entry) => entry.name),
    types: entries.map(typeOf).join(""),
  });
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
  list(path: string | Buffer, ticket: number): Listing {
    if (ticket > 0 && this.ahead !== null) {
      const listing = this.ahead.take(ticket, true);
      if (typeof listing === "string") return sortedByName(parseListing(listing));
    }
    return listDirectory(path);
  }

  close(): void {
    this.ahead?.dropAll();
  }
}
