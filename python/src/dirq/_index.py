"""``dirq.open``: a directory tree as a read-only SQLite database, live, from Python."""

import asyncio
import base64
import hashlib
import inspect
import itertools
import json
import math
import os
import weakref
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union, cast

from dirq._channel import Channel
from dirq._closing import ClosesOnExit
from dirq._errors import DirqError
from dirq._events import RowEventStream
from dirq._live import LiveQuery, key_request
from dirq._types import (
    ExtractFunction,
    FormatName,
    Params,
    Row,
    SkippedFile,
    TableInfo,
)

PathLike = Union[str, "os.PathLike[str]"]

DEFAULT_EVENT_BUFFER = 10_000


@dataclass(frozen=True)
class Table:
    """A named table defined in Python: the keys of a config file's ``[[table]]``, with
    ``extract`` as a third way to make rows beside ``format`` and ``on_file`` (give exactly one
    of the three).

    ``extract(path, content)`` runs in this process, once per file: ``path`` relative to the
    root, ``content`` the file's bytes; it returns the file's rows, a list of dicts. Raising
    skips that one file (its reason is in ``skipped()`` and, after a change, in an ``error``
    event). ``timeout`` (with ``on_file``) is the hook's time limit in seconds, as the config's
    ``timeout`` (default 60, ``0`` for none). ``columns`` maps each column to a dot path into the
    row (``"metadata.author.name"``, ``"items.0.name"``) or a ``{capture}`` of the glob, as the
    config's ``[table.columns]`` (the whole projection); ``strict`` makes a row whose keys differ
    from ``schema``'s that file's error. A value of ``bytes`` an extract returns is a BLOB."""

    name: str
    glob: str
    format: Optional[FormatName] = None
    each: Optional[str] = None
    schema: Optional[Mapping[str, str]] = None
    extract: Optional[ExtractFunction] = None
    on_file: Optional[str] = None
    ddl: Optional[str] = None
    timeout: Optional[float] = None
    columns: Optional[Mapping[str, str]] = None
    strict: Optional[bool] = None


def _function_digest(function: ExtractFunction) -> str:
    """Names an extract function by its source, so a ``persist`` table is rebuilt when the
    function changes (the TypeScript SDK names its functions the same way)."""
    try:
        text = inspect.getsource(function)
    except (OSError, TypeError):
        code = getattr(function, "__code__", None)
        if code is not None:
            text = repr((code.co_code, code.co_consts, code.co_names))
        else:
            text = getattr(function, "__qualname__", type(function).__qualname__)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _table_request(table: Table) -> Dict[str, object]:
    if not isinstance(table, Table):
        raise TypeError(f"tables holds a {type(table).__name__}: give dirq.Table(...) entries")
    request: Dict[str, object] = {"name": table.name, "glob": table.glob}
    for key, value in (
        ("format", table.format),
        ("each", table.each),
        ("schema", None if table.schema is None else dict(table.schema)),
        ("onFile", table.on_file),
        ("ddl", table.ddl),
        ("timeout", table.timeout),
        ("columns", None if table.columns is None else dict(table.columns)),
        ("strict", table.strict),
    ):
        if value is not None:
            request[key] = value
    if table.extract is not None:
        if not callable(table.extract):
            raise TypeError(f"Table {table.name!r}: extract must be a function (path, content)")
        request["extract"] = _function_digest(table.extract)
    return request


def _parameter(value: object, where: str) -> object:
    if value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        spelled = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
        return {"$float": spelled}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$base64": base64.b64encode(bytes(value)).decode("ascii")}
    raise DirqError(
        "QUERY_PARAMETERS",
        f"parameter {where} is a {type(value).__name__}: bind None, int, float, str or bytes",
    )


def _parameters(params: Optional[Params]) -> object:
    if params is None:
        return None
    if isinstance(params, (str, bytes, bytearray, memoryview)):
        raise TypeError(
            f"params is a {type(params).__name__}: give a sequence (for ?) or a mapping "
            "(for :name, @name, $name) of values"
        )
    if isinstance(params, Mapping):
        return {str(key): _parameter(value, f":{key}") for key, value in params.items()}
    return [_parameter(value, f"{i + 1}") for i, value in enumerate(params)]


def _python_names(error: DirqError) -> DirqError:
    """Table definitions' messages with the Python keys (``on_file`` for ``onFile``)."""
    if error.code != "CONFIG_INVALID" or "onFile" not in error.message:
        return error
    return DirqError(error.code, error.message.replace("onFile", "on_file"))


# What decides which CLI and which Node.js the launcher picks.
_CLI_SETTINGS = ("DIRQ_BIN", "DIRQ_NODE", "DIRQ_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "PATH")
_cli_commands: Dict[Tuple[Optional[str], ...], List[str]] = {}


def _cli_command() -> Tuple[List[str], Dict[str, str]]:
    """``dirq sdk-stdio`` run by the CLI the launcher finds or installs (``DIRQ_BIN``, the
    bundled CLI, the one installed in the cache folder, ``dirq`` on PATH, else a first-run
    install), on Node.js when it is JavaScript; and the environment to run it in. The command
    is found once per process and settings (the launcher runs ``node --version`` to check it)."""
    from dirq_launcher.launcher import command_line
    from dirq_launcher.plugins import LauncherError

    settings = tuple(os.environ.get(name) for name in _CLI_SETTINGS)
    command = _cli_commands.get(settings)
    if command is not None:
        return command, dict(os.environ)
    try:
        command, env = command_line(["sdk-stdio"])
    except LauncherError as error:
        raise DirqError("CLI_UNAVAILABLE", str(error)) from None
    _cli_commands[settings] = command
    return command, env


class Dirq(ClosesOnExit):
    """A directory tree as a read-only SQLite database, kept current as files change. Made by
    ``dirq.open``; runs the same core as the CLI, the server and the TypeScript SDK, in one
    dirq process that lives as long as this object."""

    root: str
    """The index root, resolved (real path)."""
    notices: Tuple[str, ...]
    """One-line notices from opening the index (a ``persist`` cache that was rebuilt)."""

    def __init__(self, options: Dict[str, object], extracts: Mapping[str, ExtractFunction]):
        command, env = _cli_command()
        self._channel = Channel(command, env, extracts)
        self._closed = False
        self._stream_ids = itertools.count(1)
        # A forgotten close (the object collected, or the interpreter leaving) still ends the
        # child: its stdin closes, and it closes its index and exits.
        self._finalizer = weakref.finalize(self, self._channel.abandon)
        try:
            opened = json.loads(self._channel.request({"op": "open", "options": options}))
        except DirqError as error:
            self._finalizer()
            self._channel.shut_down()
            raise _python_names(error) from None
        self.root = opened["root"]
        self.notices = tuple(opened["notices"])

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<dirq.Dirq {state} root={self.root!r}>"

    def _check_open(self) -> None:
        if self._closed:
            raise DirqError("INDEX_CLOSED", "this dirq index is closed: open a new one")

    # Queries

    def _query_request(self, sql: str, params: Optional[Params], settle: bool) -> Dict[str, object]:
        self._check_open()
        if not isinstance(sql, str):
            raise TypeError(f"sql is a {type(sql).__name__}: give the statement as a str")
        return {"op": "query", "sql": sql, "params": _parameters(params), "settle": settle}

    def query(self, sql: str, params: Optional[Params] = None, *, settle: bool = True) -> List[Row]:
        """Runs one read-only statement and returns its rows as dicts, keyed by column name in
        SELECT order. ``params`` binds ``?`` (a sequence) or ``:name`` (a mapping). With the
        watcher running, the statement first takes in every change made before the call
        (``settle=False`` reads the index as it is). Raises ``DirqError`` (``SQL_ERROR``,
        ``QUERY_NOT_READONLY``, ``QUERY_PARAMETERS``, ...)."""
        payload = self._channel.request(self._query_request(sql, params, settle))
        return cast(List[Row], json.loads(payload))

    async def aquery(
        self, sql: str, params: Optional[Params] = None, *, settle: bool = True
    ) -> List[Row]:
        """``query``, awaited: the event loop runs while dirq works."""
        payload = await self._channel.arequest(self._query_request(sql, params, settle))
        return cast(List[Row], json.loads(payload))

    def tables(self) -> List[TableInfo]:
        """Every table and view a statement can name: the named tables (the configs' and
        yours) and what their ``ddl`` made, each with its visible columns."""
        self._check_open()
        return cast(List[TableInfo], json.loads(self._channel.request({"op": "tables"})))

    async def atables(self) -> List[TableInfo]:
        """``tables()``, awaited."""
        self._check_open()
        return cast(List[TableInfo], json.loads(await self._channel.arequest({"op": "tables"})))

    def ready(self) -> None:
        """Blocks until the named tables are built. Raises the ``DirqError`` of a table that
        cannot be built at all (a hook program that cannot start, a failing ``ddl``); queries
        then raise it too. ``query`` waits for this itself."""
        self._check_open()
        self._channel.request({"op": "ready"})

    async def aready(self) -> None:
        """``ready()``, awaited."""
        self._check_open()
        await self._channel.arequest({"op": "ready"})

    def skipped(self) -> List[SkippedFile]:
        """Files skipped so far while building tables (unreadable, or their hook, format or
        ``extract`` failed): where the CLI would exit 23. Later failures are ``error``
        events."""
        self._check_open()
        return cast(List[SkippedFile], json.loads(self._channel.request({"op": "skipped"})))

    # Events

    def watch(self, buffer: int = DEFAULT_EVENT_BUFFER) -> RowEventStream:
        """Row changes as files change. The first ``watch()`` starts the index's file watcher
        (it runs until ``close()``), and every built table is kept current. Call the stream's
        ``ready()`` (or ``await stream.aready()``) before making changes you expect events for.
        A consumer more than ``buffer`` events behind misses the overflow."""
        self._check_open()
        if not isinstance(buffer, int) or buffer < 1:
            raise ValueError(f"buffer is {buffer!r}: give a positive number of events")
        stream_id = next(self._stream_ids)
        stream = RowEventStream(self._channel, stream_id, buffer)
        self._channel.add_stream(stream_id, stream)
        self._channel.send(
            {"op": "watch", "stream": stream_id, "buffer": buffer},
            lambda payload, error: stream.set_ready(error),
        )
        return stream

    def live(
        self,
        sql: str,
        params: Optional[Params] = None,
        key: Union[str, Sequence[str], None] = None,
    ) -> LiveQuery:
        """A live query: call its ``ready()`` (or ``await live.aready()``) for the statement's
        answer in ``rows``, then iterate for each change as files change (docs/live-queries.md).
        ``key`` names columns whose values identify a row: a row changed in place is one
        ``updated`` entry. Starts the index's file watcher; one evaluator in the dirq process
        serves every ``live()`` of the same statement, values and key."""
        request = self._query_request(sql, params, True)
        del request["op"], request["settle"]
        names = key_request(key)
        if names is not None:
            request["key"] = names
        return LiveQuery(self._channel, next(self._stream_ids), request)

    # Closing

    def close(self) -> None:
        """Stops the watcher, ends every ``watch()`` stream, waits for work in progress, closes
        the database and ends the dirq process. Calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        try:
            self._channel.request({"op": "close"})
        except DirqError as error:
            if error.code != "CHILD_EXITED":
                raise
        finally:
            self._finalizer.detach()
            self._channel.shut_down()

    async def aclose(self) -> None:
        """``close()``, awaited."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._channel.arequest({"op": "close"})
        except DirqError as error:
            if error.code != "CHILD_EXITED":
                raise
        finally:
            self._finalizer.detach()
            await asyncio.get_running_loop().run_in_executor(None, self._channel.shut_down)

    @property
    def closed(self) -> bool:
        return self._closed

    async def _close_on_async_exit(self) -> None:
        await self.aclose()


def open(
    root: PathLike = ".",
    config: Sequence[PathLike] = (),
    tables: Sequence[Table] = (),
    persist: Union[bool, PathLike, None] = None,
    no_ignore: bool = False,
    *,
    ignore: Sequence[str] = (),
    on_file: Optional[str] = None,
    hook_timeout: Optional[float] = None,
    extensions: Sequence[str] = (),
    live: bool = False,
    progress: bool = True,
) -> Dirq:
    """Opens an index over a directory; the dirq process starts here and lives until
    ``close()``. Options are checked at once: a root that is not a directory, a config file
    that cannot load or a bad table raises ``DirqError`` (``ROOT_INVALID``,
    ``CONFIG_INVALID``). Building the named tables starts at once; ``query`` waits for it.

    - ``config``: ``.dirq.toml`` files, loaded and merged in order as ``-c`` does.
    - ``tables``: ``dirq.Table`` definitions, after the configs' tables.
    - ``persist``: keep the index in a cache file, as ``--persist``: ``True`` for
      ``<root>/.dirq/cache.db``, or a path relative to the root.
    - ``no_ignore``: also scan files a ``.gitignore`` would hide.
    - ``ignore``: extra globs relative to the root that are always skipped.
    - ``on_file``: a hook command for every path-table a statement names (``--on-file``).
    - ``hook_timeout``: the ``on_file`` hook's time limit in seconds, as ``--hook-timeout``
      (default 60, ``0`` for none).
    - ``extensions``: SQLite extensions (``<path>`` or ``<path>::<entrypoint>``).
    - ``live``: keep every built table current from the start (``watch()`` starts it too).
    - ``progress``: ``False`` silences the progress lines on stderr (otherwise as
      ``DIRQ_PROGRESS`` says).
    """
    table_list = list(tables)
    requests = [_table_request(table) for table in table_list]
    # Two tables of one name are the core's CONFIG_INVALID, raised before any extract runs.
    extracts = {table.name: table.extract for table in table_list if table.extract is not None}
    options: Dict[str, Any] = {
        "root": os.path.abspath(os.fspath(root)),
        "configs": [os.fspath(path) for path in config],
        "tables": requests,
        "noIgnore": bool(no_ignore),
        "ignore": list(ignore),
        "live": bool(live),
    }
    if on_file is not None:
        options["onFile"] = on_file
    if hook_timeout is not None:
        options["hookTimeout"] = hook_timeout
    if extensions:
        # Given at all, they replace the configs' [[dirq.extension]] entries.
        options["extensions"] = list(extensions)
    if persist is True:
        options["persist"] = True
    elif persist not in (None, False):
        options["persist"] = os.fspath(cast(PathLike, persist))
    if not progress:
        options["progress"] = False
    return Dirq(options, extracts)
