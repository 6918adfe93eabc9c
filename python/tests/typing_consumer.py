"""A consumer of the SDK that `mypy --strict` checks against the installed package (py.typed):
packages/dirq/test/python-sdk.test.ts runs it. Not a test to run."""

import asyncio
import json
from typing import Dict, List, Optional

import dirq


def words(path: str, content: bytes) -> List[Dict[str, object]]:
    return [{"path": path, "words": len(content.split())}]


def total_words(db: dirq.Dirq) -> int:
    rows: List[dirq.Row] = db.query("SELECT sum(words) AS n FROM texts WHERE path LIKE ?", ["%"])
    value: dirq.Value = rows[0]["n"]
    return value if isinstance(value, int) else 0


def describe(event: dirq.RowEvent) -> str:
    if event["action"] == "error":
        table: Optional[str] = event["table"]
        return f"{event['file_path']}: {event['error']} ({table})"
    old: Optional[dirq.Row] = event["old_row"]
    return f"{event['action']} {event['table']} {event['row']} {old}"


def follow(db: dirq.Dirq) -> List[dirq.Row]:
    with db.live("SELECT path, words FROM texts ORDER BY words", key=["path"]) as live:
        live.ready()
        change: dirq.LiveChange = live.get(timeout=1.0)
        added: List[dirq.PlacedRow] = change["added"]
        moved: List[int] = [update["from"] for update in change["updated"]]
        failed: Optional[str] = change["error"]
        commit: int = live.commit + len(added) + len(moved) + len(failed or "")
        return live.rows if commit >= 0 else []


async def follow_async(db: dirq.Dirq) -> int:
    live: dirq.LiveQuery = db.live("SELECT count(*) AS n FROM texts")
    await live.aready()
    async for change in live:
        return change["commit"]
    return 0


def columns(db: dirq.Dirq) -> Dict[str, List[str]]:
    tables: List[dirq.TableInfo] = db.tables()
    return {table["name"]: [column["name"] for column in table["columns"]] for table in tables}


def skipped_paths(db: dirq.Dirq) -> List[str]:
    return [file["path"] for file in db.skipped()]


def main(root: str) -> None:
    tables = [
        dirq.Table("texts", "**/*.txt", extract=words, schema={"path": "TEXT", "words": "INTEGER"}),
        dirq.Table("posts", "posts/*.json", format="json", each="items"),
    ]
    try:
        with dirq.open(root, config=[], tables=tables, persist=None, no_ignore=False) as db:
            print(total_words(db), columns(db), skipped_paths(db), db.root, db.notices)
            with db.watch(buffer=100) as events:
                events.ready(timeout=5.0)
                for event in events:
                    print(describe(event))
                    break
    except dirq.DirqError as error:
        code: str = error.code
        print(code, error.message)


async def amain(root: str) -> None:
    async with dirq.open(root, persist=True, live=True, progress=False) as db:
        rows = await db.aquery("SELECT :n AS n", {"n": 1})
        print(json.dumps(rows), await db.atables())
        async with db.watch() as events:
            await events.aready()
            async for event in events:
                print(describe(event))
                break


if __name__ == "__main__":
    main(".")
    asyncio.run(amain("."))
