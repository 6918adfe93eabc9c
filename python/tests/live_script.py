"""Drives ``Dirq.live()`` against real files for packages/dirq/test/python-sdk-live.test.ts:
each step prints one JSON line (what the live query holds beside a fresh query's answer)."""

import asyncio
import json
import os
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, List

import dirq

WAIT = 20.0
SQL = "SELECT basename, size FROM './d/*.txt' ORDER BY basename"


def write(root: Path, path: str, text: str) -> None:
    """Writes aside, outside the tree (a file beside the target would be a row of its own), and
    renames into place: the watcher never sees half a file."""
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, aside = tempfile.mkstemp(dir=root.parent, suffix=".part")
    with os.fdopen(handle, "w") as file:
        file.write(text)
    os.replace(aside, target)


def report(step: str, **fields: Any) -> None:
    print(json.dumps({"step": step, **fields}), flush=True)


def caught_up(db: dirq.Dirq, live: dirq.LiveQuery) -> List[dirq.LiveChange]:
    """Changes taken until the live rows are a fresh query's answer."""
    changes = []
    while live.rows != db.query(SQL):
        changes.append(live.get(timeout=WAIT))
    return changes


def sync_steps(root: Path, db: dirq.Dirq) -> None:
    with db.live(SQL, key="basename") as live:
        live.ready()
        report("snapshot", rows=live.rows, columns=live.columns, fresh=db.query(SQL))
        write(root, "d/c.txt", "ccc")
        changes = caught_up(db, live)
        report("added", rows=live.rows, fresh=db.query(SQL), changes=changes)
        write(root, "d/a.txt", "a longer text")
        changes = caught_up(db, live)
        report("updated", rows=live.rows, fresh=db.query(SQL), changes=changes)
        (root / "d" / "b.txt").unlink()
        changes = caught_up(db, live)
        report("removed", rows=live.rows, fresh=db.query(SQL), changes=changes)
        ended: List[str] = []
        waiting = threading.Thread(target=lambda: ended.append(repr(list(live))))
        waiting.start()
        live.close()
        waiting.join(WAIT)
        report("closed", ended=ended, alive=waiting.is_alive())


def errors(db: dirq.Dirq) -> None:
    for sql, key in (("SELECT nope FROM './d/*.txt'", None), (SQL, "missing")):
        try:
            db.live(sql, key=key).ready()
            report("error", code=None)
        except dirq.DirqError as error:
            report("error", code=error.code, message=error.message)


async def async_steps(root: Path, db: dirq.Dirq) -> None:
    live = db.live("SELECT count(*) AS n, sum(size) AS bytes FROM './d/*.txt'")
    await live.aready()
    first = list(live.rows)
    write(root, "d/e.txt", "eeeee")
    changes = []
    async for change in live:
        changes.append(change)
        if live.rows == await db.aquery(live_sql_count()):
            break
    live.close()
    report("async", first=first, rows=live.rows, changes=changes, fresh=db.query(live_sql_count()))


# A file named as no JSON value is makes json() fail: a later run of this statement errs.
ERROR_SQL = "SELECT basename, json(basename) AS j FROM './e' ORDER BY basename"


def error_steps(root: Path, db: dirq.Dirq) -> None:
    """A statement that fails on a later run: a change with ``error``, the rows kept, and the
    next good answer after it."""
    write(root, "e/1", "1")
    write(root, "e/2", "2")
    with db.live(ERROR_SQL) as live:
        live.ready()
        first = list(live.rows)
        write(root, "e/x", "x")
        failed = live.get(timeout=WAIT)
        held = list(live.rows)
        (root / "e" / "x").unlink()
        write(root, "e/3", "3")
        changes = caught_up_to(db, live, ERROR_SQL)
        report(
            "error_frame",
            first=first,
            failed=failed,
            held=held,
            changes=changes,
            rows=live.rows,
            fresh=db.query(ERROR_SQL),
        )


def caught_up_to(db: dirq.Dirq, live: dirq.LiveQuery, sql: str) -> List[dirq.LiveChange]:
    changes = []
    while live.rows != db.query(sql):
        changes.append(live.get(timeout=WAIT))
    return changes


# Rows of some megabytes each: three diffs are past the 16 MiB of frames a live query keeps.
BIG_SQL = "SELECT basename, printf('%.*c', size * 1000000, 'x') AS pad FROM './f' ORDER BY basename"


def shape(rows: List[Any]) -> List[Any]:
    return [[row["basename"], len(row["pad"])] for row in rows]


def behind_steps(root: Path, db: dirq.Dirq) -> None:
    """Two live queries of one statement share its evaluator: one takes every change, the other
    none until the history no longer holds what it missed; it gets the whole answer anew."""
    write(root, "f/a", "aaaaa")
    with db.live(BIG_SQL) as behind, db.live(BIG_SQL) as keeping_up:
        behind.ready()
        keeping_up.ready()
        first = shape(behind.rows)
        for size in (6, 7, 8):
            write(root, "f/a", "a" * size)
            while shape(keeping_up.rows) != [["a", size * 1000000]]:
                keeping_up.get(timeout=WAIT)
        change = behind.get(timeout=WAIT)
        taken = {"snapshot": change["snapshot"], "error": change["error"]}
        rows = shape(behind.rows)
        fresh = shape(db.query(BIG_SQL))
        write(root, "f/b", "b")
        after = shape(behind.rows)
        nxt = behind.get(timeout=WAIT)
        report(
            "behind",
            first=first,
            change=taken,
            rows=rows,
            fresh=fresh,
            before_next=after,
            next={"snapshot": nxt["snapshot"], "added": shape([a["row"] for a in nxt["added"]])},
            next_rows=shape(behind.rows),
            next_fresh=shape(db.query(BIG_SQL)),
        )


def live_sql_count() -> str:
    return "SELECT count(*) AS n, sum(size) AS bytes FROM './d/*.txt'"


def main() -> None:
    root = Path(sys.argv[1])
    with dirq.open(root, progress=False) as db:
        sync_steps(root, db)
        errors(db)
        error_steps(root, db)
        behind_steps(root, db)
        asyncio.run(async_steps(root, db))
    report("done")


main()
