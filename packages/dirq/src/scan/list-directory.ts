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
  /**
   * The names joined by NUL characters, in order, when the listing came that way (from the
   * native extension; `null` otherwise): a walk takes a folder of plain files from it with one
   * replace, and `names` is split from it only when asked for.
   */
  readonly joinedNames: string | null;
}

/** Type letters of a `Listing` (and of dirq-fs.c's listing), as char codes. */
export const DIRECTORY = 0x64; // d
export const FILE = 0x66; // f
export const SYMLINK = 0x6c; // l
export const OTHER = 0x6f; // o

const EMPTY: Listing = { names: [], types: "", joinedNames: null };

/** A native listing, its names split on first use. */
class JoinedListing implements Listing {
  private split: string[] | null = null;

  constructor(
    readonly types: string,
    readonly joinedNames: string,
  ) {}

  get names(): string[] {
    this.split ??= this.joinedNames.split("\0");
    return this.split;
  }
}

/** dirq-fs.c's listing: a type letter per entry, then a NUL before each name. */
function parseListing(listing: string): Listing {
  const split = listing.indexOf("\0");
  if (split === -1) return EMPTY;
  return new JoinedListing(listing.slice(0, split), listing.slice(split + 1));
}

/** Whether a listing has an entry named `name`, without splitting a joined one. */
export function hasName(listing: Listing, name: string): boolean {
  const joined = listing.joinedNames;
  if (joined === null) return listing.names.includes(name);
  return (
    joined === name ||
    joined.startsWith(`${name}\0`) ||
    joined.endsWith(`\0${name}`) ||
    joined.includes(`\0${name}\0`)
  );
}

/**
 * Characters whose UTF-16 order differs from the byte order of the name the file system has:
 * surrogates (characters beyond U+FFFF), and U+FFFD, which stands for bytes that are not valid
 * UTF-8 and sorted as those bytes.
 */
const OTHER_ORDER = /[\uD800-\uDFFF\uFFFD]/;

function typeOf(entry: Dirent): string {
  if (entry.isDirectory()) return "d";
  if (entry.isFile()) return "f";
  if (entry.isSymbolicLink()) return "l";
  return "o";
}

/**
 * Sorts a listing by name in UTF-16 order. The native listing comes sorted in byte order,
 * which is the same order unless a name has characters beyond U+FFFF: checking for them is
 * much cheaper than sorting again.
 */
function sortedByName(listing: Listing): Listing {
  if (listing.joinedNames !== null && !OTHER_ORDER.test(listing.joinedNames)) return listing;
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
    joinedNames: null,
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
    joinedNames: null,
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
  /** Tickets of the latest `queue`, the folder the walk will list last at the end. */
  private latest: number[] = [];
  /** Listings this thread made ahead of the walk while a thread listed the one it needed. */
  private readonly madeAhead = new Map<number, string>();

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
    this.latest = tickets.slice(0, accepted);
    return tickets;
  }

  /** A folder's entries (see `listDirectory`), from its queued listing when it has a ticket. */
  list(path: string | Buffer, ticket: number): Listing {
    if (ticket > 0 && this.ahead !== null) {
      const listing = this.takeListing(this.ahead, ticket);
      if (listing !== null) return sortedByName(parseListing(listing));
    }
    return listDirectory(path);
  }

  /**
   * A queued listing: done, or listed here when no thread began it. When a thread is listing
   * it, this thread lists the folder queued last meanwhile (the threads take a batch from its
   * start, so the two meet in the middle) rather than wait with a core idle. `null` when the
   * ticket was dropped or the folder cannot be read.
   */
  private takeListing(ahead: ReadAhead, ticket: number): string | null {
    const made = this.madeAhead.get(ticket);
    if (made !== undefined) {
      this.madeAhead.delete(ticket);
      return made;
    }
    for (;;) {
      const answer = ahead.take(ticket, "claim");
      if (typeof answer === "string") return answer;
      const last = this.latest.pop();
      if (last === undefined || last <= ticket) break;
      const later = ahead.take(last, "claim");
      if (typeof later === "string") this.madeAhead.set(last, later);
    }
    const answer = ahead.take(ticket, true);
    return typeof answer === "string" ? answer : null;
  }

  close(): void {
    this.madeAhead.clear();
    this.latest = [];
    this.ahead?.dropAll();
  }
}
