/**
 * A batch of relative file paths in walk order, kept as one string of paths joined by NUL
 * characters (a path never holds one): the walk joins a folder's run of files with one `join`,
 * the native extension stats and inserts the string as it is (native/dirq-fs.c), and the
 * array of paths is made only for a consumer that asks for it.
 */
export class PathBatch {
  private split: readonly string[] | null = null;

  constructor(
    /** The paths joined by NUL characters ('' for none). */
    readonly joined: string,
    /** How many paths. */
    readonly count: number,
    /** Raw absolute paths of the batch's files whose names are not valid UTF-8. */
    readonly rawPaths: ReadonlyMap<string, Buffer> = new Map(),
  ) {}

  static of(paths: readonly string[], rawPaths?: ReadonlyMap<string, Buffer>): PathBatch {
    const batch = new PathBatch(paths.join("\0"), paths.length, rawPaths);
    batch.split = paths;
    return batch;
  }

  /** The paths, in order. */
  get paths(): readonly string[] {
    this.split ??= this.count === 0 ? [] : this.joined.split("\0");
    return this.split;
  }
}
