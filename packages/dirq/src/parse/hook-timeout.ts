/** A hook's time limit: its default, and the check of a value a user gave. */

/** A hook's time limit when nothing sets one. */
export const DEFAULT_HOOK_TIMEOUT_SECONDS = 60;

/**
 * How long one hook may run: `seconds` (0: no limit), and what changes it, said in the
 * message of a hook stopped at the limit (`timeout = 5 in a.toml: table[0]`).
 */
export interface HookTimeLimit {
  seconds: number;
  setBy: string;
}

/** The most seconds a limit may have: a longer timer would fire at once. */
export const MAX_HOOK_TIMEOUT_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

/**
 * A limit in seconds as a user wrote it, checked: a number, 0 or more, at most
 * MAX_HOOK_TIMEOUT_SECONDS. Returns the problem, or `null`.
 */
export function hookTimeoutProblem(value: unknown): string | null {
  if (typeof value !== "number" || !Number.isFinite(value)) {
    return "expected a number of seconds (0 = no limit)";
  }
  if (value < 0) return "expected a number of seconds, 0 or more (0 = no limit)";
  if (value > MAX_HOOK_TIMEOUT_SECONDS) {
    return `expected at most ${MAX_HOOK_TIMEOUT_SECONDS} seconds (about 24 days); 0 = no limit`;
  }
  return null;
}

/** The limit `--hook-timeout <seconds>` sets; `undefined` (the default) when not given. */
export function flagTimeLimit(seconds: number | null | undefined): HookTimeLimit | undefined {
  return seconds === null || seconds === undefined
    ? undefined
    : { seconds, setBy: `--hook-timeout ${seconds}` };
}
