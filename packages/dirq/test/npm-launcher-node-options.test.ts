import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { runDirq, tempTree } from "./helpers.js";
import { processTree, queryRows, startServer } from "./server-support.js";

/**
 * Node's own options, given as a user gives them (`node <options> dirq.cjs …`, or in
 * NODE_OPTIONS), for each kind: a memory limit (a V8 option, which Node refuses in a worker
 * thread), the inspector (which a child must not open again on the same port) and an
 * experimental feature. The server (its scan thread, its query processes) and a one-shot
 * query (a hook's spawning thread, a worker-backed function) run with each, and the query
 * processes carry what they accept.
 */

const KINDS = [
  { kind: "memory", options: ["--max-old-space-size=4096"], inChildren: true },
  { kind: "inspector", options: ["--inspect=127.0.0.1:0"], inChildren: false },
  { kind: "experimental", options: ["--experimental-vm-modules"], inChildren: true },
] as const;

/** A worker-backed function's program (not Node: the options here are for dirq's own). */
const WORKER = `import json, sys
for line in sys.stdin:
    request = json.loads(line)
    print(json.dumps({"id": request["id"], "result": str(request["args"][0]).upper()}), flush=True)
`;

const CONFIG = `
[[dirq.function]]
name = "up"
command = "python3 worker.py"
deterministic = true

[[table]]
name = "notes"
glob = "notes/*.txt"
on-file = "sh words.sh {path}"
`;

const root = tempTree({
  "notes/a.txt": "two words\n",
  "notes/b.txt": "three more words\n",
  "worker.py": WORKER,
  "words.sh": `printf '[{"words": %s}]' "$(wc -w < "$1")"\n`,
  "dirq.toml": CONFIG,
});

const SQL = "SELECT up(_dirq_file_path) AS file, words FROM notes ORDER BY file";
const ROWS = [
  { file: "NOTES/A.TXT", words: 2 },
  { file: "NOTES/B.TXT", words: 3 },
];

/** How to give the options: on Node's command line, or in NODE_OPTIONS. */
const WAYS = [
  { way: "node <options> dirq.cjs", node: (options: readonly string[]) => options, env: {} },
  {
    way: "NODE_OPTIONS",
    node: () => [],
    env: (options: readonly string[]) => ({ NODE_OPTIONS: options.join(" ") }),
  },
] as const;

/** The Node options a process was started with: on its command line and in NODE_OPTIONS. */
function optionsOf(pid: number): string {
  const read = (file: string) => readFileSync(`/proc/${pid}/${file}`, "utf8").split("\0");
  const nodeOptions = read("environ").find((entry) => entry.startsWith("NODE_OPTIONS="));
  return [...read("cmdline"), nodeOptions ?? ""].join(" ");
}

/** The inspector's greeting: printed once for each process that opened one. */
function inspectorsOpened(stderr: string): number {
  return stderr.match(/^Debugger listening on /gm)?.length ?? 0;
}

describe("Node's own options pass through to dirq's threads and query processes", () => {
  for (const { kind, options, inChildren } of KINDS) {
    for (const way of WAYS) {
      const env = typeof way.env === "function" ? way.env(options) : way.env;

      it(`${kind} (${options.join(" ")}) by ${way.way}: the server answers`, async () => {
        const server = await startServer(["-c", "dirq.toml", "--port", "0"], {
          cwd: root,
          node: way.node(options),
          env,
        });
        try {
          assert.deepEqual(await queryRows(server, SQL), ROWS);
          const children = processTree(server.pid).slice(1);
          const queryProcesses = children.filter((pid) => optionsOf(pid).includes("query-process"));
          assert.ok(queryProcesses.length > 0, "a query process answered");
          for (const pid of queryProcesses) {
            const given = options.every((option) => optionsOf(pid).includes(option));
            assert.equal(given, inChildren, `query process ${pid}: ${optionsOf(pid)}`);
          }
          assert.equal(inspectorsOpened(server.stderr()), kind === "inspector" ? 1 : 0);
          assert.doesNotMatch(server.stderr(), /internal error|address already in use/);
        } finally {
          await server.kill();
        }
      });

      it(`${kind} (${options.join(" ")}) by ${way.way}: a one-shot query answers`, async () => {
        const run = await runDirq([SQL, "-c", "dirq.toml"], {
          cwd: root,
          node: way.node(options),
          env,
        });
        assert.equal(run.code, 0, run.stderr);
        assert.deepEqual(JSON.parse(run.stdout), ROWS);
        assert.equal(inspectorsOpened(run.stderr), kind === "inspector" ? 1 : 0);
        assert.doesNotMatch(run.stderr, /internal error|address already in use/);
      });
    }
  }
});
