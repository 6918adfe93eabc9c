# The same from asyncio: `async with`, `await db.aquery(...)` and `async for` over watch().
import asyncio
import os
import shutil
import tempfile

import dirq


async def main(root: str) -> None:
    async with dirq.open(root, tables=[dirq.Table("notes", "*.json", format="json")]) as db:
        print(await db.aquery("SELECT count(*) AS notes FROM notes"))
        async with db.watch() as events:
            await events.aready()
            # Written aside and renamed into place: the watcher never sees a half-written file.
            with open(os.path.join(root, "first.tmp"), "w") as file:
                file.write('{"note": "hello", "stars": 3}')
            os.replace(os.path.join(root, "first.tmp"), os.path.join(root, "first.json"))
            async for event in events:
                if event["action"] == "error":
                    raise RuntimeError(event["error"])
                print(event["action"], event["table"], event["file_path"], event["row"])
                break
        print(await db.aquery("SELECT note, stars FROM notes"))


root = tempfile.mkdtemp(prefix="dirq-example-")
try:
    asyncio.run(main(root))
finally:
    shutil.rmtree(root)
