/**
 * A map keyed by folder keys (latin1 relative paths, `""` the root) that knows which keys have
 * entries under them, so forgetting a folder and what lies under it (`deleteTree`) looks past
 * the folder's own entry only when something lies under it. A checkout that renames or
 * removes thousands of folders forgets each one: a pass over every entry for each of them
 * made that the square of the folders' number, held on the main thread.
 */
export class FolderMap<V> extends Map<string, V> {
  /** The number of entries under each key that has some (the root's is the map's size). */
  private readonly below = new Map<string, number>();

  override set(key: string, value: V): this {
    if (!this.has(key)) this.count(key, 1);
    return super.set(key, value);
  }

  override delete(key: string): boolean {
    if (!super.delete(key)) return false;
    this.count(key, -1);
    return true;
  }

  override clear(): void {
    super.clear();
    this.below.clear();
  }

  /** Whether an entry lies strictly under `key`. */
  hasUnder(key: string): boolean {
    if (key === "") return this.size > (this.has("") ? 1 : 0);
    return this.below.has(key);
  }

  /** Deletes the entries at and under `key`; returns them (keys and values). */
  deleteTree(key: string): [string, V][] {
    const deleted: [string, V][] = [];
    if (this.has(key)) deleted.push([key, this.get(key) as V]);
    if (this.hasUnder(key)) {
      const prefix = key === "" ? "" : `${key}/`;
      for (const entry of this) {
        if (entry[0] !== key && entry[0].startsWith(prefix)) deleted.push(entry);
      }
    }
    for (const [each] of deleted) this.delete(each);
    return deleted;
  }

  /** Counts `key`'s entry (`by` 1) or its removal (-1) in each folder above it. */
  private count(key: string, by: number): void {
    for (let at = key.lastIndexOf("/"); at > 0; at = key.lastIndexOf("/", at - 1)) {
      const above = key.slice(0, at);
      const under = (this.below.get(above) ?? 0) + by;
      if (under === 0) this.below.delete(above);
      else this.below.set(above, under);
    }
  }
}
