import { spawnSync } from "node:child_process";

/** A small seeded PRNG (mulberry32): the same seed gives the same cases on every machine. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)] as T;
}

/** The seed for a harness: `DIRQ_TEST_SEED` when set (to replay a failure), else `fallback`. */
export function harnessSeed(fallback: number): number {
  const fromEnv = process.env.DIRQ_TEST_SEED;
  return fromEnv === undefined ? fallback : Number(fromEnv);
}

/** Runs a reference tool and returns its stdout; throws with its stderr when it fails. */
export function reference(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string> },
): string {
  const result = spawnSync(command, args, {
    cwd: options.cwd,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
    env: { ...process.env, ...options.env },
  });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} failed (${result.status}): ${result.stderr}`);
  }
  return result.stdout;
}

/** Items of `a` missing from `b`. */
export function missingFrom(a: Iterable<string>, b: ReadonlySet<string>): string[] {
  return [...a].filter((item) => !b.has(item));
}
