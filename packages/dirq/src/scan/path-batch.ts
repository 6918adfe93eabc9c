/** A run of files of one folder: `prefix` (the folder's path and `/`, or '') before each name. */
export interface FolderRun {
  readonly prefix: string;
  /** The names, joined by NUL characters. */
  readonly names: string;
}

/**
 * A batch of relative file paths in walk order, as the walk found them: runs of one folder's
 * files (a prefix and the names as one string) and single paths. The paths joined by NUL
 * characters (a path never holds one) are made only for a consumer that asks for them, as is
 * the array of paths: the native extension stats and inserts the joined string as it is
 * (native/dirq-fs.c), and a fill that reads no column of the table needs only the count.
 */
export class PathBatch {
  private joinedPaths: string | null = null;
  private split: readonly string[] | null = null;

  constructor(
    private readonly parts: readonly (string | FolderRun)[],
    /** How many paths. */
    readonly count: number,
    /** Raw absolute paths of the batch's files whose names are not valid UTF-8. */
    readonly rawPaths: ReadonlyMap<string, Buffer> = new Map(),
  ) {}

  static of(paths: readonly string[], rawPaths?: ReadonlyMap<string, Buffer>): PathBatch {
    const batch = new PathBatch([], paths.length, rawPaths);
    batch.joinedPaths = paths.join("\0");
    batch.split = paths;
    return batch;
  }

  /** The paths joined by NUL characters ('' for none). */
  get joined(): string {
    this.joinedPaths ??= this.parts.map(joinedPart).join("\0");
    return this.joinedPaths;
  }

  /** The paths, in order. */
  get paths(): readonly string[] {
    this.split ??= this.count === 0 ? [] : this.joined.split("\0");
    return this.split;
  }
}

function joinedPart(part: string | FolderRun): string {
  if (typeof part === "string") return part;
  const { prefix, names } = part;
  return prefix === "" ? names : prefix + names.replaceAll("\0", `\0${prefix}`);
}
