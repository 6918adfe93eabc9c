// The CPU each test file costs, children included: loaded into every test file's process with
// `--import`, it appends one line when the process exits: the file's name, its own CPU (user and
// system, in clock ticks) and that of the children it waited for, and its wall milliseconds.
// The test runner passes its own `--import` on to the files it starts; the CLI processes the
// tests spawn do not get it, so their CPU is in the children's columns of the file that ran them.
//
//   cd packages/dirq && TEST_CPU_LOG=/tmp/cpu.log \
//     node --import ../../bench/test-cpu.mjs --test --test-concurrency=3 dist/test/*.test.js
//   sort -t$'\t' -k1,1 /tmp/cpu.log   # name, utime, stime, cutime, cstime, wall ms
//
// Linux only (it reads /proc/self/stat); clock ticks are hundredths of a second on Linux.
import { appendFileSync, readFileSync } from "node:fs";
import { basename } from "node:path";

const LOG = process.env.TEST_CPU_LOG ?? "test-cpu.log";
const started = Date.now();

process.on("exit", () => {
  const stat = readFileSync("/proc/self/stat", "utf8");
  // Fields after the command name (which may hold spaces): state is field 3, utime field 14.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const [utime, stime, cutime, cstime] = fields.slice(11, 15);
  const file = process.argv[1] === undefined ? "(runner)" : basename(process.argv[1]);
  const line = [file, utime, stime, cutime, cstime, Date.now() - started].join("\t");
  appendFileSync(LOG, `${line}\n`);
});
