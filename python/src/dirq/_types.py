"""The types of what dirq hands out: values, rows, row events, tables, skipped files."""

from typing import (
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Literal,
    Mapping,
    Optional,
    Sequence,
    TypedDict,
    Union,
)

Value = Union[int, float, str, None]
"""One value as a query returns it: the JSON mapping of the CLI's output, read as ``json.loads``
reads it. INTEGER is an ``int`` (exact, beyond 2^53 too); REAL a ``float`` (a whole one, such as
2.0, is written ``2`` and arrives as an ``int``, and NaN and infinities are ``None``); TEXT a
``str``; BLOB a lowercase hex ``str``; NULL ``None``."""

Row = Dict[str, Value]
"""One result row: column name to value, keys in SELECT order."""

Param = Union[None, int, float, str, bytes, bytearray, memoryview]
"""A value bound to a statement's parameter: NULL, INTEGER (a whole ``float`` within 2^53 is an
INTEGER too, as the core binds numbers), REAL, TEXT or BLOB."""

Params = Union[Sequence[Param], Mapping[str, Param]]
"""Values for ``?`` (a sequence, in order) or for ``:name``, ``@name``, ``$name`` (a mapping
keyed by the name without its prefix)."""

FormatName = Literal["json", "jsonl", "csv", "tsv", "yaml", "toml", "markdown", "auto"]
"""A built-in format dirq reads each file of a table with (docs/formats.md)."""

ExtractFunction = Callable[[str, bytes], Iterable[Mapping[str, Any]]]
"""Turns one file into rows, in this process: ``(path relative to the root, content) ->
rows``, each row a mapping of column name to value."""


class RowChange(TypedDict):
    """A row inserted, updated or deleted because a file changed."""

    action: Literal["insert", "update", "delete"]
    table: str
    # The file the row came from, relative to the root.
    file_path: str
    # The new row (insert, update) or the deleted one.
    row: Row
    # The previous row of an update; None otherwise.
    old_row: Optional[Row]
    # The number of the index's commit that made it (live queries' frames carry it too).
    commit: int


class RowError(TypedDict):
    """A file that could not be read or parsed after a change; its other rows stand."""

    action: Literal["error"]
    # The table, or None when the failure is not tied to one.
    table: Optional[str]
    file_path: str
    error: str
    # The number of the newest commit when it was found.
    commit: int


RowEvent = Union[RowChange, RowError]
"""What ``watch()`` yields: the data of the server's SSE ``row`` event, parsed."""


class PlacedRow(TypedDict):
    """A row that left (``at``: its place before the change) or joined (its place after)."""

    at: int
    row: Row


# ``from`` is a keyword: the functional form keeps the frame's own key names.
UpdatedRow = TypedDict("UpdatedRow", {"from": int, "at": int, "old_row": Row, "row": Row})
"""With a key: a row whose key stayed, its place before (``from``) and after (``at``)."""


class LiveChange(TypedDict):
    """What ``Dirq.live()`` yields: one change of the answer, already applied to ``rows``."""

    # The index's commit the answer is (at least) as of.
    commit: int
    removed: List[PlacedRow]
    added: List[PlacedRow]
    updated: List[UpdatedRow]
    # True: the whole answer was replaced (resumed past the history, or its columns changed).
    snapshot: bool
    # A later run of the statement failed: ``rows`` stay the last good answer.
    error: Optional[str]


class ColumnInfo(TypedDict):
    name: str
    # The declared type (TEXT, INTEGER, ...); "" when the table has no schema.
    type: str


class TableInfo(TypedDict):
    """A table or view a statement can name, with its visible columns."""

    name: str
    type: Literal["table", "view"]
    columns: List[ColumnInfo]


class SkippedFile(TypedDict):
    """A file a table could not read or parse, and why; the other files' rows stand."""

    path: str
    reason: str
