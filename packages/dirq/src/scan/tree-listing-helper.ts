import { HelperThread, type HelperThreadData } from "./helper-thread.js";
import { type SkippedPath, walkSelection } from "./walk.js";

/**
 * A thread that lists folder trees for the calling thread (see tree-listing-helper-thread.ts):
 * a checkout renames a thousand folders at once, and each move's destination is listed
 * before its rows are renamed. The calling thread takes the folders in order, listing itself
 * each one the thread has not claimed; the thread claims them from the last one back. Each
 * folder is claimed once (a compare-and-swap on its slot), so neither thread waits for the
 * other but where they meet, and the calling thread applies one move while the thread lists
 * the ones after it. One message per folder listed: a move's folder holds tens or hundreds of
 * files, and a round trip between threads costs about as much as listing a few (FACTS.md).
 */

/** Slots of the counters shared with the thread: 1 once it listens; the listings it posted. */
export const Slot = { ready: 0, posted: 1 } as const;

/** A folder tree's files (relative, `/`-separated) and what could not be read under it. */
export interface TreeListing {
  paths: string[];
  skipped: SkippedPath[];
}

/** What the thread is given: the folders to list, and one claim slot per folder. */
export interface ListingJob {
  job: number;
  root: string;
  folders: readonly string[];
  claims: Int32Array;
}

/**
 * One folder listed: its paths joined by NUL (no file name holds one), one string to copy;
 * `null` when the listing failed there (the calling thread lists it again, and reports).
 */
export interface ListingAnswer {
  job: number;
  index: number;
  paths: string | null;
  skipped: SkippedPath[];
}

export type TreeListingData = HelperThreadData;

/**
 * Lists `folder`'s tree under `root` as a move's destination is listed (on either thread):
 * every file, with the built-in skips; ignore files are not read (a move's files are
 * checked against the rules when it is applied).
 */
export function listTree(root: string, folder: string): TreeListing {
  const walked = walkSelection({
    root,
    selection: { kind: "tree", base: folder },
    useGitignore: false,
  });
  return { paths: walked.paths, skipped: walked.skipped };
}

/** Claims folder `index` of a job for the thread that calls it: `false` when the other one has. */
export function claimFolder(claims: Int32Array, index: number): boolean {
  return Atomics.compareExchange(claims, index, 0, 1) === 0;
}

/** How long the calling thread blocks at most between looks at a failed thread. */
const WAIT_MS = 20;
/**
 * How long it waits at most for a folder the thread claimed before listing it itself: a
 * thread that stopped is only told of on the event loop, which the waiting thread holds.
 */
const MAX_WAIT_MS = 2000;

export class TreeListingHelper {
  private readonly thread = new HelperThread(
    new URL("./tree-listing-helper-thread.js", import.meta.url),
    2,
    Slot.ready,
  );
  private jobs = 0;
  /** The listings of each job still taken from, as they arrive. */
  private readonly arrived = new Map<number, Map<number, TreeListing | null>>();

  constructor(private readonly root: string) {}

  /** Starts the thread (once); `list` starts it too. */
  start(): void {
    this.thread.start({});
    // Idle between bursts, and asked only synchronously (`take`).
    this.thread.unref();
  }

  /** Folders the thread has listed so far, over all `list` calls. */
  get listedOnThread(): number {
    return Atomics.load(this.thread.counters, Slot.posted);
  }

  /** Lists `folders`, the thread from the last one back: take each in order with `take`. */
  list(folders: readonly string[]): TreeListings {
    this.start();
    const job = ++this.jobs;
    const claims = new Int32Array(new SharedArrayBuffer(4 * Math.max(folders.length, 1)));
    const arrived = new Map<number, TreeListing | null>();
    this.arrived.set(job, arrived);
    this.thread.post({ job, root: this.root, folders, claims } satisfies ListingJob);
    return {
      take: (index) => this.take(folders, claims, arrived, index),
      close: () => {
        // Whatever the thread has not claimed yet it never lists.
        for (let index = 0; index < folders.length; index++) claimFolder(claims, index);
        this.arrived.delete(job);
      },
    };
  }

  private take(
    folders: readonly string[],
    claims: Int32Array,
    arrived: Map<number, TreeListing | null>,
    index: number,
  ): TreeListing {
    const here = () => listTree(this.root, folders[index] as string);
    if (claimFolder(claims, index)) return here();
    const deadline = performance.now() + MAX_WAIT_MS;
    for (;;) {
      const seen = Atomics.load(this.thread.counters, Slot.posted);
      this.receive();
      const listing = arrived.get(index);
      if (listing !== undefined) {
        arrived.delete(index);
        return listing ?? here();
      }
      // A thread that failed after claiming the folder never lists it.
      if (this.thread.failed || performance.now() > deadline) return here();
      Atomics.wait(this.thread.counters, Slot.posted, seen, WAIT_MS);
    }
  }

  /** Takes in every listing that has arrived, to the job it is of. */
  private receive(): void {
    for (;;) {
      const answer = this.thread.nextAnswer() as ListingAnswer | undefined;
      if (answer === undefined) return;
      const { job, index, paths, skipped } = answer;
      const listing =
        paths === null ? null : { paths: paths === "" ? [] : paths.split("\0"), skipped };
      this.arrived.get(job)?.set(index, listing);
    }
  }

  /** Stops the thread, if one was started. */
  async close(): Promise<void> {
    this.arrived.clear();
    await this.thread.close();
  }
}

/** One `list` call's folders, taken in order. */
export interface TreeListings {
  /** Folder `index`'s listing: the thread's, or listed here when the thread has not claimed it. */
  take(index: number): TreeListing;
  /** Done taking: the thread lists no more of these folders. */
  close(): void;
}
