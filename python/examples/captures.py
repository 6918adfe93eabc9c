# Path captures, column mapping, strict tables and bytes stored as BLOBs.
import json
import os
import shutil
import tempfile

import dirq

root = tempfile.mkdtemp(prefix="dirq-example-")
posts = {
    "posts/2024/a.json": {"meta": {"author": {"name": "Ann"}}},
    "posts/2025/b.json": {"meta": {"author": {"name": "Bo"}}},
    "posts/2025/c.json": {"meta": {}},
}
for path, post in posts.items():
    os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
    with open(os.path.join(root, path), "w") as file:
        json.dump(post, file)


def head(path, content):
    # bytes are a BLOB: a query gives it as hex.
    return [{"head": content[:4]}]


tables = [
    # {year}: a capture, a column of every row of the file. columns: where each column comes
    # from (a capture, or a dot path into the row). strict: a row whose path leads nowhere
    # skips its file.
    dirq.Table(
        "posts",
        "posts/{year}/*.json",
        format="json",
        schema={"year": "INTEGER", "author": "TEXT"},
        columns={"year": "year", "author": "meta.author.name"},
        strict=True,
    ),
    dirq.Table("heads", "posts/{year}/{name}.json", extract=head),
]
try:
    with dirq.open(root, tables=tables) as db:
        print(db.query("SELECT year, author FROM posts ORDER BY year"))
        print([file["path"] for file in db.skipped()])
        print(db.query("SELECT name, head, typeof(head) AS type FROM heads WHERE name = 'a'"))
finally:
    shutil.rmtree(root)
