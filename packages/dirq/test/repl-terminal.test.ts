import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { seededRandom } from "./differential.js";
import { makeTree, python3, removeTree } from "./helpers.js";
import { clockTicks, cpuTicks } from "./server-support.js";
import { descendants, KEY, plainText, TerminalSession } from "./terminal.js";

/** The terminal comes from Python's standard pty module; without python3 there is none. */
const noPty =
  spawnSync(python3(), ["-c", "import pty"]).status === 0
    ? false
    : "python3 (with its pty module) is needed to drive a pseudo-terminal";

describe("REPL in a terminal", { skip: noPty }, () => {
  let root: string;
  let dataHome: string;
  const sessions: TerminalSession[] = [];

  const open = (args: readonly string[] = [], xdg = dataHome) => {
    const session = new TerminalSession(args, { cwd: root, env: { XDG_DATA_HOME: xdg } });
    sessions.push(session);
    return session;
  };

  before(() => {
    root = makeTree({ "a.txt": "a", "b.md": "bb", "docs/c.md": "ccc" });
    dataHome = mkdtempSync(join(tmpdir(), "dirq-xdg-"));
  });

  after(() => {
    for (const session of sessions) session.kill();
    removeTree(root);
    rmSync(dataHome, { recursive: true, force: true });
  });

  test("banner, prompts, a multi-line statement as a table, Ctrl-D leaves with 0", async () => {
    const repl = open();
    await repl.waitFor(/dirq \S+: read-only SQL over /);
    await repl.waitFor("dirq> ");
    repl.type(`SELECT path, size${KEY.enter}`);
    await repl.waitFor("...> ");
    repl.type(`FROM './' WHERE ext = 'md'${KEY.enter}`);
    await repl.waitFor("...> ");
    repl.type(`ORDER BY path;${KEY.enter}`);
    const shown = await repl.waitFor("(2 rows)");
    assert.match(shown, /path\s+size\n-+\s+-+\nb\.md\s+2\ndocs\/c\.md\s+3\n/);
    await repl.waitFor("dirq> ");
    repl.type(KEY.ctrlD);
    await repl.expectExit(0);
  });

  test("history is recalled in a second session, a multi-line statement as one entry", async () => {
    const ownHome = join(dataHome, "history-test");
    const first = open([], ownHome);
    await first.waitFor("dirq> ");
    first.type(`SELECT 'first' AS word;${KEY.enter}`);
    await first.waitFor("(1 row)");
    first.type(`SELECT 2${KEY.enter}AS two;${KEY.enter}`);
    await first.waitFor("(1 row)");
    first.type(`exit${KEY.enter}`);
    await first.expectExit(0);
    const file = readFileSync(join(ownHome, "dirq", "history"), "utf8");
    assert.equal(file, "SELECT 'first' AS word;\nSELECT 2\\nAS two;\n");

    const second = open([], ownHome);
    await second.waitFor("dirq> ");
    second.type(KEY.up);
    await second.waitFor("AS two;");
    second.type(KEY.up);
    await second.waitFor("SELECT 'first' AS word;");
    second.type(KEY.enter);
    assert.match(await second.waitFor("(1 row)"), /word\n-+\nfirst\n/);
    second.type(`quit${KEY.enter}`);
    await second.expectExit(0);
  });

  test(
    "a history folder that cannot be made (under /proc): the session goes on, nothing spins",
    { timeout: 60_000 },
    async () => {
      const repl = open([], "/proc");
      await repl.waitFor("dirq> ");
      repl.type(`SELECT 41 + 1 AS x;${KEY.enter}`);
      assert.match(await repl.waitFor("(1 row)"), /x\n-+\n42\n/);
      await repl.waitFor("dirq> ");
      repl.type(KEY.ctrlD);
      await repl.expectExit(0);
    },
  );

  test("Ctrl-R finds a statement in the history", async () => {
    const repl = open();
    await repl.waitFor("dirq> ");
    repl.type(`SELECT 'needle' AS found;${KEY.enter}`);
    await repl.waitFor("(1 row)");
    repl.type(`SELECT 'other' AS x;${KEY.enter}`);
    await repl.waitFor("(1 row)");
    await repl.waitFor("dirq> ");
    repl.type(`${KEY.ctrlR}need`);
    await repl.waitFor("(reverse-i-search)'need': SELECT 'needle' AS found;");
    repl.type(KEY.enter);
    assert.match(await repl.waitFor("(1 row)"), /found\n-+\nneedle\n/);
    repl.type(KEY.ctrlD);
    await repl.expectExit(0);
  });

  test("Ctrl-C abandons the line and the session goes on", async () => {
    const repl = open();
    await repl.waitFor("dirq> ");
    repl.type(`SELECT nothing_here${KEY.enter}FROM`);
    await repl.waitFor("...> FROM");
    repl.type(KEY.ctrlC);
    await repl.waitFor("^C");
    await repl.waitFor("dirq> ");
    repl.type(`SELECT 3 AS three;${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /three\n-+\n\s*3\n/);
    repl.type(KEY.ctrlD);
    await repl.expectExit(0);
    assert.doesNotMatch(repl.text, /nothing_here.*\n.*no such column/);
  });

  test("Ctrl-C stops a statement that runs for ever; the index survives", async () => {
    const repl = open();
    await repl.waitFor("dirq> ");
    repl.type(
      `WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n;${KEY.enter}`,
    );
    await repl.waitFor("count(*) FROM n;\n");
    // The statement runs in a query process below the REPL; wait until it runs there. One is
    // started ahead of the first statement, and its own start-up runs too: only the statement
    // takes a whole second of CPU.
    const second = clockTicks();
    const queryProcesses = () =>
      (descendants(repl.pid) ?? []).filter(
        ({ pid, command, state }) =>
          command.includes("query-process") && state === "R" && (cpuTicks(pid) ?? 0) >= second,
      );
    let running = queryProcesses();
    // The deadline only bounds a failure: it shows what the session printed instead of hanging.
    const deadline = Date.now() + 30_000;
    while (running.length === 0 && descendants(repl.pid) !== null) {
      assert.ok(
        Date.now() < deadline,
        `no query process runs the statement; the session shows:\n${plainText(repl.text)}`,
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      running = queryProcesses();
    }
    repl.type(KEY.ctrlC);
    await repl.waitFor("dirq: interrupted: the statement was stopped");
    // Its work really stopped: the process that ran it is gone.
    // A zombie has ended (its parent has not reaped it yet).
    const alive = () =>
      (descendants(repl.pid) ?? []).filter(
        ({ command, state }) => command.includes("query-process") && state !== "Z",
      );
    for (const { pid } of running) {
      while (alive().some((process) => process.pid === pid)) {
        const left = alive().map(({ pid, state }) => `${pid} ${state}`);
        assert.ok(Date.now() < deadline + 30_000, `query process ${pid} still runs: ${left}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    await repl.waitFor("dirq> ");
    repl.type(`SELECT count(*) AS files FROM './';${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /files\n-+\n\s*3\n/);
    repl.type(KEY.ctrlD);
    await repl.expectExit(0);
  });

  test("line editing: Ctrl-A/E, Alt-B/F, Ctrl-W, Ctrl-K and Ctrl-Y", async () => {
    const repl = open();
    await repl.waitFor("dirq> ");
    // Alt-B moves before `six`; Ctrl-E back to the end.
    repl.type(`SELECT 6 six${KEY.altB}AS ${KEY.ctrlE};${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /six\n-+\n\s*6\n/);
    // Ctrl-A, then Alt-F moves past `SELECT ` (readline skips the space after a word too).
    repl.type(`SELECT AS seven;${KEY.ctrlA}${KEY.altF}7 ${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /seven\n-+\n\s*7\n/);
    // Ctrl-W removes the last word.
    repl.type(`SELECT 8 AS eight; oops${KEY.ctrlW}${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /eight\n-+\n\s*8\n/);
    // Ctrl-K kills the whole line from its start; Ctrl-Y yanks it back.
    repl.type(`SELECT 9 AS nine;${KEY.ctrlA}${KEY.ctrlK}${KEY.ctrlY}${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /nine\n-+\n\s*9\n/);
    repl.type(KEY.ctrlD);
    await repl.expectExit(0);
  });

  test("Up after re-running a recalled statement, or after abandoning a recalled line, recalls the newest entry", async () => {
    const repl = open([], join(dataHome, "history-position"));
    await repl.waitFor("dirq> ");
    repl.type(`SELECT 'one' AS n;${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /n\n-+\none\n/);
    repl.type(`SELECT 'two' AS n;${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /n\n-+\ntwo\n/);
    // Up, Enter re-runs the newest; the next Up must find it again, not the one before.
    repl.type(`${KEY.up}${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /n\n-+\ntwo\n/);
    repl.type(`${KEY.up}${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /n\n-+\ntwo\n/);
    // Browse to the older entry and abandon it with Ctrl-C: Up starts from the newest again.
    repl.type(`${KEY.up}${KEY.up}`);
    await repl.waitFor("SELECT 'one' AS n;");
    repl.type(KEY.ctrlC);
    await repl.waitFor("^C");
    await repl.waitFor("dirq> ");
    repl.type(`${KEY.up}${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /n\n-+\ntwo\n/);
    // The same after emptying a recalled line with Ctrl-U.
    repl.type(`${KEY.up}${KEY.up}`);
    await repl.waitFor("SELECT 'one' AS n;");
    repl.type(`${KEY.ctrlU}${KEY.up}${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /n\n-+\ntwo\n/);
    repl.type(KEY.ctrlD);
    await repl.expectExit(0);
  });

  test("Ctrl-Y yanks the word Ctrl-W killed; kills in a row join; Alt-Y yanks older kills", async () => {
    const repl = open();
    await repl.waitFor("dirq> ");
    // An older kill (the whole line, Ctrl-K) that Ctrl-Y must not paste instead.
    repl.type(`SELECT 12 AS twelve;${KEY.ctrlA}${KEY.ctrlK}`);
    repl.type(`SELECT 13 AS thirteen${KEY.ctrlW}${KEY.ctrlY};${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /thirteen\n-+\n\s*13\n/);
    // Two Ctrl-W in a row kill `AS fourteen` as one piece of text.
    repl.type(`SELECT 14 AS fourteen${KEY.ctrlW}${KEY.ctrlW}${KEY.ctrlY};${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /fourteen\n-+\n\s*14\n/);
    // Ctrl-Y then Alt-Y: the kill before the newest replaces it.
    repl.type(
      `fifteen${KEY.ctrlW}SELECT 15 AS zzz${KEY.ctrlW}${KEY.ctrlY}${KEY.altY};${KEY.enter}`,
    );
    assert.match(await repl.waitFor("(1 row)"), /fifteen\n-+\n\s*15\n/);
    repl.type(KEY.ctrlD);
    await repl.expectExit(0);
  });

  test(".tables, \\d and help are answered at once, not left waiting at ...>", async () => {
    const repl = open();
    await repl.waitFor("dirq> ");
    repl.type(`.tables${KEY.enter}`);
    await repl.waitFor("dirq: .tables: there are no dot-commands; tables are listed in SQL:");
    await repl.waitFor("dirq> ");
    repl.type(`\\d${KEY.enter}`);
    await repl.waitFor("dirq: \\d: there are no backslash commands;");
    await repl.waitFor("dirq> ");
    repl.type(`help${KEY.enter}`);
    await repl.waitFor("Statements are SQL (SQLite)");
    await repl.waitFor("dirq> ");
    repl.type(`SELECT 5 AS five;${KEY.enter}`);
    assert.match(await repl.waitFor("(1 row)"), /five\n-+\n\s*5\n/);
    repl.type(KEY.ctrlD);
    await repl.expectExit(0);
    assert.doesNotMatch(repl.text, /\.\.\.> /);
  });

  test("files skipped while building are named once, before the first prompt", async () => {
    const hook = join(root, "hook.mjs");
    writeFileSync(
      hook,
      `const p = process.argv[2]; if (p.endsWith("b.md")) { console.error("no good"); process.exit(2); }
console.log(JSON.stringify([{ file: p.split("/").pop() }]));`,
    );
    const config = join(root, "t.toml");
    writeFileSync(
      config,
      `[[table]]\nname = "md"\nglob = "**/*.md"\non-file = ${JSON.stringify(`${process.execPath} ${hook} {path}`)}\n`,
    );
    try {
      const repl = open(["-c", config]);
      const before = await repl.waitFor("dirq> ");
      assert.match(before, /dirq: skipped b\.md: hook exited with code 2: no good\n/);
      repl.type(`SELECT file FROM md;${KEY.enter}`);
      assert.match(await repl.waitFor("(1 row)"), /file\n-+\nc\.md\n/);
      repl.type(KEY.ctrlD);
      await repl.expectExit(0);
      assert.equal(repl.text.match(/dirq: skipped/g)?.length, 1);
    } finally {
      rmSync(hook);
      rmSync(config);
    }
  });

  test("--parse: a later statement naming a column the first did not load gets it, after a file changes too", async () => {
    const random = seededRandom(69);
    const cities = ["Oslo", "Rome", "Lima", "Kyiv"];
    const rows = Array.from({ length: 300 }, (_, i) => ({
      id: i + 1,
      city: cities[Math.floor(random() * cities.length)] as string,
      amount: Math.floor(random() * 1000),
    }));
    const csv = (part: typeof rows, extra: boolean) =>
      `id,city,amount${extra ? ",extra" : ""}\n` +
      part.map((r) => `${r.id},${r.city},${r.amount}${extra ? `,x${r.id}` : ""}`).join("\n") +
      "\n";
    const tree = makeTree({
      "a.csv": csv(rows.slice(0, 200), false),
      "b.csv": csv(rows.slice(200), false),
    });
    /** The table the REPL prints for a GROUP BY city of `part`, ordered by city. */
    const grouped = (part: typeof rows) => {
      const sums = new Map<string, number>();
      for (const r of part) sums.set(r.city, (sums.get(r.city) ?? 0) + r.amount);
      return [...sums].sort(([a], [b]) => (a < b ? -1 : 1));
    };
    try {
      const repl = new TerminalSession(["--parse", "csv"], {
        cwd: tree,
        env: { XDG_DATA_HOME: dataHome },
      });
      sessions.push(repl);
      await repl.waitFor("dirq> ");
      // Loads `amount` alone.
      repl.type(`SELECT sum(amount) AS total FROM './*.csv';${KEY.enter}`);
      const total = rows.reduce((sum, r) => sum + r.amount, 0);
      assert.match(await repl.waitFor("(1 row)"), new RegExp(`total\\n-+\\n\\s*${total}\\n`));
      repl.type(`SELECT sql FROM sqlite_schema WHERE name = './*.csv';${KEY.enter}`);
      assert.match(await repl.waitFor("(1 row)"), /CREATE TABLE "\.\/\*\.csv" \("amount", _dirq/);
      // Names `city`, which the first statement did not.
      repl.type(
        `SELECT city, sum(amount) AS s FROM './*.csv' GROUP BY city ORDER BY city;${KEY.enter}`,
      );
      const shown = await repl.waitFor(`(${grouped(rows).length} rows)`);
      for (const [city, sum] of grouped(rows))
        assert.match(shown, new RegExp(`\\n${city}\\s+${sum}\\n`));
      // A file gains a key: the watcher writes its rows with it; the other file's rows still
      // have their cities when a statement names the new key.
      writeFileSync(join(tree, "b.csv"), csv(rows.slice(200), true));
      const expected = `(${rows.length - 200} rows)`;
      const counts = new RegExp(
        `e\\s+c\\n-+\\s+-+\\n\\s*${rows.length - 200}\\s+${rows.length}\\n`,
      );
      // The watcher applies the change a moment later: asked again until it has.
      for (let attempt = 0; ; attempt++) {
        repl.type(`SELECT count(extra) AS e, count(city) AS c FROM './*.csv';${KEY.enter}`);
        const answer = await repl.waitFor("(1 row)");
        if (counts.test(answer) || attempt >= 50) {
          assert.match(answer, counts);
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      repl.type(
        `SELECT city, extra FROM './*.csv' WHERE extra IS NOT NULL ORDER BY _dirq_row_index;${KEY.enter}`,
      );
      assert.match(await repl.waitFor(expected), /city\s+extra\n/);
      repl.type(KEY.ctrlD);
      await repl.expectExit(0);
    } finally {
      removeTree(tree);
    }
  });
});
