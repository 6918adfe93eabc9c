# Values as the CLI's JSON gives them (exact integers, BLOBs as hex), and bound parameters.
import os
import shutil
import tempfile

import dirq

root = tempfile.mkdtemp(prefix="dirq-example-")
for name, text in {"a.md": "short", "b.md": "a little longer", "c.txt": "not markdown"}.items():
    with open(os.path.join(root, name), "w") as file:
        file.write(text)

try:
    with dirq.open(root) as db:
        # An INTEGER beyond 2^53 stays exact; a BLOB is lowercase hex; NULL is None.
        print(db.query("SELECT 9223372036854775807 AS big, 0.5 AS r, X'CAFE' AS b, NULL AS n"))
        # Positional: one value per ?, in order.
        print(db.query("SELECT path FROM './' WHERE ext = ? AND size > ?", ["md", 10]))
        # Named: :name, @name and $name take the value keyed by name.
        greeting = {"greeting": "hi", "who": "you"}
        print(db.query("SELECT :greeting || ', ' || @who AS text", greeting))
        try:
            db.query("DELETE FROM './'")
        except dirq.DirqError as error:
            print(error.code)
finally:
    shutil.rmtree(root)
