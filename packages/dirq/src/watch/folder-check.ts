import { type BigIntStats, lstatSync, readdirSync } from "node:fs";

/**
 * `dirq_check_folder` (native/dirq-fs.c) in JavaScript, for when dirq's native extension is
 * not loaded: the same blob, from Node's fs. Its signatures are its own (a hash of the same
 * fields), which is all a check needs: it compares a folder's blob with its own previous one.
 */

const DIRECTORY = 0x64; // d
/** Upper case: changed since `since`. */
const CHANGED_SINCE = 0x20;
const NUL = Buffer.alloc(1);

/** Two 32-bit FNV-1a lanes over `text`, as 8 bytes. */
function signatureBytes(text: string): Buffer {
  let a = 0x811c9dc5;
  let b = 0x01000193;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code ^ (a >>> 7), 0x5bd1e995);
  }
  const bytes = Buffer.alloc(8);
  bytes.writeUInt32LE(a >>> 0, 0);
  bytes.writeUInt32LE(b >>> 0, 4);
  return bytes;
}

function typeLetter(stats: BigIntStats): number {
  if (stats.isDirectory()) return DIRECTORY;
  if (stats.isFile()) return 0x66; // f
  if (stats.isSymbolicLink()) return 0x6c; // l
  return 0x6f; // o
}

/** One entry's bytes: its letter, name, NUL and (not a folder) signature; null when gone. */
function entryBytes(folder: Buffer, name: Buffer, isFolder: boolean, since: number | null) {
  if (isFolder) return Buffer.concat([Buffer.from([DIRECTORY]), name, NUL]);
  let stats: BigIntStats;
  try {
    stats = lstatSync(Buffer.concat([folder, Buffer.from("/"), name]), { bigint: true });
  } catch {
    return null; // gone between the listing and its stat: the next check reads it as gone
  }
  let letter = typeLetter(stats);
  if (letter === DIRECTORY) return Buffer.concat([Buffer.from([DIRECTORY]), name, NUL]);
  const recent =
    since !== null && Math.max(Number(stats.mtimeNs), Number(stats.ctimeNs)) / 1e6 >= since;
  if (recent) letter -= CHANGED_SINCE;
  const fields = `${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}:${stats.ino}:${stats.mode}`;
  return Buffer.concat([Buffer.from([letter]), name, NUL, signatureBytes(fields)]);
}

/** A folder's check blob (see dirq_check_folder), `null` when the folder cannot be read. */
export function checkFolderInJs(folder: Buffer, since: number | null): Buffer | null {
  let entries;
  try {
    entries = readdirSync(folder, { withFileTypes: true, encoding: "buffer" });
  } catch {
    return null;
  }
  entries.sort((x, y) => Buffer.compare(x.name, y.name));
  const parts: Buffer[] = [];
  for (const entry of entries) {
    const bytes = entryBytes(folder, entry.name, entry.isDirectory(), since);
    if (bytes !== null) parts.push(bytes);
  }
  return Buffer.concat(parts);
}
