"""The Python SDK against the real dirq CLI (DIRQ_BIN) in a real child process, on real files in
temporary folders. Run by packages/dirq/test/python-sdk.test.ts with the package installed from
its wheel."""

import asyncio
import datetime
import gc
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

import dirq

WAIT = 20.0


def without_commit(event: Any) -> Dict[str, Any]:
    """A row event without its commit number (checked to be a number), to compare contents."""
    rest = dict(event)
    commit = rest.pop("commit")
    assert isinstance(commit, int) and commit >= 0, event
    return rest


def write(root: Path, path: str, text: str) -> Path:
    """Writes a file aside and renames it into place: a watcher never sees it half-written."""
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    aside = target.with_name(target.name + ".part")
    aside.write_text(text)
    os.replace(aside, target)
    return target


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by its parent) is gone for our purpose.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, seconds: float = WAIT) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def child_pid(db: dirq.Dirq) -> int:
    return db._channel.pid  # type: ignore[attr-defined]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def db(root: Path) -> Iterator[dirq.Dirq]:
    with dirq.open(root, progress=False) as index:
        yield index


def test_values_follow_the_json_mapping(db: dirq.Dirq) -> None:
    rows = db.query(
        "SELECT 9223372036854775807 AS max, -9223372036854775808 AS min, 9007199254740993 AS odd,"
        " 2.5 AS real, 2.0 AS whole, 1e999 AS inf, 'héllo ☃' AS text, NULL AS nothing_here,"
        " X'00FF10' AS blob, typeof(2.0) AS kind"
    )
    assert rows == [
        {
            "max": 2**63 - 1,
            "min": -(2**63),
            "odd": 2**53 + 1,
            "real": 2.5,
            # A whole REAL is written 2 in the CLI's JSON, and json.loads reads an int.
            "whole": 2,
            "inf": None,
            "text": "héllo ☃",
            "nothing_here": None,
            "blob": "00ff10",
            "kind": "real",
        }
    ]
    assert type(rows[0]["odd"]) is int
    assert list(rows[0]) == [
        "max",
        "min",
        "odd",
        "real",
        "whole",
        "inf",
        "text",
        "nothing_here",
        "blob",
        "kind",
    ]


def test_parameters_bind_exactly(db: dirq.Dirq) -> None:
    rows = db.query(
        "SELECT ? AS a, ? AS b, ? AS c, ? AS d, typeof(?) AS e, ? AS f",
        [2**63 - 1, 0.25, "text", b"\x01\xab", b"", None],
    )
    assert rows == [{"a": 2**63 - 1, "b": 0.25, "c": "text", "d": "01ab", "e": "blob", "f": None}]
    named = db.query(
        "SELECT :a || @b AS joined, $c + 1 AS n", {"a": "x", "b": "y", "c": -(2**62)}
    )
    assert named == [{"joined": "xy", "n": -(2**62) + 1}]
    assert db.query("SELECT ? IS NULL AS nan, ? AS inf", [float("nan"), float("inf")]) == [
        {"nan": 1, "inf": None}
    ]
    with pytest.raises(dirq.DirqError) as wrong_count:
        db.query("SELECT ?, ?", [1])
    assert wrong_count.value.code == "QUERY_PARAMETERS"
    with pytest.raises(dirq.DirqError) as wrong_type:
        db.query("SELECT ?", [datetime.date(2024, 1, 2)])  # type: ignore[list-item]
    assert wrong_type.value.code == "QUERY_PARAMETERS"
    assert "date" in wrong_type.value.message
    with pytest.raises(TypeError):
        db.query("SELECT ?", "abc")


def test_errors_carry_dirqs_code_and_message(root: Path, db: dirq.Dirq) -> None:
    cases = {
        "DELETE FROM './'": "QUERY_NOT_READONLY",
        "SELECT * FROM nope": "SQL_ERROR",
        "SELECT 1; SELECT 2": "QUERY_MULTIPLE_STATEMENTS",
        "SELECT * FROM _dirq_meta": "QUERY_INTERNAL_TABLE",
        "SELECT * FROM '../x'": "PATH_OUTSIDE_ROOT",
    }
    for sql, code in cases.items():
        with pytest.raises(dirq.DirqError) as caught:
            db.query(sql)
        assert caught.value.code == code, (sql, caught.value)
        assert caught.value.message == str(caught.value)
    with pytest.raises(dirq.DirqError) as no_root:
        dirq.open(root / "missing")
    assert no_root.value.code == "ROOT_INVALID"
    assert "missing" in no_root.value.message
    with pytest.raises(dirq.DirqError) as no_way:
        dirq.open(root, tables=[dirq.Table("t", "*.json")])
    assert no_way.value.code == "CONFIG_INVALID"
    assert "on_file" in no_way.value.message and "onFile" not in no_way.value.message
    with pytest.raises(dirq.DirqError) as bad_config:
        dirq.open(root, config=[root / "nope.toml"])
    assert bad_config.value.code == "CONFIG_INVALID"


def test_extract_runs_in_python(root: Path) -> None:
    write(root, "notes/a.json", '{"title": "A", "n": 9007199254740993}')
    write(root, "notes/b.json", '{"title": "B", "n": 2}')
    write(root, "notes/bad.json", "{oops")
    seen: List[str] = []
    main_thread = threading.get_ident()

    def notes(path: str, content: bytes) -> List[Dict[str, Any]]:
        seen.append(path)
        data = json.loads(content)
        return [
            {
                **data,
                "real": 3.0,
                "flag": True,
                "tags": ["x", 1],
                "day": datetime.date(2024, 5, 6),
                "in_main_thread": threading.get_ident() == main_thread,
                "nan": float("nan"),
            }
        ]

    with dirq.open(root, tables=[dirq.Table("notes", "notes/*.json", extract=notes)]) as db:
        rows = db.query(
            "SELECT title, n, real, typeof(real) AS real_type, flag, tags, day, nan"
            " FROM notes ORDER BY title"
        )
        assert rows == [
            {
                "title": "A",
                "n": 9007199254740993,
                "real": 3,
                "real_type": "real",
                "flag": 1,
                "tags": '["x",1]',
                "day": "2024-05-06",
                "nan": None,
            },
            {
                "title": "B",
                "n": 2,
                "real": 3,
                "real_type": "real",
                "flag": 1,
                "tags": '["x",1]',
                "day": "2024-05-06",
                "nan": None,
            },
        ]
        assert sorted(seen) == ["notes/a.json", "notes/b.json", "notes/bad.json"]
        skipped = db.skipped()
        assert [file["path"] for file in skipped] == ["notes/bad.json"]
        assert "JSONDecodeError" in skipped[0]["reason"]


def test_extract_results_that_are_not_rows_skip_their_file(root: Path) -> None:
    for name in ["dict", "strings", "good"]:
        write(root, f"{name}.txt", name)
    opened: List[dirq.Dirq] = []

    def rows(path: str, content: bytes) -> Any:
        kind = content.decode()
        if kind == "dict":
            return {"not": "a list"}
        if kind == "strings":
            return ["a", "b"]
        if kind == "reentry":
            return opened[0].query("SELECT 1")
        return [{"kind": kind}]

    with dirq.open(root, tables=[dirq.Table("t", "*.txt", extract=rows)], progress=False) as db:
        opened.append(db)
        assert db.query("SELECT kind FROM t") == [{"kind": "good"}]
        reasons = {file["path"]: file["reason"] for file in db.skipped()}
        assert "expected a list of row dicts" in reasons["dict.txt"]
        assert "row 0 of extract's result is a string" in reasons["strings.txt"]
        # After a change, a failing extract is an error event.
        with db.watch() as events:
            events.ready(timeout=WAIT)
            write(root, "reentry.txt", "reentry")
            error = events.get(WAIT)
        assert error["action"] == "error" and error["file_path"] == "reentry.txt"
        assert "extract function cannot use the index" in error["error"]
        assert db.query("SELECT kind FROM t") == [{"kind": "good"}]


def test_format_tables_and_tables(root: Path) -> None:
    write(root, "data/people.csv", "id,name,score\n1,ann,9.5\n2,bo,\n")
    write(root, "data/page.json", '{"items": [{"sku": "a", "qty": 9223372036854775807}]}')
    write(root, "docs/hello.md", "---\ntitle: Hello\n---\nbody text\n")
    tables = [
        dirq.Table("people", "data/*.csv", format="csv", schema={"id": "INTEGER", "name": "TEXT"}),
        dirq.Table("items", "data/*.json", format="json", each="items"),
        dirq.Table(
            "docs",
            "docs/*.md",
            format="markdown",
            ddl="CREATE VIEW titles AS SELECT title FROM docs",
        ),
    ]
    with dirq.open(root, tables=tables, progress=False) as db:
        assert db.query("SELECT * FROM people ORDER BY id") == [
            {"id": 1, "name": "ann"},
            {"id": 2, "name": "bo"},
        ]
        assert db.query("SELECT sku, qty FROM items") == [{"sku": "a", "qty": 2**63 - 1}]
        assert db.query("SELECT title, body FROM docs") == [
            {"title": "Hello", "body": "body text\n"}
        ]
        assert db.tables() == [
            {
                "name": "docs",
                "type": "table",
                "columns": [{"name": "title", "type": ""}, {"name": "body", "type": ""}],
            },
            {
                "name": "items",
                "type": "table",
                "columns": [{"name": "sku", "type": ""}, {"name": "qty", "type": ""}],
            },
            {
                "name": "people",
                "type": "table",
                "columns": [{"name": "id", "type": "INTEGER"}, {"name": "name", "type": "TEXT"}],
            },
            # SQLite's own word for a view's column: its affinity.
            {"name": "titles", "type": "view", "columns": [{"name": "title", "type": "BLOB"}]},
        ]


def test_watch_sees_insert_update_delete_and_error(root: Path) -> None:
    write(root, "a.json", '[{"k": 1, "v": "one"}]')
    with dirq.open(root, tables=[dirq.Table("t", "*.json", format="json")], progress=False) as db:
        with db.watch() as events:
            events.ready(timeout=WAIT)
            write(root, "b.json", '[{"k": 2, "v": 9223372036854775807}]')
            assert without_commit(events.get(WAIT)) == {
                "action": "insert",
                "table": "t",
                "file_path": "b.json",
                "row": {"k": 2, "v": 2**63 - 1},
                "old_row": None,
            }
            write(root, "a.json", '[{"k": 1, "v": "uno"}]')
            assert without_commit(events.get(WAIT)) == {
                "action": "update",
                "table": "t",
                "file_path": "a.json",
                "row": {"k": 1, "v": "uno"},
                "old_row": {"k": 1, "v": "one"},
            }
            os.remove(root / "b.json")
            assert without_commit(events.get(WAIT)) == {
                "action": "delete",
                "table": "t",
                "file_path": "b.json",
                "row": {"k": 2, "v": 2**63 - 1},
                "old_row": None,
            }
            write(root, "c.json", "{broken")
            error = events.get(WAIT)
            assert error["action"] == "error"
            assert error["table"] == "t" and error["file_path"] == "c.json"
            assert "c.json" in error["error"] or "JSON" in error["error"]
            # The watcher keeps the index current for queries too.
            assert db.query("SELECT v FROM t") == [{"v": "uno"}]
        with pytest.raises(TimeoutError):
            db.watch(buffer=5).get(timeout=0.2)


def test_watch_with_extract_and_async(root: Path) -> None:
    write(root, "todo.txt", "milk\n")

    def lines(path: str, content: bytes) -> List[Dict[str, Any]]:
        return [{"text": line} for line in content.decode().splitlines()]

    async def main() -> List[Any]:
        seen: List[Any] = []
        async with dirq.open(root, tables=[dirq.Table("todo", "*.txt", extract=lines)]) as db:
            assert await db.aquery("SELECT text FROM todo") == [{"text": "milk"}]
            together = await asyncio.gather(*(db.aquery("SELECT ? AS i", [i]) for i in range(20)))
            assert [rows[0]["i"] for rows in together] == list(range(20))
            async with db.watch() as events:
                await events.aready()
                write(root, "todo.txt", "oat milk\ndocs\n")
                async for event in events:
                    seen.append(without_commit(event))
                    if len(seen) == 2:
                        break
            assert [table["name"] for table in await db.atables()] == ["todo"]
        return seen

    update, insert = asyncio.run(main())
    assert update == {
        "action": "update",
        "table": "todo",
        "file_path": "todo.txt",
        "row": {"text": "oat milk"},
        "old_row": {"text": "milk"},
    }
    assert insert["action"] == "insert" and insert["row"] == {"text": "docs"}


def test_close_ends_the_child_and_is_idempotent(root: Path) -> None:
    db = dirq.open(root, progress=False)
    stream = db.watch()
    stream.ready(timeout=WAIT)
    pid = child_pid(db)
    db.close()
    db.close()
    assert db.closed
    assert wait_gone(pid), "the child still runs after close()"
    assert list(stream) == []  # The stream ended with the index.
    with pytest.raises(dirq.DirqError) as closed:
        db.query("SELECT 1")
    assert closed.value.code == "INDEX_CLOSED"


def test_a_forgotten_close_still_ends_the_child(root: Path) -> None:
    def forget() -> int:
        db = dirq.open(root, progress=False)
        assert db.query("SELECT 1 AS one") == [{"one": 1}]
        return child_pid(db)

    pid = forget()
    gc.collect()
    assert wait_gone(pid), "the child of a collected index still runs"


def test_the_child_ends_when_python_is_killed(root: Path) -> None:
    script = textwrap.dedent(
        """
        import sys, time, dirq
        db = dirq.open(sys.argv[1], tables=[dirq.Table("t", "*.json", format="json")])
        db.watch().ready()
        print(db._channel.pid, flush=True)
        time.sleep(600)
        """
    )
    python = subprocess.Popen(
        [sys.executable, "-c", script, str(root)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert python.stdout is not None
        pid = int(python.stdout.readline())
        assert alive(pid)
        python.send_signal(signal.SIGKILL)
        python.wait()
        assert wait_gone(pid), "the dirq child outlived its killed Python process"
    finally:
        if python.poll() is None:
            python.kill()


def test_the_child_ends_when_python_exits_without_close(root: Path) -> None:
    script = "import sys, dirq; db = dirq.open(sys.argv[1]); print(db._channel.pid)"
    ran = subprocess.run(
        [sys.executable, "-c", script, str(root)], capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == ""
    assert wait_gone(int(ran.stdout)), "the child outlived the interpreter that left it open"


def test_no_cli_to_run_is_a_clear_error(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIRQ_BIN", str(root / "no-such-cli.cjs"))
    with pytest.raises(dirq.DirqError) as missing:
        dirq.open(root)
    assert missing.value.code == "CLI_UNAVAILABLE"
    assert "DIRQ_BIN is set to" in missing.value.message


def test_a_dead_child_is_an_error_not_a_hang(root: Path) -> None:
    db = dirq.open(root, progress=False)
    os.kill(child_pid(db), signal.SIGKILL)
    with pytest.raises(dirq.DirqError) as gone:
        for _ in range(100):
            db.query("SELECT 1")
            time.sleep(0.05)
    assert gone.value.code == "CHILD_EXITED"
    db.close()


def test_queries_from_several_threads(db: dirq.Dirq) -> None:
    results: Dict[int, Any] = {}

    def work(n: int) -> None:
        results[n] = [db.query("SELECT ? * 2 AS d", [i])[0]["d"] for i in range(50)]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: [i * 2 for i in range(50)] for n in range(4)}


def test_persist_reuses_the_cache(root: Path) -> None:
    write(root, "a.json", '{"x": 1}')
    calls: List[str] = []

    def rows(path: str, content: bytes) -> List[Dict[str, Any]]:
        calls.append(path)
        return [json.loads(content)]

    for _ in range(2):
        table = dirq.Table("t", "*.json", extract=rows)
        with dirq.open(root, tables=[table], persist=True, progress=False) as db:
            assert db.query("SELECT x FROM t") == [{"x": 1}]
    assert calls == ["a.json"], "the second open read the cache"
    assert (root / ".dirq" / "cache.db").exists()


def test_hook_time_limits(root: Path) -> None:
    # A hook that hangs on one file: the time limit skips that file, the others are rows.
    (root / "hook.sh").write_text(
        'case "$1" in *slow*) sleep 120 ;; esac\nprintf "[%s]" "$(cat "$1")"\n'
    )
    write(root, "data/quick.json", '{"n": 1}')
    write(root, "data/slow.json", '{"n": 2}')
    hook = "sh hook.sh {path}"
    with dirq.open(
        root,
        tables=[dirq.Table("t", "data/*.json", on_file=hook, timeout=3)],
        on_file=hook,
        hook_timeout=3,
        progress=False,
    ) as db:
        assert db.query("SELECT n FROM t") == [{"n": 1}]
        assert db.query("SELECT n FROM './data'") == [{"n": 1}]
        reasons = [file["reason"] for file in db.skipped() if file["path"] == "data/slow.json"]
        assert len(reasons) == 2, db.skipped()
        assert all("time limit of 3 s" in reason for reason in reasons), reasons
