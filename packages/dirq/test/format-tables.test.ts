import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from "node:child_process";
import {
  appendFileSync,
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { describe, it } from "node:test";
import { isDirqError, open, type WatchEvent as SdkRowEvent } from "../src/index.js";
import { DIRQ_BIN, python3, runDirq, type RunResult, shellHook, withoutCommit } from "./helpers.js";
import {
  assertJsonError,
  type EventStream,
  openReadyEvents,
  postQuery,
  queryRows,
  request,
  type RowEvent,
  runServerToExit,
  type ServerProcess,
  serverFixtures,
} from "./server-support.js";
import { KEY, TerminalSession } from "./terminal.js";

/*
 * Built-in formats end to end: a `[[table]]` with `format` (and `each`), `--parse` for
 * path-tables and the SDK's `format` are read by dirq itself, and everything else (the server's
 * answers and events, the REPL, the SDK, --persist, schema and ddl, per-file failures) treats
 * such a table exactly as a hook table. Every test runs the built CLI as a user would: real
 * files in a temporary folder, real processes, HTTP and SSE over loopback.
 */

/** Generous: the machine is shared; a test waits for an event, never for a time. */
const WAIT = 60_000;

const { tree, serve } = serverFixtures();

let writes = 0;

/** Writes a file atomically (a temporary name, then a rename), as editors save. */
function write(root: string, path: string, content: string | Buffer): void {
  mkdirSync(dirname(join(root, path)), { recursive: true });
  const temporary = join(root, dirname(path), `.${process.pid}-${++writes}.tmp`);
  writeFileSync(temporary, content);
  renameSync(temporary, join(root, path));
}

interface Item {
  id: number;
  name: string;
}

/** A JSON file whose rows are under `items` (a table with `each = "items"`). */
function itemsFile(items: readonly Item[]): string {
  return `${JSON.stringify({ items })}\n`;
}

/** Two format tables: JSON files with their rows under `items`, and JSON Lines files. */
const SERVER_CONFIG = `[[table]]
name = "items"
glob = "items/*.json"
format = "json"
each = "items"

[[table]]
name = "log"
glob = "log/*.jsonl"
format = "jsonl"
`;

function serverTree(): string {
  return tree({
    "dirq.toml": SERVER_CONFIG,
    "items/a.json": itemsFile([
      { id: 1, name: "one" },
      { id: 2, name: "two" },
    ]),
    "items/b.json": itemsFile([{ id: 3, name: "three" }]),
    "log/x.jsonl": '{"n":1,"msg":"hi"}\n{"n":2,"msg":"there"}\n',
    "log/w.jsonl": '{"n":7,"msg":"other"}\n',
  });
}

const ITEMS_SQL = "SELECT _dirq_file_path AS f, id, name FROM items ORDER BY id";
const LOG_SQL = "SELECT _dirq_file_path AS f, n, msg FROM log ORDER BY n";

/** A one-shot run of `sql` with `args`, as a user types it. */
function oneShot(root: string, sql: string, args: readonly string[] = []): Promise<RunResult> {
  return runDirq([sql, "--format", "json", ...args], { cwd: root });
}

/** The `dirq: skipped <path>: <reason>` lines of a run's stderr, sorted. */
function skippedLines(stderr: string): string[] {
  return stderr
    .split("\n")
    .filter((line) => line.startsWith("dirq: skipped "))
    .sort();
}

/** Row frames about `file` from frame `from` on, once `done` holds for them. */
async function eventsFor(
  stream: EventStream,
  from: number,
  file: string,
  done: (events: RowEvent[]) => boolean,
): Promise<RowEvent[]> {
  let found: RowEvent[] = [];
  await stream.until(
    () => {
      found = stream.rowsFrom(from).filter((row) => row.file_path === file);
      return done(found);
    },
    `events for ${file}`,
    WAIT,
  );
  return found;
}

const has =
  (action: RowEvent["action"], count = 1) =>
  (events: RowEvent[]) =>
    events.filter((event) => event.action === action).length >= count;

let sentinels = 0;

/**
 * Writes a new file in `dir` (`items/`, the `items` table's folder, or `data/` for a table of
 * plain JSON objects) and waits for its insert: every change made before it has been applied
 * (and its events sent) by then.
 */
async function settle(stream: EventStream, root: string, dir = "items"): Promise<void> {
  const id = 1000 + ++sentinels;
  const name = `${dir}/zz-sentinel-${sentinels}.json`;
  const row = { id, name: "sentinel" };
  write(root, name, dir === "items" ? itemsFile([row]) : JSON.stringify(row));
  await eventsFor(stream, 0, name, has("insert"));
}

/** The server answers `sql` with exactly the bytes a fresh one-shot scan prints. */
async function assertServerEqualsOneShot(
  server: ServerProcess,
  root: string,
  sql: string,
): Promise<string> {
  const answer = await postQuery(server, sql);
  assert.equal(answer.status, 200, `${sql}: ${answer.text}`);
  const fresh = await oneShot(root, sql, ["-c", "dirq.toml"]);
  assert.ok(fresh.code === 0 || fresh.code === 23, fresh.stderr);
  assert.equal(answer.text, fresh.stdout, `server vs one-shot for ${sql}`);
  return fresh.stderr;
}

describe("format tables in the server", { concurrency: true }, () => {
  it("POST /query answers what a one-shot query prints; hidden columns stay hidden", async () => {
    const root = serverTree();
    const server = await serve(root, ["-c", "dirq.toml"]);
    assert.deepEqual(await queryRows(server, ITEMS_SQL), [
      { f: "items/a.json", id: 1, name: "one" },
      { f: "items/a.json", id: 2, name: "two" },
      { f: "items/b.json", id: 3, name: "three" },
    ]);
    assert.deepEqual(await queryRows(server, "SELECT * FROM log ORDER BY n"), [
      { n: 1, msg: "hi" },
      { n: 2, msg: "there" },
      { n: 7, msg: "other" },
    ]);
    for (const sql of [ITEMS_SQL, LOG_SQL, "SELECT * FROM items ORDER BY id"]) {
      assert.equal(await assertServerEqualsOneShot(server, root, sql), "");
    }
  });

  it("an edit sends update (with old_row) and insert frames; a removed file sends delete", async () => {
    const root = serverTree();
    const server = await serve(root, ["-c", "dirq.toml"]);
    const stream = await openReadyEvents(server);
    try {
      const from = stream.frames.length;
      write(
        root,
        "items/a.json",
        itemsFile([
          { id: 1, name: "one" },
          { id: 2, name: "TWO" },
          { id: 4, name: "four" },
        ]),
      );
      await eventsFor(
        stream,
        from,
        "items/a.json",
        (events) => has("update")(events) && has("insert")(events),
      );
      await settle(stream, root);
      // The first row did not change: no event for it.
      const edited = stream.rowsFrom(from).filter((row) => row.file_path === "items/a.json");
      assert.deepEqual(
        edited.sort((a, b) => a.action.localeCompare(b.action)),
        [
          {
            action: "insert",
            table: "items",
            file_path: "items/a.json",
            row: { id: 4, name: "four" },
            old_row: null,
          },
          {
            action: "update",
            table: "items",
            file_path: "items/a.json",
            row: { id: 2, name: "TWO" },
            old_row: { id: 2, name: "two" },
          },
        ],
      );

      const beforeDelete = stream.frames.length;
      rmSync(join(root, "items/b.json"));
      const deleted = await eventsFor(stream, beforeDelete, "items/b.json", has("delete"));
      assert.deepEqual(deleted, [
        {
          action: "delete",
          table: "items",
          file_path: "items/b.json",
          row: { id: 3, name: "three" },
          old_row: null,
        },
      ]);

      // JSON Lines: an appended line is one insert, the lines before it send nothing.
      const beforeAppend = stream.frames.length;
      appendFileSync(join(root, "log/x.jsonl"), '{"n":3,"msg":"more"}\n');
      const appended = await eventsFor(stream, beforeAppend, "log/x.jsonl", has("insert"));
      assert.deepEqual(appended, [
        {
          action: "insert",
          table: "log",
          file_path: "log/x.jsonl",
          row: { n: 3, msg: "more" },
          old_row: null,
        },
      ]);
      for (const sql of [ITEMS_SQL, LOG_SQL]) {
        assert.equal(await assertServerEqualsOneShot(server, root, sql), "");
      }
    } finally {
      stream.close();
    }
  });

  it("a file made invalid is an error event naming it and the line; the others stand; fixed, its rows return", async () => {
    const root = serverTree();
    const server = await serve(root, ["-c", "dirq.toml"]);
    const stream = await openReadyEvents(server);
    try {
      // JSON, its third line broken.
      const from = stream.frames.length;
      write(
        root,
        "items/a.json",
        '{"items": [\n  {"id": 1, "name": "one"},\n  {"id": 2, "name": }\n]}\n',
      );
      const failed = await eventsFor(
        stream,
        from,
        "items/a.json",
        (events) => has("error")(events) && has("delete", 2)(events),
      );
      const error = failed.find((event) => event.action === "error") as RowEvent;
      assert.deepEqual(Object.keys(error).sort(), ["action", "error", "file_path", "table"]);
      assert.equal(error.table, "items");
      assert.match(error.error as string, /^line 3, column 21: .*\(not valid JSON\)$/);
      // As a failing hook's file: it has no rows now (one delete per row it had).
      assert.deepEqual(
        failed
          .filter((event) => event.action === "delete")
          .map((event) => event.row)
          .sort((a, b) => Number(a?.id) - Number(b?.id)),
        [
          { id: 1, name: "one" },
          { id: 2, name: "two" },
        ],
      );
      // The other file's rows stand; a fresh one-shot scan skips the file for the same reason.
      assert.deepEqual(await queryRows(server, "SELECT id FROM items ORDER BY id"), [{ id: 3 }]);
      const stderr = await assertServerEqualsOneShot(server, root, ITEMS_SQL);
      assert.equal(stderr, `dirq: skipped items/a.json: ${error.error}\n`);

      // JSON Lines: an appended line that does not parse, named by its number.
      const beforeBadLine = stream.frames.length;
      appendFileSync(join(root, "log/x.jsonl"), '{"n":3,"msg":\n');
      const badLine = await eventsFor(stream, beforeBadLine, "log/x.jsonl", (events) =>
        has("error")(events),
      );
      const lineError = badLine.find((event) => event.action === "error") as RowEvent;
      assert.equal(lineError.table, "log");
      assert.match(lineError.error as string, /^line 3, column \d+: .*\(not valid JSON\)$/);
      await settle(stream, root);
      assert.deepEqual(await queryRows(server, LOG_SQL), [
        { f: "log/w.jsonl", n: 7, msg: "other" },
      ]);

      // Fixed: the rows come back.
      const beforeFix = stream.frames.length;
      write(
        root,
        "items/a.json",
        itemsFile([
          { id: 1, name: "one" },
          { id: 2, name: "two" },
        ]),
      );
      write(root, "log/x.jsonl", '{"n":1,"msg":"hi"}\n{"n":2,"msg":"there"}\n');
      const back = await eventsFor(stream, beforeFix, "items/a.json", has("insert", 2));
      assert.deepEqual(
        back.map((event) => event.row).sort((a, b) => Number(a?.id) - Number(b?.id)),
        [
          { id: 1, name: "one" },
          { id: 2, name: "two" },
        ],
      );
      await eventsFor(stream, beforeFix, "log/x.jsonl", has("insert", 2));
      for (const sql of [ITEMS_SQL, LOG_SQL]) {
        assert.equal(await assertServerEqualsOneShot(server, root, sql), "");
      }
    } finally {
      stream.close();
    }
  });

  it("a JSON file caught half-written is an error; completed, its rows are inserted", async () => {
    const root = serverTree();
    const server = await serve(root, ["-c", "dirq.toml"]);
    const stream = await openReadyEvents(server);
    try {
      const from = stream.frames.length;
      const path = join(root, "items/c.json");
      // The half file appears whole (written aside, renamed): made in place, a loaded machine
      // could show the watcher an empty file first, a different error.
      const aside = join(root, "c.json.part");
      writeFileSync(aside, '{"items": [{"id": 5, "name": "five"}, {"id": 6, "na');
      renameSync(aside, path);
      const half = await eventsFor(stream, from, "items/c.json", has("error"));
      assert.match(
        (half.find((event) => event.action === "error") as RowEvent).error as string,
        /^line 1, column \d+: .*\(not valid JSON\)$/,
      );
      assert.ok(!half.some((event) => event.action === "insert"), "no row of a half file");
      appendFileSync(path, 'me": "six"}]}\n');
      const rows = await eventsFor(stream, from, "items/c.json", has("insert", 2));
      assert.deepEqual(
        rows
          .filter((event) => event.action === "insert")
          .map((event) => event.row)
          .sort((a, b) => Number(a?.id) - Number(b?.id)),
        [
          { id: 5, name: "five" },
          { id: 6, name: "six" },
        ],
      );
      assert.equal(await assertServerEqualsOneShot(server, root, ITEMS_SQL), "");
    } finally {
      stream.close();
    }
  });

  it("a JSON Lines file's last line is not read until its newline is written", async () => {
    const root = serverTree();
    const server = await serve(root, ["-c", "dirq.toml"]);
    const stream = await openReadyEvents(server);
    try {
      const from = stream.frames.length;
      const path = join(root, "log/y.jsonl");
      appendFileSync(path, '{"n":10,"msg":"first"}\n{"n":11,"msg":"sec');
      const first = await eventsFor(stream, from, "log/y.jsonl", has("insert"));
      assert.deepEqual(first, [
        {
          action: "insert",
          table: "log",
          file_path: "log/y.jsonl",
          row: { n: 10, msg: "first" },
          old_row: null,
        },
      ]);
      const sql = "SELECT n, msg FROM log WHERE _dirq_file_path = 'log/y.jsonl' ORDER BY n";
      assert.deepEqual(await queryRows(server, sql), [{ n: 10, msg: "first" }]);
      // A one-shot scan of the half-appended file agrees: no error, the whole lines only.
      assert.equal(await assertServerEqualsOneShot(server, root, LOG_SQL), "");
      appendFileSync(path, 'ond"}');
      appendFileSync(path, "\n");
      const both = await eventsFor(stream, from, "log/y.jsonl", has("insert", 2));
      assert.deepEqual(both[1], {
        action: "insert",
        table: "log",
        file_path: "log/y.jsonl",
        row: { n: 11, msg: "second" },
        old_row: null,
      });
      await settle(stream, root);
      assert.deepEqual(
        stream
          .rowsFrom(from)
          .filter((event) => event.file_path === "log/y.jsonl")
          .map((event) => event.action),
        ["insert", "insert"],
        "no error, no update: the first line never changed",
      );
      assert.deepEqual(await queryRows(server, sql), [
        { n: 10, msg: "first" },
        { n: 11, msg: "second" },
      ]);
    } finally {
      stream.close();
    }
  });

  it("a format table's events are a hook table's, change for change", async () => {
    const root = tree({
      "rows.sh": shellHook("json-rows.sh"),
      "dirq.toml": `[[table]]
name = "hooked"
glob = "data/*.json"
on-file = ${JSON.stringify("sh rows.sh {path}")}

[[table]]
name = "formatted"
glob = "data/*.json"
format = "json"
`,
      "data/a.json": JSON.stringify([{ id: 0, name: "kept" }]),
    });
    const server = await serve(root, ["-c", "dirq.toml"]);
    const stream = await openReadyEvents(server);
    /** A table's events about data/b.json from `from` on, comparable across tables. */
    const eventsOf = (from: number, table: string) =>
      stream
        .rowsFrom(from)
        .filter((event) => event.table === table && event.file_path === "data/b.json")
        .map((event) =>
          JSON.stringify({ ...event, table: "<table>", error: event.error && "<reason>" }),
        )
        .sort();
    const steps: [string | null, number][] = [
      [
        JSON.stringify([
          { id: 1, name: "x" },
          { id: 2, name: "y" },
        ]),
        2,
      ],
      [JSON.stringify([{ id: 1, name: "x" }, { id: 2, name: "Y" }, { id: 3 }]), 2],
      [JSON.stringify([{ id: 1, name: "x" }]), 2],
      ["{broken", 2],
      [JSON.stringify({ id: 9, name: "z" }), 1],
      [null, 1],
    ];
    try {
      for (const [content, count] of steps) {
        const from = stream.frames.length;
        if (content === null) rmSync(join(root, "data/b.json"));
        else write(root, "data/b.json", content);
        await stream.until(
          () =>
            eventsOf(from, "hooked").length >= count && eventsOf(from, "formatted").length >= count,
          `${count} events per table after writing ${content}`,
          WAIT,
        );
        await settle(stream, root, "data");
        const formatted = eventsOf(from, "formatted");
        assert.equal(formatted.length, count, `after ${content}: ${formatted.join(", ")}`);
        assert.deepEqual(formatted, eventsOf(from, "hooked"), `after writing ${content}`);
      }
      const sql = (table: string) =>
        `SELECT _dirq_file_path AS f, * FROM ${table} ORDER BY f, _dirq_row_index`;
      assert.deepEqual(
        await queryRows(server, sql("formatted")),
        await queryRows(server, sql("hooked")),
      );
    } finally {
      stream.close();
    }
  });

  it("dirq server refuses --parse as an unknown argument, exactly as it refuses --on-file", async () => {
    const root = tree({ "a.json": "{}" });
    const onFile = await runServerToExit(["--port", "0", "--on-file", "cat {path}"], root);
    assert.equal(onFile.exit.code, 1, onFile.stderr);
    assert.equal(onFile.stderr, "dirq: unknown option '--on-file'. Run dirq --help for usage\n");
    for (const args of [
      ["--port", "0", "--parse", "json"],
      ["--parse=json", "--port", "0"],
      ["--parse", "csv", "--port", "0", "-c", "missing.toml"],
    ]) {
      const parse = await runServerToExit(args, root);
      assert.deepEqual(
        { code: parse.exit.code, stdout: parse.stdout, stderr: parse.stderr },
        {
          code: onFile.exit.code,
          stdout: "",
          stderr: onFile.stderr.replace("--on-file", "--parse"),
        },
        `dirq server ${args.join(" ")}`,
      );
    }
  });
});

/* ------------------------------------------------------------------------------------------ */
/* REPL                                                                                         */
/* ------------------------------------------------------------------------------------------ */

/** A REPL with piped input, one statement written at a time and its answer awaited. */
class PipedRepl {
  private readonly child: ChildProcessWithoutNullStreams;
  private pending = "";
  private readonly lines: string[] = [];
  private readonly waiters: ((line: string) => void)[] = [];
  stderr = "";
  readonly closed: Promise<number | null>;

  constructor(root: string, args: readonly string[]) {
    this.child = spawn(process.execPath, [DIRQ_BIN, ...args], {
      cwd: root,
      env: { ...process.env, DIRQ_PROGRESS: "never" },
    });
    this.child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      this.pending += chunk;
      let newline: number;
      while ((newline = this.pending.indexOf("\n")) >= 0) {
        const line = this.pending.slice(0, newline);
        this.pending = this.pending.slice(newline + 1);
        const waiter = this.waiters.shift();
        if (waiter) waiter(line);
        else this.lines.push(line);
      }
    });
    this.child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    this.closed = new Promise((resolve) => this.child.on("close", resolve));
  }

  /** Writes one statement and resolves with its answer (one JSON line). */
  ask(sql: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no answer to ${sql}; stderr: ${this.stderr}`)),
        WAIT,
      );
      this.waiters.push((line) => {
        clearTimeout(timer);
        resolve(line);
      });
      this.child.stdin.write(`${sql}\n`);
    });
  }

  end(): Promise<number | null> {
    this.child.stdin.end();
    return this.closed;
  }

  kill(): void {
    this.child.kill("SIGKILL");
  }
}

const noPty =
  spawnSync(python3(), ["-c", "import pty"]).status === 0
    ? false
    : "python3 (with its pty module) is needed to drive a pseudo-terminal";

describe("format tables in the REPL", { concurrency: true }, () => {
  it("--parse csv reads path-tables; an edit between two statements is seen by the second", async () => {
    const root = tree({
      "data.csv": "a,b\n1,x\n2,y\n",
      "bad.csv": "a,b\n1,2,3\n",
    });
    const repl = new PipedRepl(root, ["--parse", "csv"]);
    try {
      const sql = "SELECT a, b FROM './data.csv' ORDER BY a";
      assert.equal(await repl.ask(sql), '[{"a":1,"b":"x"},{"a":2,"b":"y"}]');
      write(root, "data.csv", "a,b\n1,x\n2,y\n3,z\n");
      assert.equal(await repl.ask(sql), '[{"a":1,"b":"x"},{"a":2,"b":"y"},{"a":3,"b":"z"}]');
      appendFileSync(join(root, "data.csv"), "4,w\n");
      assert.equal(
        await repl.ask("SELECT count(*) AS n, sum(a) AS s FROM './data.csv'"),
        '[{"n":4,"s":10}]',
      );
      // A file that fails is named on stderr; the session goes on, with the other files' rows.
      assert.equal(await repl.ask("SELECT count(*) AS n FROM './bad.csv'"), '[{"n":0}]');
      assert.equal(await repl.ask("SELECT count(*) AS n FROM './'"), '[{"n":4}]');
      assert.equal(await repl.end(), 0, "the REPL never exits 23");
      assert.match(
        repl.stderr,
        /^dirq: skipped bad\.csv: line 2: 3 fields, but the header has 2$/m,
      );
      assert.deepEqual(
        [...new Set(repl.stderr.trimEnd().split("\n"))],
        ["dirq: skipped bad.csv: line 2: 3 fields, but the header has 2"],
      );
    } finally {
      repl.kill();
    }
  });

  it("a config format table is kept current between statements", async () => {
    const root = serverTree();
    const repl = new PipedRepl(root, ["-c", "dirq.toml"]);
    try {
      const sql = "SELECT id, name FROM items ORDER BY id";
      assert.equal(
        await repl.ask(sql),
        '[{"id":1,"name":"one"},{"id":2,"name":"two"},{"id":3,"name":"three"}]',
      );
      write(root, "items/b.json", itemsFile([{ id: 3, name: "THREE" }]));
      rmSync(join(root, "items/a.json"));
      assert.equal(await repl.ask(sql), '[{"id":3,"name":"THREE"}]');
      assert.equal(await repl.end(), 0);
      assert.equal(repl.stderr, "");
    } finally {
      repl.kill();
    }
  });

  it(
    "in a terminal: --parse csv, a table of rows, an edit seen by the next statement",
    { skip: noPty },
    async () => {
      const root = tree({ "data.csv": "a,b\n1,x\n2,y\n" });
      const session = new TerminalSession(["--parse", "csv"], {
        cwd: root,
        env: { XDG_DATA_HOME: join(root, ".xdg") },
      });
      try {
        await session.waitFor("dirq> ");
        session.type(`SELECT a, b FROM './data.csv' ORDER BY a;${KEY.enter}`);
        assert.match(await session.waitFor("(2 rows)"), /a\s+b\n-+\s+-+\n1\s+x\n2\s+y\n/);
        await session.waitFor("dirq> ");
        write(root, "data.csv", "a,b\n1,x\n2,y\n3,z\n");
        session.type(`SELECT a, b FROM './data.csv' ORDER BY a;${KEY.enter}`);
        assert.match(await session.waitFor("(3 rows)"), /1\s+x\n2\s+y\n3\s+z\n/);
        await session.waitFor("dirq> ");
        session.type(KEY.ctrlD);
        assert.equal(await session.exited, 0);
      } finally {
        session.kill();
      }
    },
  );
});

/* ------------------------------------------------------------------------------------------ */
/* SDK                                                                                          */
/* ------------------------------------------------------------------------------------------ */

describe("format tables in the SDK", { concurrency: true }, () => {
  it("open() with format and each: query, skipped files, and watch() seeing an edit", async () => {
    const root = tree({
      "items/a.json": itemsFile([
        { id: 1, name: "one" },
        { id: 2, name: "two" },
      ]),
      "items/b.json": itemsFile([{ id: 3, name: "three" }]),
      "items/c.json": '{"items": 5}\n',
    });
    const db = open({
      root,
      progress: false,
      tables: [{ name: "items", glob: "items/*.json", format: "json", each: "items" }],
    });
    try {
      await db.ready;
      const sql = "SELECT _dirq_file_path AS f, id, name FROM items ORDER BY id";
      assert.deepEqual(await db.query(sql), [
        { f: "items/a.json", id: 1, name: "one" },
        { f: "items/a.json", id: 2, name: "two" },
        { f: "items/b.json", id: 3, name: "three" },
      ]);
      assert.deepEqual(db.skipped, [
        {
          path: "items/c.json",
          reason: "each 'items' holds a number, expected an array of objects or an object",
        },
      ]);
      // The same table from a config file, one-shot: the same rows, the same reason.
      writeFileSync(
        join(root, "dirq.toml"),
        `[[table]]\nname = "items"\nglob = "items/*.json"\nformat = "json"\neach = "items"\n`,
      );
      const cli = await oneShot(root, sql, ["-c", "dirq.toml"]);
      assert.equal(cli.code, 23);
      assert.deepEqual(JSON.parse(cli.stdout), await db.query(sql));
      assert.equal(
        cli.stderr,
        "dirq: skipped items/c.json: each 'items' holds a number, expected an array of objects or an object\n",
      );

      const stream = db.watch();
      await stream.ready;
      const iterator = stream[Symbol.asyncIterator]();
      const events: SdkRowEvent[] = [];
      const until = async (done: () => boolean) => {
        const timer = setTimeout(() => void iterator.return?.(), WAIT);
        try {
          while (!done()) {
            const next = await iterator.next();
            if (next.done) throw new Error(`the stream ended early: ${JSON.stringify(events)}`);
            const event = next.value;
            events.push("commit" in event ? (withoutCommit(event) as SdkRowEvent) : event);
          }
        } finally {
          clearTimeout(timer);
        }
      };
      write(
        root,
        "items/b.json",
        itemsFile([
          { id: 3, name: "THREE" },
          { id: 4, name: "four" },
        ]),
      );
      await until(() => events.length >= 2);
      assert.deepEqual(
        events.sort((a, b) => a.action.localeCompare(b.action)),
        [
          {
            action: "insert",
            table: "items",
            file_path: "items/b.json",
            row: { id: 4, name: "four" },
            old_row: null,
          },
          {
            action: "update",
            table: "items",
            file_path: "items/b.json",
            row: { id: 3, name: "THREE" },
            old_row: { id: 3, name: "three" },
          },
        ],
      );
      // The broken file fixed: its row is inserted; a new broken one is an error event.
      events.length = 0;
      write(root, "items/c.json", itemsFile([{ id: 5, name: "five" }]));
      await until(() => events.length >= 1);
      assert.deepEqual(events, [
        {
          action: "insert",
          table: "items",
          file_path: "items/c.json",
          row: { id: 5, name: "five" },
          old_row: null,
        },
      ]);
      events.length = 0;
      write(root, "items/d.json", '{"items": [{"id": 6}, 7]}\n');
      await until(() => events.length >= 1);
      assert.equal(events[0]?.action, "error");
      assert.equal(events[0]?.file_path, "items/d.json");
      assert.equal(
        (events[0] as { error?: string }).error,
        "item 1 of each 'items' is a number, expected an object",
      );
      await iterator.return?.();
      assert.deepEqual(await db.query("SELECT id, name FROM items ORDER BY id"), [
        { id: 1, name: "one" },
        { id: 2, name: "two" },
        { id: 3, name: "THREE" },
        { id: 4, name: "four" },
        { id: 5, name: "five" },
      ]);
    } finally {
      await db.close();
    }
  });

  it("bad definitions are refused at open(), naming the key", () => {
    const root = tree({ "a.json": "{}" });
    const refused = (tables: unknown, pattern: RegExp) =>
      assert.throws(
        () => open({ root, progress: false, tables: tables as [] }),
        (error: unknown) => {
          assert.ok(isDirqError(error), String(error));
          assert.equal(error.code, "CONFIG_INVALID");
          assert.match(error.message, pattern);
          return true;
        },
      );
    // format and onFile: both keys named.
    refused(
      [{ name: "t", glob: "*.json", format: "json", onFile: "cat {path}" }],
      /^tables\[0\]: give exactly one of format \(.*\), onFile \(.*\) or extract/,
    );
    refused(
      [{ name: "t", glob: "*.json", format: "json", extract: () => [] }],
      /^tables\[0\]: give exactly one of format .* or extract/,
    );
    refused(
      [
        { name: "ok", glob: "*.json", format: "json" },
        { name: "t", glob: "*.json", format: "xml" },
      ],
      /^tables\[1\]\.format: expected one of json, jsonl, csv, tsv, yaml, toml, markdown, auto$/,
    );
    refused(
      [{ name: "t", glob: "*.csv", format: "csv", each: "rows" }],
      /^tables\[0\]\.each: applies only with format = "json", "jsonl", "yaml", "toml" or "auto"/,
    );
    refused(
      [{ name: "t", glob: "*.json", format: "json", each: "a..b" }],
      /^tables\[0\]\.each: expected keys joined by dots/,
    );
    refused([{ name: "t", glob: "*.json", each: "a" }], /^tables\[0\]: give exactly one of format/);
  });

  it("a config file's format with on-file, or an unknown format, is refused naming the keys", async () => {
    const root = tree({
      "both.toml": `[[table]]\nname = "t"\nglob = "*.json"\nformat = "json"\non-file = "cat {path}"\n`,
      "xml.toml": `[[table]]\nname = "t"\nglob = "*.json"\nformat = "xml"\n`,
      "a.json": "{}",
    });
    const both = await oneShot(root, "SELECT 1", ["-c", "both.toml"]);
    assert.equal(both.code, 1);
    assert.equal(
      both.stderr,
      "dirq: both.toml: table[0].format, table[0].on-file: give one of them: format (dirq reads the files) or on-file (a program does)\n",
    );
    const xml = await oneShot(root, "SELECT 1", ["-c", "xml.toml"]);
    assert.equal(xml.code, 1);
    assert.equal(
      xml.stderr,
      "dirq: xml.toml: table[0].format: expected one of json, jsonl, csv, tsv, yaml, toml, markdown, auto\n",
    );
    const flags = await oneShot(root, "SELECT 1", ["--parse", "json", "--on-file", "cat {path}"]);
    assert.equal(flags.code, 1);
    assert.match(flags.stderr, /^dirq: --parse and --on-file were both given/);
  });
});

/* ------------------------------------------------------------------------------------------ */
/* --persist                                                                                    */
/* ------------------------------------------------------------------------------------------ */

/** A file whose rows are under `items` and, differently, under `other`. */
function twoWays(n: number, text: string): string {
  return `${JSON.stringify({ items: [{ n, t: text }], other: [{ n: n * 100, t: text }] })}\n`;
}

function persistConfig(format: string, each: string): string {
  return `[[table]]\nname = "items"\nglob = "data/*.json"\nformat = "${format}"\neach = "${each}"\n`;
}

/** An hour ago, in whole seconds: a time no cache ever records as racy. */
const AN_HOUR_AGO = Math.floor(Date.now() / 1000) - 3600;

describe("format tables and --persist", { concurrency: true }, () => {
  it("a second run reads only changed files; a change of format or each rebuilds the table", async () => {
    const root = tree({
      "dirq.toml": persistConfig("json", "items"),
      "data/p1.json": twoWays(1, "aaa"),
      "data/p2.json": twoWays(2, "bbb"),
      "data/p3.json": twoWays(3, "ccc"),
    });
    for (const name of ["p1", "p2", "p3"]) {
      utimesSync(join(root, `data/${name}.json`), AN_HOUR_AGO, AN_HOUR_AGO);
    }
    const sql = "SELECT _dirq_file_path AS f, n, t FROM items ORDER BY f, n";
    const persisted = () => oneShot(root, sql, ["-c", "dirq.toml", "--persist"]);
    const first = await persisted();
    assert.equal(first.code, 0, first.stderr);
    assert.equal(first.stderr, "");
    assert.deepEqual(JSON.parse(first.stdout), [
      { f: "data/p1.json", n: 1, t: "aaa" },
      { f: "data/p2.json", n: 2, t: "bbb" },
      { f: "data/p3.json", n: 3, t: "ccc" },
    ]);

    // p1 changes behind the cache's back: same size, same mtime (to the nanosecond). A run that
    // read it would show "zzz"; one that trusts its record of the file shows "aaa".
    write(root, "data/p1.json", twoWays(1, "zzz"));
    utimesSync(join(root, "data/p1.json"), AN_HOUR_AGO, AN_HOUR_AGO);
    assert.equal(statSync(join(root, "data/p1.json")).size, twoWays(1, "aaa").length);
    write(root, "data/p2.json", twoWays(2, "bbb, changed"));
    rmSync(join(root, "data/p3.json"));
    write(root, "data/p4.json", twoWays(4, "ddd"));
    const second = await persisted();
    assert.equal(second.code, 0, second.stderr);
    assert.equal(second.stderr, "");
    assert.deepEqual(JSON.parse(second.stdout), [
      { f: "data/p1.json", n: 1, t: "aaa" },
      { f: "data/p2.json", n: 2, t: "bbb, changed" },
      { f: "data/p4.json", n: 4, t: "ddd" },
    ]);
    const fresh = await oneShot(root, sql, ["-c", "dirq.toml"]);
    assert.equal(JSON.parse(fresh.stdout)[0].t, "zzz", "a fresh scan reads p1 as it is");

    const notice = "dirq: rebuilding table items: its format or each changed\n";
    // `each` changed: rebuilt, every file read again (p1 too).
    writeFileSync(join(root, "dirq.toml"), persistConfig("json", "other"));
    const otherEach = await persisted();
    assert.equal(otherEach.code, 0, otherEach.stderr);
    assert.equal(otherEach.stderr, notice);
    assert.deepEqual(JSON.parse(otherEach.stdout), [
      { f: "data/p1.json", n: 100, t: "zzz" },
      { f: "data/p2.json", n: 200, t: "bbb, changed" },
      { f: "data/p4.json", n: 400, t: "ddd" },
    ]);
    const again = await persisted();
    assert.equal(again.stderr, "", "an unchanged definition keeps the table");
    assert.equal(again.stdout, otherEach.stdout);

    // `format` changed (json to auto reads these files the same way): rebuilt all the same.
    writeFileSync(join(root, "dirq.toml"), persistConfig("auto", "other"));
    const otherFormat = await persisted();
    assert.equal(otherFormat.code, 0, otherFormat.stderr);
    assert.equal(otherFormat.stderr, notice);
    assert.equal(otherFormat.stdout, otherEach.stdout);
    assert.equal((await persisted()).stderr, "");
  });

  it("YAML's !!binary is a BLOB (hex in JSON), also read back from --persist; !!set is the file's error", async () => {
    const root = tree({
      "dirq.toml": '[[table]]\nname = "items"\nglob = "data/*.yaml"\nformat = "yaml"\n',
      "data/bin.yaml": "a: !!binary R0lGODlh\nb: [!!binary AAE=]\nc: !!float 1\n",
      "data/set.yaml": "--- !!set\n? a\n? b\n",
    });
    const sql = "SELECT a, typeof(a) AS t, b, c, typeof(c) AS tc FROM items";
    for (const args of [[], ["--persist"], ["--persist"]]) {
      const result = await oneShot(root, sql, ["-c", "dirq.toml", ...args]);
      assert.equal(result.code, 23, result.stderr);
      assert.deepEqual(JSON.parse(result.stdout), [
        { a: "474946383961", t: "blob", b: '["0001"]', c: 1, tc: "real" },
      ]);
      assert.deepEqual(skippedLines(result.stderr), [
        "dirq: skipped data/set.yaml: line 2, column 1: the document is a !!set, not rows (a mapping, or a list of mappings): drop the !!set tag to read its keys as one row",
      ]);
    }
  });

  it("a file that failed is read again by the next run, and named again until it is fixed", async () => {
    const root = tree({
      "dirq.toml": `[[table]]\nname = "t"\nglob = "data/*.json"\nformat = "json"\n`,
      "data/a.json": '{"n":1}\n',
      "data/bad.json": '{"n":\n',
    });
    for (const name of ["a", "bad"]) {
      utimesSync(join(root, `data/${name}.json`), AN_HOUR_AGO, AN_HOUR_AGO);
    }
    const sql = "SELECT n FROM t ORDER BY n";
    const skipped =
      "dirq: skipped data/bad.json: line 2, column 1: Object value expected after ':' (not valid JSON)\n";
    for (const run of ["first", "second"]) {
      const result = await oneShot(root, sql, ["-c", "dirq.toml", "--persist"]);
      assert.equal(result.code, 23, `${run}: ${result.stderr}`);
      assert.equal(result.stdout, '[{"n":1}]\n', run);
      assert.equal(result.stderr, skipped, run);
    }
    write(root, "data/bad.json", '{"n":2}\n');
    const fixed = await oneShot(root, sql, ["-c", "dirq.toml", "--persist"]);
    assert.equal(fixed.code, 0, fixed.stderr);
    assert.equal(fixed.stdout, '[{"n":1},{"n":2}]\n');
  });

  it("--parse path-tables are kept too, and another --parse rebuilds them", async () => {
    const root = tree({ "data.csv": "a,b\n1,x\n2,y\n" });
    utimesSync(join(root, "data.csv"), AN_HOUR_AGO, AN_HOUR_AGO);
    const sql = "SELECT * FROM './data.csv'";
    const run = (format: string) => oneShot(root, sql, ["--parse", format, "--persist"]);
    const first = await run("csv");
    assert.equal(first.stdout, '[{"a":1,"b":"x"},{"a":2,"b":"y"}]\n');
    assert.equal(first.stderr, "");
    // Changed behind the cache's back (same size and mtime): the kept table answers.
    write(root, "data.csv", "a,b\n1,X\n2,Y\n");
    utimesSync(join(root, "data.csv"), AN_HOUR_AGO, AN_HOUR_AGO);
    const kept = await run("csv");
    assert.equal(kept.stdout, first.stdout);
    assert.equal(kept.stderr, "");
    const tsv = await run("tsv");
    assert.equal(tsv.code, 0, tsv.stderr);
    assert.equal(tsv.stderr, "dirq: rebuilding table ./data.csv: its format or each changed\n");
    assert.equal(tsv.stdout, '[{"a,b":"1,X"},{"a,b":"2,Y"}]\n');
  });
});

/* ------------------------------------------------------------------------------------------ */
/* schema and ddl                                                                               */
/* ------------------------------------------------------------------------------------------ */

/**
 * The same table twice: `hook.toml` runs json-rows.sh on each file, `format.toml` reads the files
 * as JSON. Anything after the glob (schema, ddl) is `extra`.
 */
function hookAndFormat(extra: string): Record<string, string> {
  const head = `[[table]]\nname = "items"\nglob = "data/*.json"\n`;
  return {
    "rows.sh": shellHook("json-rows.sh"),
    "hook.toml": `${head}on-file = ${JSON.stringify("sh rows.sh {path}")}\n${extra}`,
    "format.toml": `${head}format = "json"\n${extra}`,
  };
}

/** Runs `sql` against the hook table and the format table; both results, config names evened. */
async function bothWays(
  root: string,
  sql: string,
): Promise<{ hook: RunResult; format: RunResult }> {
  const [hook, format] = await Promise.all([
    oneShot(root, sql, ["-c", "hook.toml"]),
    oneShot(root, sql, ["-c", "format.toml"]),
  ]);
  return {
    hook: { ...hook, stderr: hook.stderr.replaceAll("hook.toml", "<config>") },
    format: { ...format, stderr: format.stderr.replaceAll("format.toml", "<config>") },
  };
}

describe("format tables: schema and ddl apply as to hook tables", { concurrency: true }, () => {
  it("schema fixes the columns and their types", async () => {
    const root = tree({
      ...hookAndFormat(`schema = { id = "INTEGER", name = "TEXT", score = "REAL" }\n`),
      "data/a.json": JSON.stringify([
        { id: 1, name: "one", score: "2.5", extra: true },
        { id: "7", name: 7 },
      ]),
      "data/b.json": JSON.stringify({ score: 3, id: 2, name: "two" }),
    });
    const sql =
      "SELECT *, typeof(id) AS ti, typeof(name) AS tn, typeof(score) AS ts FROM items ORDER BY id";
    const { hook, format } = await bothWays(root, sql);
    assert.equal(format.code, 0, format.stderr);
    assert.deepEqual(format, hook);
    assert.deepEqual(JSON.parse(format.stdout), [
      { id: 1, name: "one", score: 2.5, ti: "integer", tn: "text", ts: "real" },
      { id: 2, name: "two", score: 3, ti: "integer", tn: "text", ts: "real" },
      { id: 7, name: "7", score: null, ti: "integer", tn: "text", ts: "null" },
    ]);
    const columns = await bothWays(
      root,
      "SELECT name, type FROM pragma_table_info('items') ORDER BY cid",
    );
    assert.deepEqual(columns.format, columns.hook);
    assert.deepEqual(JSON.parse(columns.format.stdout).slice(0, 3), [
      { name: "id", type: "INTEGER" },
      { name: "name", type: "TEXT" },
      { name: "score", type: "REAL" },
    ]);
  });

  it("ddl makes its index and view", async () => {
    const root = tree({
      ...hookAndFormat(
        `ddl = "CREATE INDEX items_name ON items(name); CREATE VIEW names AS SELECT name FROM items"\n`,
      ),
      "data/a.json": JSON.stringify([{ name: "b" }, { name: "a" }]),
      "data/b.json": JSON.stringify({ name: "c" }),
    });
    const objects = await bothWays(
      root,
      "SELECT type, name, tbl_name FROM sqlite_master WHERE name IN ('items_name', 'names') ORDER BY name",
    );
    assert.deepEqual(objects.format, objects.hook);
    assert.deepEqual(JSON.parse(objects.format.stdout), [
      { type: "index", name: "items_name", tbl_name: "items" },
      { type: "view", name: "names", tbl_name: "names" },
    ]);
    const view = await bothWays(root, "SELECT name FROM names ORDER BY name");
    assert.deepEqual(view.format, view.hook);
    assert.equal(view.format.stdout, '[{"name":"a"},{"name":"b"},{"name":"c"}]\n');
  });

  it("a UNIQUE violation while building: the same failure as a hook table's", async () => {
    const root = tree({
      ...hookAndFormat(`ddl = "CREATE UNIQUE INDEX items_name ON items(name)"\n`),
      "data/a.json": JSON.stringify({ name: "same" }),
      "data/b.json": JSON.stringify({ name: "same" }),
      "data/c.json": JSON.stringify({ name: "c" }),
    });
    const { hook, format } = await bothWays(root, "SELECT name FROM items ORDER BY name");
    // What a hook table does (docs/hooks.md): the build fails naming the file and the key.
    assert.equal(hook.code, 1, hook.stderr);
    assert.equal(
      hook.stderr,
      "dirq: <config>: table[0].ddl: the rows of data/b.json break a rule of table 'items' (UNIQUE constraint failed: items.name); fix the file or the table's ddl\n",
    );
    assert.deepEqual(format, hook);
  });

  it("a UNIQUE violation at server start-up: degraded, as with a hook table", async () => {
    const root = tree({
      ...hookAndFormat(`ddl = "CREATE UNIQUE INDEX items_name ON items(name)"\n`),
      "data/a.json": JSON.stringify({ name: "same" }),
      "data/b.json": JSON.stringify({ name: "same" }),
    });
    const answers: string[] = [];
    for (const config of ["hook.toml", "format.toml"]) {
      const server = await serve(root, ["-c", config]);
      try {
        const message = assertJsonError(await postQuery(server, "SELECT 1"), 503);
        assertJsonError(await request(`${server.url}/events`), 503);
        answers.push(message.replaceAll(config, "<config>"));
      } finally {
        await server.kill();
      }
    }
    assert.match(
      answers[0] as string,
      /^failed to load config: .*<config>: table\[0\]\.ddl: .*data\/b\.json.*UNIQUE/,
    );
    assert.equal(answers[1], answers[0]);
  });

  it("a UNIQUE violation in a live edit fails that file only, as for a hook table", async () => {
    const root = tree({
      ...hookAndFormat(`ddl = "CREATE UNIQUE INDEX items_name ON items(name)"\n`),
      "data/a.json": JSON.stringify({ name: "a", n: 1 }),
    });
    const server = await serve(root, ["-c", "format.toml"]);
    const stream = await openReadyEvents(server);
    try {
      const from = stream.frames.length;
      write(root, "data/b.json", JSON.stringify({ name: "a", n: 2 }));
      const failed = await eventsFor(stream, from, "data/b.json", has("error"));
      const error = failed.find((event) => event.action === "error") as RowEvent;
      assert.equal(error.table, "items");
      assert.match(error.error as string, /UNIQUE constraint failed: items\.name/);
      write(root, "data/c.json", JSON.stringify({ name: "c", n: 3 }));
      await eventsFor(stream, from, "data/c.json", has("insert"));
      write(root, "data/b.json", JSON.stringify({ name: "b", n: 2 }));
      const fixed = await eventsFor(stream, from, "data/b.json", has("insert"));
      assert.deepEqual(fixed.find((event) => event.action === "insert")?.row, { name: "b", n: 2 });
      assert.deepEqual(await queryRows(server, "SELECT name, n FROM items ORDER BY n"), [
        { name: "a", n: 1 },
        { name: "b", n: 2 },
        { name: "c", n: 3 },
      ]);
    } finally {
      stream.close();
    }
  });
});

/* ------------------------------------------------------------------------------------------ */
/* Every failure kind, one-shot                                                                 */
/* ------------------------------------------------------------------------------------------ */

const FAILURES_CONFIG = `[[table]]
name = "docs"
glob = "bad/**"
format = "auto"

[[table]]
name = "nested"
glob = "nested/*"
format = "auto"
each = "data.items"
`;

/** Each file: its content, and the reason it is skipped (null: it is read). */
const FAILURE_FILES: Record<string, [content: string | Buffer, reason: string | null]> = {
  "bad/good.jsonl": ['{"k":"good.jsonl","n":1}\n\n{"k":"good.jsonl","n":2}\n', null],
  "bad/good.csv": ["k,n\ngood.csv,3\n", null],
  "bad/broken.jsonl": [
    '{"k":"broken.jsonl","n":1}\n{"k": "broken.jsonl", "n": }\n{"k":"broken.jsonl","n":3}\n',
    "line 2, column 28: Object value expected after ':' (not valid JSON)",
  ],
  "bad/scalar.jsonl": [
    '{"k":"scalar.jsonl","n":1}\n42\n',
    "line 2 holds a number, expected an object (one row per line)",
  ],
  "bad/scalar.json": [
    '"just text"\n',
    "the file holds a string, expected an array of objects or an object (give `each` to name the array that holds them)",
  ],
  "bad/items.yaml": [
    "- k: items.yaml\n- 7\n",
    "item 1 of the array is a number, expected an object",
  ],
  "bad/latin1.csv": [
    Buffer.concat([
      Buffer.from("k,n\nlatin1.csv,1\ncaf"),
      Buffer.from([0xe9]),
      Buffer.from(",2\n"),
    ]),
    "line 3: not valid UTF-8 (dirq reads text files as UTF-8)",
  ],
  "bad/fields.csv": [
    "k,n\nfields.csv,1\nfields.csv,2,extra\n",
    "line 3: 3 fields, but the header has 2",
  ],
  "bad/after-quote.csv": [
    'k,n\nafter-quote.csv,1\n"after-quote.csv"x,2\n',
    'line 3: text "x" after a closing quote: a quoted field ends at its closing quote',
  ],
  "bad/inner-quote.csv": [
    'k,n\ninner"quote,1\n',
    'line 2: a quote inside an unquoted field "inner": quote the whole field and double the quotes inside it',
  ],
  "bad/open-quote.tsv": [
    'k\tn\nopen-quote.tsv\t1\n"open\t2\n',
    "line 3: a quoted field is still open at the end of the file (a missing closing quote, or a file cut short)",
  ],
  "bad/truncated.json": [
    '[{"k":"truncated.json","n":1},\n {"k":"trunc',
    `line 2, column 13: End of string '"' expected but reached end of input (not valid JSON)`,
  ],
  "bad/partial.jsonl": ['{"k":"partial.jsonl","n":1}\n{"k":"partial.jsonl","n":2', null],
  // An empty JSON file holds no JSON text: the file's error (as for Python's json).
  "bad/empty.json": ["", "the file is empty: a JSON file holds one JSON text"],
  "bad/empty.jsonl": ["", null],
  "bad/empty.csv": ["", null],
  "bad/empty.yaml": ["", null],
  "bad/notes.txt": [
    "plain text\n",
    "format 'auto' reads a file by its extension (.json, .jsonl, .ndjson, .csv, .tsv, .yaml, .yml, .toml, .md, .markdown), and this one has none of them: give the table a format",
  ],
  "nested/ok.json": ['{"data":{"items":[{"k":"ok.json","n":1}]}}\n', null],
  "nested/missing.json": ['{"data":{"rows":[]}}\n', "each 'data.items': 'data' has no key 'items'"],
  "nested/scalar.yaml": [
    "data:\n  items: 7\n",
    "each 'data.items' holds a number, expected an array of objects or an object",
  ],
  "nested/string.toml": ['data = "text"\n', "each 'data.items': 'data' is a string, not an object"],
  "nested/lines.jsonl": [
    '{"data":{"items":[{"k":"lines.jsonl","n":1}]}}\n{"data":{}}\n',
    "line 2: each 'data.items': 'data' has no key 'items'",
  ],
  "nested/table.csv": [
    "k,n\ntable.csv,1\n",
    "each applies to JSON, JSON Lines, YAML and TOML files, not csv",
  ],
};

function failureTree(): string {
  const root = tree({ "dirq.toml": FAILURES_CONFIG });
  for (const [path, [content]] of Object.entries(FAILURE_FILES)) write(root, path, content);
  return root;
}

/**
 * The hint of a one-shot's line for a file `auto` has no format for (told by extension, and
 * named when it is the only one), for a config table and for a path-table.
 */
const NO_FORMAT_HINTS = {
  config: "Narrow the table's glob, or read it with an on-file hook",
  path: "Use --on-file or a [[table]] with an on-file hook to read it",
};

function expectedSkips(prefix: string, table: keyof typeof NO_FORMAT_HINTS): string[] {
  return Object.entries(FAILURE_FILES)
    .filter(([path, [, reason]]) => reason !== null && path.startsWith(prefix))
    .map(([path, [, reason]]) =>
      path === "bad/notes.txt"
        ? `dirq: skipped ${path}: no built-in format reads .txt files. ${NO_FORMAT_HINTS[table]}`
        : `dirq: skipped ${path}: ${reason}`,
    )
    .sort();
}

describe("format tables: every failure is the file's, one-shot", { concurrency: true }, () => {
  it("each kind: a stderr line naming the file and the line or key, exit 23, the other rows stand", async () => {
    const root = failureTree();
    const sql =
      "SELECT _dirq_file_path AS f, k, n FROM docs UNION ALL SELECT _dirq_file_path, k, n FROM nested ORDER BY f, n";
    const result = await oneShot(root, sql, ["-c", "dirq.toml"]);
    assert.equal(result.code, 23, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), [
      { f: "bad/good.csv", k: "good.csv", n: 3 },
      { f: "bad/good.jsonl", k: "good.jsonl", n: 1 },
      { f: "bad/good.jsonl", k: "good.jsonl", n: 2 },
      // The last line has no newline yet: a file being appended, its whole lines read.
      { f: "bad/partial.jsonl", k: "partial.jsonl", n: 1 },
      { f: "nested/ok.json", k: "ok.json", n: 1 },
    ]);
    // Exactly one line per skipped file, nothing else on stderr.
    assert.deepEqual(result.stderr.trimEnd().split("\n").sort(), expectedSkips("", "config"));
  });

  it("--parse over a path-table skips the same files for the same reasons", async () => {
    const root = failureTree();
    const auto = await oneShot(root, "SELECT count(*) AS n FROM './bad'", ["--parse", "auto"]);
    assert.equal(auto.code, 23, auto.stderr);
    assert.equal(auto.stdout, '[{"n":4}]\n');
    assert.deepEqual(auto.stderr.trimEnd().split("\n").sort(), expectedSkips("bad/", "path"));
    // One format for every file: each file is read as JSON Lines.
    const jsonl = await oneShot(root, "SELECT count(*) AS n FROM './bad/*.jsonl'", [
      "--parse",
      "jsonl",
    ]);
    assert.equal(jsonl.code, 23, jsonl.stderr);
    assert.equal(jsonl.stdout, '[{"n":3}]\n');
    assert.deepEqual(skippedLines(jsonl.stderr), [
      `dirq: skipped bad/broken.jsonl: ${FAILURE_FILES["bad/broken.jsonl"]?.[1]}`,
      `dirq: skipped bad/scalar.jsonl: ${FAILURE_FILES["bad/scalar.jsonl"]?.[1]}`,
    ]);
  });

  it("an empty file: no rows (TOML: one row, a table; markdown: a body); JSON: the file's error", async () => {
    const root = tree({});
    for (const extension of ["json", "jsonl", "csv", "tsv", "yaml", "toml", "md"]) {
      write(root, `empty/empty.${extension}`, "");
    }
    write(root, "empty/blank.json", "\n  \n");
    write(root, "empty/blank.jsonl", "\n\n");
    const result = await oneShot(root, "SELECT _dirq_file_path AS f, * FROM './empty' ORDER BY f", [
      "--parse",
      "auto",
    ]);
    // An empty or all-blank JSON file holds no JSON text: skipped, as Python's json refuses it.
    assert.equal(result.code, 23, result.stderr);
    assert.deepEqual(result.stderr.trimEnd().split("\n").sort(), [
      "dirq: skipped empty/blank.json: the file is empty: a JSON file holds one JSON text",
      "dirq: skipped empty/empty.json: the file is empty: a JSON file holds one JSON text",
    ]);
    assert.deepEqual(JSON.parse(result.stdout), [
      { f: "empty/empty.md", body: "" },
      { f: "empty/empty.toml", body: null },
    ]);
  });

  it("a YAML list of several batches: a late error keeps none of its rows, a late alias no row twice", async () => {
    const items = (count: number) =>
      Array.from({ length: count }, (_, i) => `- id: ${i}\n  name: n${i}\n`).join("");
    const root = tree({
      "long/broken.yaml": `${items(3000)}- id: [open\n`,
      "long/scalar.yaml": `${items(2500)}- just text\n${items(10)}`,
      "long/alias.yaml": `- {id: -1, base: &b {x: 1}}\n${items(2500)}- id: 2500\n  <<: *b\n`,
    });
    const sql =
      "SELECT _dirq_file_path AS f, count(*) AS n, count(DISTINCT id) AS ids, sum(x) AS x FROM './long' GROUP BY f";
    const result = await oneShot(root, sql, ["--parse", "yaml"]);
    assert.equal(result.code, 23, result.stderr);
    assert.deepEqual(JSON.parse(result.stdout), [
      { f: "long/alias.yaml", n: 2502, ids: 2502, x: 1 },
    ]);
    assert.deepEqual(result.stderr.trimEnd().split("\n").sort(), [
      "dirq: skipped long/broken.yaml: line 6002, column 1: Flow sequence in block collection must be sufficiently indented and end with a ] (not valid YAML)",
      "dirq: skipped long/scalar.yaml: item 2500 of the array is a string, expected an object",
    ]);
  });

  it("a file that is completed after a failed run is read by the next run", async () => {
    const root = tree({
      "data/ok.json": '[{"n":1}]',
      "data/growing.json": '[{"n":2},',
    });
    const sql = "SELECT n FROM './data' ORDER BY n";
    const half = await oneShot(root, sql, ["--parse", "json"]);
    assert.equal(half.code, 23);
    assert.equal(half.stdout, '[{"n":1}]\n');
    assert.match(half.stderr, /^dirq: skipped data\/growing\.json: line 1, column \d+: /);
    appendFileSync(join(root, "data/growing.json"), '{"n":3}]');
    const whole = await oneShot(root, sql, ["--parse", "json"]);
    assert.equal(whole.code, 0, whole.stderr);
    assert.equal(whole.stdout, '[{"n":1},{"n":2},{"n":3}]\n');
  });
});

/* ------------------------------------------------------------------------------------------ */
/* A large JSON Lines file                                                                      */
/* ------------------------------------------------------------------------------------------ */

/**
 * Records the process's peak RSS at exit (KiB; `process.resourceUsage().maxRSS` covers its
 * worker threads). Node cannot read a child's peak; this runs inside it (see
 * bench/dirq-walk.mjs). One line per process, should dirq ever start another.
 */
const MAX_RSS_PRELOAD = `"use strict";
process.on("exit", () => {
  require("node:fs").appendFileSync(
    process.env.DIRQ_TEST_RSS_FILE,
    process.pid + " " + process.resourceUsage().maxRSS + "\\n",
  );
});
`;

const BIG_LINES = 300_000;
const BIG_LINE_BYTES = 1000;

/**
 * Writes BIG_LINES lines of BIG_LINE_BYTES each: `{"n":<i>` padded with spaces inside the
 * object (JSON allows them), so the rows dirq keeps are small and any memory beyond its
 * baseline is the file's text held at once.
 */
function writeBigJsonl(path: string): number {
  const fd = openSync(path, "w");
  try {
    const perChunk = 4096;
    for (let n = 0; n < BIG_LINES;) {
      const lines: string[] = [];
      for (let i = 0; i < perChunk && n < BIG_LINES; i++, n++) {
        lines.push(`${`{"n":${n}`.padEnd(BIG_LINE_BYTES - 2, " ")}}\n`);
      }
      writeSync(fd, lines.join(""));
    }
  } finally {
    closeSync(fd);
  }
  return statSync(path).size;
}

describe("format tables: a large JSON Lines file is read a piece at a time", () => {
  it("count and sum of a 300 MB file, dirq's peak RSS far below the file's size", async () => {
    const root = tree({ "max-rss.cjs": MAX_RSS_PRELOAD });
    const size = writeBigJsonl(join(root, "big.jsonl"));
    assert.equal(size, BIG_LINES * BIG_LINE_BYTES);
    const rssFile = join(root, "max-rss.txt");
    const preload = join(root, "max-rss.cjs");
    assert.ok(!/\s/.test(preload), "NODE_OPTIONS takes a path without spaces");
    try {
      const started = Date.now();
      const result = await runDirq(
        ["SELECT count(*) AS c, sum(n) AS s FROM './big.jsonl'", "--parse", "jsonl"],
        {
          cwd: root,
          env: {
            NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --require ${preload}`.trim(),
            DIRQ_TEST_RSS_FILE: rssFile,
          },
        },
      );
      const elapsed = Date.now() - started;
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stderr, "");
      const sum = (BIG_LINES * (BIG_LINES - 1)) / 2;
      assert.deepEqual(JSON.parse(result.stdout), [{ c: BIG_LINES, s: sum }]);
      const peaks = readFileSync(rssFile, "utf8")
        .trim()
        .split("\n")
        .map((line) => Number(line.split(" ")[1]) * 1024);
      assert.ok(peaks.length >= 1 && peaks.every(Number.isFinite), `peaks: ${peaks}`);
      const peak = Math.max(...peaks);
      const mb = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MB`;
      assert.ok(
        peak < 250 * 2 ** 20,
        `dirq's peak RSS was ${mb(peak)} reading a ${mb(size)} file (bound: 250 MB)`,
      );
      // Shown with --test-reporter=spec: the figures behind the bound.
      console.log(`# big.jsonl: ${mb(size)}, dirq peak RSS ${mb(peak)}, ${elapsed} ms`);
    } finally {
      rmSync(join(root, "big.jsonl"), { force: true });
    }
  });
});
