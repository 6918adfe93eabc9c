import { type Dirent, readdirSync } from "node:fs";
import { nativeFs } from "./native-fs.js";

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
