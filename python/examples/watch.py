# Follow row changes as files change, with a Python extract function.
import os
import shutil
import tempfile

import dirq

root = tempfile.mkdtemp(prefix="dirq-example-")
todo = os.path.join(root, "todo.txt")
with open(todo, "w") as file:
    file.write("buy milk\n")


def lines(path: str, content: bytes) -> list:
    return [{"text": line} for line in content.decode().splitlines() if line]


try:
    with dirq.open(root, tables=[dirq.Table("todo", "*.txt", extract=lines)]) as db:
        with db.watch() as events:
            events.ready()  # the watcher sees the tree: changes from now on are events
            # Written aside and renamed into place: the watcher never sees a half-written file.
            with open(todo + ".tmp", "w") as file:
                file.write("buy oat milk\nwrite docs\n")
            os.replace(todo + ".tmp", todo)
            for event in events:
                if event["action"] == "error":
                    raise RuntimeError(event["error"])
                print(event["action"], event["row"], event["old_row"])
                if event["action"] == "insert":
                    break
finally:
    shutil.rmtree(root)
