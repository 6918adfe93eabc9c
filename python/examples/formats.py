# Tables dirq reads itself with a built-in format: no extract function, no hook.
import os
import shutil
import tempfile

import dirq

root = tempfile.mkdtemp(prefix="dirq-example-")
files = {
    "sales/2024.csv": "id,zip,amount\n1,007,19.5\n2,10115,\n",
    "api/page1.json": '{"page": 1, "items": [{"sku": "a"}, {"sku": "b"}]}',
    "posts/hello.md": "---\ntitle: Hello\ndraft: no\n---\n# Hello\n",
}
for path, text in files.items():
    os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
    with open(os.path.join(root, path), "w") as file:
        file.write(text)

tables = [
    # CSV: the header names the columns, a number is a number (007 stays text), an empty
    # field is NULL; the schema makes every zip TEXT.
    dirq.Table(
        "sales",
        "sales/*.csv",
        format="csv",
        schema={"id": "INTEGER", "zip": "TEXT", "amount": "REAL"},
    ),
    # each: the rows are the objects of the array under "items" in every file.
    dirq.Table("items", "api/*.json", format="json", each="items"),
    # Markdown: the front matter's keys, and the text after it in body.
    dirq.Table("posts", "posts/**/*.md", format="markdown"),
]
try:
    with dirq.open(root, tables=tables) as db:
        print(db.query("SELECT id, zip, amount FROM sales ORDER BY id"))
        print(db.query("SELECT _dirq_file_path AS file, sku FROM items ORDER BY sku"))
        print(db.query("SELECT title, draft, body FROM posts"))
        print([table["name"] for table in db.tables()])
finally:
    shutil.rmtree(root)
