"""Path captures, ``columns``, ``strict`` and bytes from ``extract`` in the Python SDK: the cases
of dirsql's own Python tests for these features, as dirq answers them (a row that breaks
``strict`` skips its file, where dirsql fails the whole index). Run by
packages/dirq/test/python-sdk.test.ts with the package installed from its wheel."""

import json
import os
from pathlib import Path
from typing import Any, Dict, List

import pytest

import dirq

WAIT = 20.0


def write(root: Path, path: str, data: bytes) -> None:
    target = root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    aside = target.with_name(target.name + ".part")
    aside.write_bytes(data)
    os.replace(aside, target)


def parse(path: str, content: bytes) -> List[Dict[str, Any]]:
    return [json.loads(content)]


def test_path_captures_are_columns_of_every_row(tmp_path: Path) -> None:
    write(tmp_path, "comments/abc123/index.jsonl", b'{"body":"hi"}\n{"body":"yo"}\n')
    table = dirq.Table(
        "comments",
        "comments/{thread_id}/index.jsonl",
        format="jsonl",
        schema={"thread_id": "TEXT", "body": "TEXT"},
    )
    with dirq.open(tmp_path, tables=[table], progress=False) as db:
        assert db.query("SELECT * FROM comments") == [
            {"thread_id": "abc123", "body": "hi"},
            {"thread_id": "abc123", "body": "yo"},
        ]


def test_columns_map_dot_paths_and_captures(tmp_path: Path) -> None:
    post = b'{"metadata":{"author":{"name":"Alice"}},"items":[{"n":1}]}'
    write(tmp_path, "posts/2024/a.json", post)
    table = dirq.Table(
        "posts",
        "posts/{year}/*.json",
        extract=parse,
        columns={"display_name": "metadata.author.name", "first": "items.0.n", "year": "year"},
    )
    with dirq.open(tmp_path, tables=[table], progress=False) as db:
        assert db.query("SELECT * FROM posts") == [
            {"display_name": "Alice", "first": 1, "year": "2024"}
        ]


def test_strict_skips_the_file_with_extra_or_missing_keys(tmp_path: Path) -> None:
    write(tmp_path, "exact.json", b'{"name":"apple","color":"red"}')
    write(tmp_path, "extra.json", b'{"name":"pear","color":"green","size":3}')
    write(tmp_path, "missing.json", b'{"name":"fig"}')
    table = dirq.Table(
        "items",
        "*.json",
        extract=parse,
        schema={"name": "TEXT", "color": "TEXT"},
        strict=True,
    )
    with dirq.open(tmp_path, tables=[table], progress=False) as db:
        assert db.query("SELECT * FROM items") == [{"name": "apple", "color": "red"}]
        reasons = {file["path"]: file["reason"] for file in db.skipped()}
        assert "has keys outside the schema: size" in reasons["extra.json"]
        assert "lacks schema columns: color" in reasons["missing.json"]


def test_strict_without_a_schema_is_an_error_naming_the_key(tmp_path: Path) -> None:
    table = dirq.Table("items", "*.json", extract=parse, strict=True)
    with pytest.raises(dirq.DirqError) as raised:
        dirq.open(tmp_path, tables=[table], progress=False)
    assert "tables[0].strict: needs a schema" in raised.value.message


def test_bytes_are_a_blob_in_rows_and_row_events(tmp_path: Path) -> None:
    write(tmp_path, "blobs/a.bin", b"\x00\x01\xff")

    def blob(path: str, content: bytes) -> List[Dict[str, Any]]:
        return [{"data": content, "mem": memoryview(b"\x0a")}]

    table = dirq.Table("blobs", "blobs/{name}.bin", extract=blob)
    with dirq.open(tmp_path, tables=[table], progress=False) as db:
        assert db.query("SELECT name, data, typeof(data) AS t, mem FROM blobs") == [
            {"name": "a", "data": "0001ff", "t": "blob", "mem": "0a"}
        ]
        with db.watch() as events:
            events.ready(timeout=WAIT)
            write(tmp_path, "blobs/b.bin", b"\xab")
            event = events.get(WAIT)
        assert event["action"] == "insert"
        assert event["row"] == {"name": "b", "data": "ab", "mem": "0a"}
    # Through persist: written by one index, read back by the next.
    for _ in range(2):
        with dirq.open(tmp_path, tables=[table], persist=True, progress=False) as db:
            rows = db.query("SELECT name, data, typeof(data) AS t FROM blobs ORDER BY name")
            assert rows == [
                {"name": "a", "data": "0001ff", "t": "blob"},
                {"name": "b", "data": "ab", "t": "blob"},
            ]
