"""Drives ``Dirq.live()`` against real files for packages/dirq/test/python-sdk-live.test.ts:
each step prints one JSON line (what the live query holds beside a fresh query's answer)."""

import asyncio
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any, List

import dirq

WAIT = 20.0
SQL = "SELECT basename, size FROM './d/*.txt' ORDER BY basename"


def write(root: Path, path: str, text: str) -> None:
    """Writes aside and renames into place: the watcher never sees half a file."""
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    aside = target.with_name(target.name + ".part")
    aside.write_text(text)
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


def live_sql_count() -> str:
    return "SELECT count(*) AS n, sum(size) AS bytes FROM './d/*.txt'"


def main() -> None:
    root = Path(sys.argv[1])
    with dirq.open(root, progress=False) as db:
        sync_steps(root, db)
        errors(db)
        asyncio.run(async_steps(root, db))
    report("done")


main()
