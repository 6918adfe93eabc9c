"""The dirq process behind an index and the frames spoken with it (docs/python.md, "The
protocol"): ``dirq sdk-stdio``, one long-lived child per index, with frames on its stdin and
stdout. A frame is an 8-byte head (two big-endian unsigned 32-bit lengths: the JSON header's,
then the payload's), the header, then the payload: JSON text (rows, events) or a file's bytes.

One thread reads the child's stdout: it hands replies to whoever waits for them (a thread or an
asyncio task), events to their streams, and runs the ``extract`` functions the child asks for.
"""

import asyncio
import base64
import datetime
import json
import os
import re
import struct
import subprocess
import threading
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Protocol, Tuple

from dirq._errors import DirqError, error_from_data
from dirq._types import ExtractFunction

_HEAD = struct.Struct(">II")
# Below malloc's mmap threshold: a larger read buffer is mapped and unmapped on every read.
_READ_BYTES = 64 * 1024

Settle = Callable[[Optional[bytes], Optional[DirqError]], None]
"""Told the reply's payload, or the error that stands for it."""


class EventSink(Protocol):
    """A ``watch()`` stream, as the reader thread feeds it."""

    def push(self, event: Any) -> None:
        ...

    def end(self, error: Optional[DirqError]) -> None:
        ...


_encode_header = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def encode_frame(header: Mapping[str, object], payload: bytes = b"") -> bytes:
    data = _encode_header(header).encode("utf-8")
    return _HEAD.pack(len(data), len(payload)) + data + payload


def _json_default(value: object) -> object:
    if isinstance(value, (datetime.date, datetime.time)):
        # As the built-in formats store YAML and TOML dates: ISO-8601 text.
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        # A BLOB: dirq reads this tag in an extract's rows as the bytes it holds.
        return {"$base64": base64.b64encode(bytes(value)).decode("ascii")}
    raise TypeError(
        f"a value of type {type(value).__name__} cannot be stored: give None, bool, int, "
        "float, str, bytes, date or time, or lists and dicts of them"
    )


_STRING_OR_NON_FINITE = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')
_NON_FINITE_JSON = {"NaN": "null", "Infinity": "1e999", "-Infinity": "-1e999"}


def rows_json(rows: Iterable[Mapping[str, Any]]) -> bytes:
    """An extract function's rows as JSON text for dirq's hook-output reader: ints exact, a
    float a REAL (``3.0`` too), NaN NULL and infinities as dirq reads ``1e999``."""
    if isinstance(rows, (str, bytes, bytearray, Mapping)):
        raise TypeError(f"extract returned a {type(rows).__name__}, expected a list of row dicts")
    listed = rows if isinstance(rows, list) else list(rows)
    try:
        text = json.dumps(listed, separators=(",", ":"), allow_nan=False, default=_json_default)
    except ValueError:
        # NaN or an infinity: Python writes tokens JSON does not have.
        written = json.dumps(listed, separators=(",", ":"), default=_json_default)
        text = _STRING_OR_NON_FINITE.sub(
            lambda match: _NON_FINITE_JSON[match.group(1)] if match.group(1) else match.group(0),
            written,
        )
    return text.encode("utf-8")


def _describe_failure(error: BaseException) -> str:
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


class _Waiter:
    """A thread waiting for one reply: a lock taken at once, released by the reply (cheaper
    than an Event, which is a condition variable around a lock)."""

    __slots__ = ("_lock", "_payload", "_error")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lock.acquire()
        self._payload: Optional[bytes] = None
        self._error: Optional[DirqError] = None

    def settle(self, payload: Optional[bytes], error: Optional[DirqError]) -> None:
        self._payload = payload
        self._error = error
        self._lock.release()

    def result(self) -> bytes:
        self._lock.acquire()
        if self._error is not None:
            raise self._error
        return self._payload or b"null"


class _FrameSource:
    """Frames read from the child's stdout with raw reads into a buffer of its own, so that
    whether a whole frame is at hand is known without touching the pipe."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._at = 0

    def _missing(self) -> int:
        """Bytes still to read for the next frame to be whole (0: it is)."""
        available = len(self._buffer) - self._at
        if available < _HEAD.size:
            return _HEAD.size - available
        header_length: int
        payload_length: int
        header_length, payload_length = _HEAD.unpack_from(self._buffer, self._at)
        return max(0, _HEAD.size + header_length + payload_length - available)

    def has_frame(self) -> bool:
        return self._missing() == 0

    def next_frame(self) -> Optional[Tuple[Any, bytes]]:
        """The next frame's header (parsed) and payload, reading as needed; ``None`` at the
        end of the stream."""
        missing = self._missing()
        while missing > 0:
            chunk = os.read(self._fd, max(missing, _READ_BYTES))
            if not chunk:
                return None
            if self._at > 0 and self._at >= len(self._buffer) // 2:
                del self._buffer[: self._at]
                self._at = 0
            self._buffer += chunk
            missing = self._missing()
        header_length, payload_length = _HEAD.unpack_from(self._buffer, self._at)
        start = self._at + _HEAD.size
        header = json.loads(self._buffer[start : start + header_length])
        payload = bytes(
            self._buffer[start + header_length : start + header_length + payload_length]
        )
        self._at = start + header_length + payload_length
        if self._at == len(self._buffer):
            self._buffer.clear()
            self._at = 0
        return header, payload


def _settle_future(
    future: "asyncio.Future[bytes]", payload: Optional[bytes], error: Optional[DirqError]
) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(payload or b"null")


class Channel:
    """One ``dirq sdk-stdio`` process and its frames.

    One reader thread reads every frame and dispatches it, in order: a reply to whoever waits
    for it (a thread or an asyncio task), an event to its stream, an extract request to its
    function. (Waiting threads reading their own replies instead was measured slower: the two
    readers woke for every frame and took turns at the GIL.)"""

    def __init__(
        self,
        command: List[str],
        env: Dict[str, str],
        extracts: Mapping[str, ExtractFunction],
    ) -> None:
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                bufsize=0,
                # Its own session: a Ctrl-C meant for this program never reaches the child,
                # which ends when this process closes its stdin (or dies).
                start_new_session=os.name == "posix",
            )
        except OSError as error:
            raise DirqError(
                "CLI_UNAVAILABLE", f"cannot run {command[0]}: {error.strerror or error}"
            ) from None
        assert self._process.stdin is not None and self._process.stdout is not None
        self._stdin = self._process.stdin
        self._stdout_fd = self._process.stdout.fileno()
        self._source = _FrameSource(self._stdout_fd)
        # Reentrant: the finalizer that closes stdin may run in a thread that is writing.
        self._write_lock = threading.RLock()
        self._lock = threading.Lock()
        self._in_extract = threading.local()
        self._pending: Dict[int, Settle] = {}
        self._streams: Dict[int, EventSink] = {}
        self._next_id = 1
        self._extracts = dict(extracts)
        self._failure: Optional[DirqError] = None
        # Extract replies made while more frames are at hand leave together, in one write.
        self._outbox: List[bytes] = []
        self._reader = threading.Thread(target=self._read_frames, name="dirq-reader", daemon=True)
        self._reader.start()

    @property
    def pid(self) -> int:
        return self._process.pid

    # Sending

    def _write(self, frame: bytes) -> None:
        try:
            with self._write_lock:
                fd = self._stdin.fileno()
                view = memoryview(frame)
                while view:
                    view = view[os.write(fd, view) :]
        except (OSError, ValueError):
            # The child is gone (or its stdin closed): the read loop says why.
            if threading.current_thread() is not self._reader:
                self._reader.join(timeout=5)
            raise self._failure or DirqError("CHILD_EXITED", "the dirq process is gone") from None

    def send(self, header: Dict[str, object], settle: Settle) -> int:
        """Sends a request; ``settle`` hears its reply. Returns the request's id."""
        with self._lock:
            if self._failure is not None:
                raise self._failure
            request_id = self._next_id
            self._next_id += 1
        frame = encode_frame({**header, "id": request_id})
        with self._lock:
            self._pending[request_id] = settle
        try:
            self._write(frame)
        except DirqError:
            with self._lock:
                self._pending.pop(request_id, None)
            raise
        return request_id

    def _check_caller(self) -> None:
        if getattr(self._in_extract, "active", False):
            raise DirqError(
                "EXTRACT_REENTRY",
                "an extract function cannot use the index it extracts for (its answer would "
                "wait for the extract to end): open another index for that",
            )

    def request(self, header: Dict[str, object]) -> bytes:
        """Sends a request and waits for its reply's payload; raises its error."""
        self._check_caller()
        waiter = _Waiter()
        self.send(header, waiter.settle)
        return waiter.result()

    async def arequest(self, header: Dict[str, object]) -> bytes:
        """``request``, awaited: the event loop runs while the child works."""
        self._check_caller()
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[bytes]" = loop.create_future()

        def settle(payload: Optional[bytes], error: Optional[DirqError]) -> None:
            try:
                loop.call_soon_threadsafe(_settle_future, future, payload, error)
            except RuntimeError:
                pass  # The loop is closed: nobody waits any more.

        self.send(header, settle)
        return await future

    def notify(self, header: Dict[str, object]) -> None:
        """Sends a request whose reply nobody waits for."""
        try:
            self.send(header, lambda payload, error: None)
        except DirqError:
            pass

    def add_stream(self, stream_id: int, sink: EventSink) -> None:
        with self._lock:
            if self._failure is not None:
                raise self._failure
            self._streams[stream_id] = sink

    def remove_stream(self, stream_id: int) -> None:
        with self._lock:
            self._streams.pop(stream_id, None)

    # Reading

    def _read_frames(self) -> None:
        """The reader thread."""
        while self._read_one():
            pass

    def _read_one(self) -> bool:
        """Reads and dispatches one frame; ``False`` once the stream has ended."""
        try:
            frame = self._source.next_frame()
        except (OSError, ValueError) as error:
            self._ended(f": {error}")
            return False
        if frame is None:
            self._ended("")
            return False
        self._dispatch(*frame)
        if self._outbox and not self._source.has_frame():
            replies, self._outbox = self._outbox, []
            try:
                self._write(b"".join(replies))
            except DirqError:
                pass  # The child is gone; the read loop ends next.
        return True

    def _dispatch(self, header: Dict[str, Any], payload: bytes) -> None:
        if "re" in header:
            with self._lock:
                settle = self._pending.pop(header["re"], None)
            if settle is not None:
                error = header.get("error")
                settle(payload, None if error is None else error_from_data(error))
        elif "event" in header:
            sink = self._streams.get(header["event"])
            if sink is not None:
                sink.push(json.loads(payload))
        elif "extract" in header:
            self._extract(header["extract"], header["table"], header["path"], payload)
        elif "end" in header:
            with self._lock:
                sink = self._streams.pop(header["end"], None)
            if sink is not None:
                error = header.get("error")
                sink.end(None if error is None else error_from_data(error))

    def _extract(self, request_id: int, table: str, path: str, content: bytes) -> None:
        function = self._extracts.get(table)
        self._in_extract.active = True
        try:
            if function is None:
                raise LookupError(f"no extract function for table {table}")
            reply = encode_frame({"re": request_id}, rows_json(function(path, content)))
        except Exception as error:  # One file's failure: the child skips that file.
            reply = encode_frame({"re": request_id, "error": _describe_failure(error)})
        finally:
            self._in_extract.active = False
        self._outbox.append(reply)

    def _ended(self, reason: str) -> None:
        try:
            code: Optional[int] = self._process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            code = None
        shown = "" if code is None else f" (exit code {code})"
        failure = DirqError(
            "CHILD_EXITED",
            f"the dirq process ended{shown}{reason}; its messages, if any, are above on stderr",
        )
        with self._lock:
            self._failure = failure
            pending = list(self._pending.values())
            self._pending.clear()
            streams = list(self._streams.values())
            self._streams.clear()
        for settle in pending:
            settle(None, failure)
        for sink in streams:
            sink.end(failure)

    # Ending

    def shut_down(self, timeout: float = 10.0) -> None:
        """Closes the child's stdin (it closes its index and exits) and waits for it to end;
        one still running after ``timeout`` seconds is killed."""
        self.abandon()
        try:
            self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if threading.current_thread() is not self._reader:
            self._reader.join(timeout=timeout)
        try:
            self._process.stdout.close()  # type: ignore[union-attr]
        except OSError:
            pass

    def abandon(self) -> None:
        """Closes the child's stdin without waiting: the child ends by itself."""
        try:
            with self._write_lock:
                self._stdin.close()
        except (OSError, ValueError, RuntimeError):
            pass  # Gone already, or closed in the middle of a write: the process's exit does it.
