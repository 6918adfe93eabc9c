"""``watch()``'s stream of row events: an iterator and an async iterator."""

import asyncio
import collections
import threading
from typing import TYPE_CHECKING, Any, Deque, List, Optional, Tuple

from dirq._closing import ClosesOnExit
from dirq._errors import DirqError
from dirq._types import RowEvent

if TYPE_CHECKING:
    from dirq._channel import Channel


def _wake(future: "asyncio.Future[None]") -> None:
    if not future.done():
        future.set_result(None)


class RowEventStream(ClosesOnExit):
    """Row changes as files change: ``for event in stream`` or ``async for event in stream``.

    Made by ``Dirq.watch()``. Events held for a consumer that has not caught up are bounded by
    ``buffer``; past it new events are dropped (a lagging SSE subscriber's rule). End it with
    ``break`` and ``close()`` (or a ``with`` block), or with the index's ``close()``."""

    def __init__(self, channel: "Channel", stream_id: int, capacity: int) -> None:
        self._channel = channel
        self._id = stream_id
        self._capacity = capacity
        self._events: Deque[RowEvent] = collections.deque()
        self._condition = threading.Condition()
        self._async_waiters: List[Tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]] = []
        self._ended = False
        self._error: Optional[DirqError] = None
        self._ready = threading.Event()
        self._ready_error: Optional[DirqError] = None
        self._ready_waiters: List[Tuple[asyncio.AbstractEventLoop, "asyncio.Future[None]"]] = []

    # Fed by the reader thread

    def push(self, event: Any) -> None:
        with self._condition:
            if self._ended or len(self._events) >= self._capacity:
                return
            self._events.append(event)
            self._wake_locked()

    def end(self, error: Optional[DirqError]) -> None:
        with self._condition:
            if self._ended:
                return
            self._ended = True
            self._error = error
            self._wake_locked()
        if not self._ready.is_set():
            ended = DirqError("INDEX_CLOSED", "the watch ended before it was ready")
            self.set_ready(error or ended)

    def set_ready(self, error: Optional[DirqError]) -> None:
        with self._condition:
            if self._ready.is_set():
                return
            self._ready_error = error
            self._ready.set()
            waiters, self._ready_waiters = self._ready_waiters, []
        for loop, future in waiters:
            _call_soon(loop, future)

    def _wake_locked(self) -> None:
        self._condition.notify_all()
        waiters, self._async_waiters = self._async_waiters, []
        for loop, future in waiters:
            _call_soon(loop, future)

    # Waiting for the watcher

    def ready(self, timeout: Optional[float] = None) -> None:
        """Blocks until the watcher sees the tree: changes made from then on are events.
        Raises the ``DirqError`` that kept it from starting, or ``TimeoutError``."""
        if not self._ready.wait(timeout):
            raise TimeoutError(f"the watcher was not ready within {timeout} seconds")
        if self._ready_error is not None:
            raise self._ready_error

    async def aready(self) -> None:
        """``ready()``, awaited."""
        future: "Optional[asyncio.Future[None]]" = None
        with self._condition:
            if not self._ready.is_set():
                future = asyncio.get_running_loop().create_future()
                self._ready_waiters.append((asyncio.get_running_loop(), future))
        if future is not None:
            await future
        if self._ready_error is not None:
            raise self._ready_error

    # Consuming

    def _take_locked(self) -> Optional[RowEvent]:
        if self._events:
            return self._events.popleft()
        if self._ended:
            if self._error is not None:
                error, self._error = self._error, None
                raise error
            raise StopIteration
        return None

    def get(self, timeout: Optional[float] = None) -> RowEvent:
        """The next event, waiting at most ``timeout`` seconds (``TimeoutError`` then).
        Raises ``StopIteration`` once the stream has ended."""
        with self._condition:
            event = self._take_locked()
            if event is None:
                self._condition.wait_for(lambda: bool(self._events) or self._ended, timeout)
                event = self._take_locked()
            if event is None:
                raise TimeoutError(f"no row event within {timeout} seconds")
            return event

    def __iter__(self) -> "RowEventStream":
        return self

    def __next__(self) -> RowEvent:
        return self.get()

    def __aiter__(self) -> "RowEventStream":
        return self

    async def __anext__(self) -> RowEvent:
        while True:
            with self._condition:
                try:
                    event = self._take_locked()
                except StopIteration:
                    raise StopAsyncIteration from None
                if event is not None:
                    return event
                loop = asyncio.get_running_loop()
                future: "asyncio.Future[None]" = loop.create_future()
                self._async_waiters.append((loop, future))
            await future

    # Ending

    def close(self) -> None:
        """Stops the stream: the events not yet taken are dropped, and iteration ends."""
        with self._condition:
            already = self._ended
            self._events.clear()
        self.end(None)
        if not already:
            self._channel.remove_stream(self._id)
            self._channel.notify({"op": "unwatch", "stream": self._id})



def _call_soon(loop: asyncio.AbstractEventLoop, future: "asyncio.Future[None]") -> None:
    try:
        loop.call_soon_threadsafe(_wake, future)
    except RuntimeError:
        pass  # That loop is closed: nobody waits on it any more.
