let listener: (() => void) | null = null;

/**
 * Calls `callback` whenever dirq is about to start a child process (a hook, a worker function),
 * before it starts; `null` stops calling. The one-shot CLI stops its children on Ctrl-C and
 * sets that up only once there is a child: listening for signals costs start-up time that a
 * statement starting no child need not pay.
 */
export function onChildStart(callback: (() => void) | null): void {
  listener = callback;
}

/** Says that a child process is about to start (see `onChildStart`). */
export function childStarting(): void {
  listener?.();
}
