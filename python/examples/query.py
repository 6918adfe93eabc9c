# Query a folder: a path-table, and a table whose rows a Python function extracts.
import json
import os
import shutil
import tempfile

import dirq

root = tempfile.mkdtemp(prefix="dirq-example-")
os.mkdir(os.path.join(root, "posts"))
posts = {"a.json": {"title": "Hello", "words": 120}, "b.json": {"title": "Again", "words": 80}}
for name, post in posts.items():
    with open(os.path.join(root, "posts", name), "w") as file:
        json.dump(post, file)


def post_rows(path: str, content: bytes) -> list:
    # Called once per file, in this process: (path relative to the root, bytes) -> rows.
    return [json.loads(content)]


table = dirq.Table(
    "posts", "posts/*.json", schema={"title": "TEXT", "words": "INTEGER"}, extract=post_rows
)
try:
    with dirq.open(root, tables=[table]) as db:
        print(db.query("SELECT title, words FROM posts ORDER BY words DESC"))
        print(db.query("SELECT path, size FROM './posts/*.json' ORDER BY path"))
finally:
    shutil.rmtree(root)
