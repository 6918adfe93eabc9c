"""``Dirq.live()``: a statement's current answer and its changes, applied as they come."""

import json
import time
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence

from dirq._closing import ClosesOnExit
from dirq._errors import DirqError
from dirq._types import LiveChange, Row

if TYPE_CHECKING:
    from dirq._channel import Channel

# How long one ask for a frame waits in the dirq process before it answers "nothing yet": the
# iteration checks between asks whether it was closed.
_IDLE_WAIT_SECONDS = 30.0


def apply_diff(rows: List[Row], diff: Dict[str, Any]) -> None:
    """docs/live-queries.md, "Applying a diff": out at the places before, highest first; in at
    the places after, lowest first. A client never sorts rows of its own."""
    out = [entry["at"] for entry in diff["removed"]] + [entry["from"] for entry in diff["updated"]]
    for at in sorted(out, reverse=True):
        del rows[at]
    for entry in sorted(diff["added"] + diff["updated"], key=lambda entry: int(entry["at"])):
        rows.insert(entry["at"], entry["row"])


class LiveQuery(ClosesOnExit):
    """A live query: ``rows`` is the statement's current answer (in its order), and iterating
    (``for change in live`` or ``async for change in live``) gives each change as files change,
    ``rows`` already updated by it. Made by ``Dirq.live()``.

    The diffs are the dirq process's (one evaluator per statement, values and key); this
    object only applies them. It resumes by itself: a consumer that fell behind the
    evaluator's history gets a new snapshot (a change with ``snapshot`` true). End it with
    ``close()`` (or a ``with`` block), or with the index's ``close()``."""

    def __init__(self, channel: "Channel", stream_id: int, request: Dict[str, object]) -> None:
        self._channel = channel
        self._id = stream_id
        self._request = request
        self._rows: List[Row] = []
        self._columns: List[str] = []
        self._commit = 0
        self._opened = False
        self._ended = False

    @property
    def rows(self) -> List[Row]:
        """The current answer: after ``ready()``, then after each change taken."""
        return self._rows

    @property
    def columns(self) -> List[str]:
        return self._columns

    @property
    def commit(self) -> int:
        """The index's commit the current answer is (at least) as of."""
        return self._commit

    # Opening

    def ready(self) -> None:
        """Runs the statement once and holds its answer in ``rows``. Raises the ``DirqError``
        ``query`` would (``SQL_ERROR``, ``QUERY_NOT_READONLY``, ...). Iterating calls it."""
        if self._opened:
            return
        self._check_not_ended()
        self._channel.request({"op": "live", "stream": self._id, **self._request})
        self._opened = True
        while self._first(self._channel.request(self._next_request(None))) is None:
            pass

    async def aready(self) -> None:
        """``ready()``, awaited."""
        if self._opened:
            return
        self._check_not_ended()
        await self._channel.arequest({"op": "live", "stream": self._id, **self._request})
        self._opened = True
        while self._first(await self._channel.arequest(self._next_request(None))) is None:
            pass

    def _first(self, payload: bytes) -> Optional[LiveChange]:
        try:
            return self._take(payload)
        except StopIteration:
            ended = "the live query ended before its first answer"
            raise DirqError("INDEX_CLOSED", ended) from None

    def _check_not_ended(self) -> None:
        if self._ended:
            raise DirqError("INDEX_CLOSED", "this live query is closed: open a new one")

    def _next_request(self, seconds: Optional[float]) -> Dict[str, object]:
        wait = _IDLE_WAIT_SECONDS if seconds is None else min(seconds, _IDLE_WAIT_SECONDS)
        return {"op": "live_next", "stream": self._id, "wait": max(0, int(wait * 1000))}

    # Frames

    def _take(self, payload: bytes) -> Optional[LiveChange]:
        """Applies one frame to ``rows``; the change it makes, if it is one. Raises
        ``StopIteration`` at the end."""
        frame = json.loads(payload)
        if frame is None:
            return None
        if frame.get("end"):
            self._ended = True
            raise StopIteration
        event, data = frame["event"], frame["data"]
        if event == "ready":
            return None
        self._commit = data["commit"]
        change: LiveChange = {
            "commit": self._commit,
            "removed": [],
            "added": [],
            "updated": [],
            "snapshot": event == "snapshot",
            "error": None,
        }
        if event == "snapshot":
            self._rows = data["rows"]
            self._columns = data["columns"]
        elif event == "error":
            change["error"] = data["error"]
        else:
            apply_diff(self._rows, data)
            change["removed"] = data["removed"]
            change["added"] = data["added"]
            change["updated"] = data["updated"]
        return change

    def get(self, timeout: Optional[float] = None) -> LiveChange:
        """The next change (``rows`` already holds its result), waiting at most ``timeout``
        seconds (``TimeoutError`` then). Raises ``StopIteration`` once the query has ended."""
        self.ready()
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._ended:
                raise StopIteration
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise TimeoutError(f"no change within {timeout} seconds")
            change = self._take(self._channel.request(self._next_request(left)))
            if change is not None:
                return change

    def __iter__(self) -> "LiveQuery":
        return self

    def __next__(self) -> LiveChange:
        return self.get()

    def __aiter__(self) -> "LiveQuery":
        return self

    async def __anext__(self) -> LiveChange:
        await self.aready()
        while True:
            if self._ended:
                raise StopAsyncIteration
            try:
                change = self._take(await self._channel.arequest(self._next_request(None)))
            except StopIteration:
                raise StopAsyncIteration from None
            if change is not None:
                return change

    # Ending

    def close(self) -> None:
        """Stops following the query: iteration ends (one waiting now within moments), and its
        evaluator stops when nobody else follows it. ``rows`` keeps the last answer taken."""
        if self._ended:
            return
        self._ended = True
        if self._opened:
            self._channel.notify({"op": "unlive", "stream": self._id})



def key_request(key: Optional[Sequence[str]]) -> Optional[List[str]]:
    """``key`` as the dirq process takes it: a list of column names (one name alone too)."""
    if key is None:
        return None
    names = [key] if isinstance(key, str) else list(key)
    if not all(isinstance(name, str) for name in names):
        raise TypeError("key holds a non-str: give column names")
    return names
