# A live query: the answer of a statement, kept current as files change.
import os
import shutil
import tempfile

import dirq

root = tempfile.mkdtemp(prefix="dirq-example-")
os.makedirs(os.path.join(root, "notes"))


def save(name: str, text: str) -> None:
    # Written aside and renamed into place: the watcher never sees a half-written file.
    path = os.path.join(root, "notes", name)
    with open(path + ".tmp", "w") as file:
        file.write(text)
    os.replace(path + ".tmp", path)


save("a.md", "short")
save("b.md", "a longer note")
sql = "SELECT basename, size FROM './notes/*.md' ORDER BY size DESC"
try:
    with dirq.open(root) as db:
        with db.live(sql, key="basename") as live:
            live.ready()  # the answer is in live.rows; changes from now on are diffs
            print(live.columns, live.rows)
            for name, text in (("c.md", "the longest note of all"), ("a.md", "shorter")):
                save(name, text)
                change = live.get(timeout=20)  # applied to live.rows already
                print("added", change["added"], "updated", change["updated"])
            print(live.rows == db.query(sql), live.rows)
finally:
    shutil.rmtree(root)
