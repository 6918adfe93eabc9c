import { closeSync, openSync, readSync } from "node:fs";

/**
 * CPU time of the calling thread alone, in microseconds: what a live query's file-by-file run
 * costs on the main thread, without the refresh's threads that run beside it (which
 * `process.cpuUsage` counts too). Linux gives it to the nanosecond in
 * `/proc/thread-self/schedstat`; elsewhere it falls back to the whole process's CPU time.
 */

const SCHEDSTAT = "/proc/thread-self/schedstat";

/** The open schedstat file of this thread; `null` where there is none. */
let schedstat: number | null | undefined;
const buffer = Buffer.alloc(64);

function openSchedstat(): number | null {
  try {
    const fd = openSync(SCHEDSTAT, "r");
    // The file names the thread that opened it: keep it only if it reads as expected.
    if (readSync(fd, buffer, 0, buffer.length, 0) > 0) return fd;
    closeSync(fd);
  } catch {
    // Not Linux, or no scheduler statistics: the process's CPU time stands in.
  }
  return null;
}

/** CPU microseconds this thread (or, without schedstat, this process) has used so far. */
export function threadCpuMicros(): number {
  if (schedstat === undefined) schedstat = openSchedstat();
  if (schedstat !== null) {
    // The file gives the time the scheduler last accounted, which for the running thread lags
    // by up to a tick: a run of a tenth of a millisecond mostly read as 0, now and then as
    // milliseconds of the work before it. Asking for the process's usage makes the kernel
    // account the calling thread's time up to now first.
    process.cpuUsage();
    const length = readSync(schedstat, buffer, 0, buffer.length, 0);
    const nanos = Number(buffer.toString("latin1", 0, length).split(" ")[0]);
    if (Number.isFinite(nanos)) return nanos / 1000;
  }
  const used = process.cpuUsage();
  return used.user + used.system;
}
