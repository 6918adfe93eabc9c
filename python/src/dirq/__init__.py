"""dirq from Python: a directory tree as a read-only SQLite database, kept current as files
change. ``dirq.open()`` starts the dirq CLI (the one the ``dirq`` command runs) as one child
process speaking frames on stdin and stdout: the same core as the CLI, the server and the
TypeScript SDK, with tables defined in Python. See packages/dirq/docs/python.md.
"""

from dirq._errors import DirqError
from dirq._events import RowEventStream
from dirq._index import Dirq, Table, open
from dirq._live import LiveQuery
from dirq._types import (
    ColumnInfo,
    ExtractFunction,
    FormatName,
    LiveChange,
    Param,
    Params,
    PlacedRow,
    Row,
    RowChange,
    RowError,
    RowEvent,
    SkippedFile,
    TableInfo,
    UpdatedRow,
    Value,
)
from dirq_launcher import __version__

__all__ = [
    "ColumnInfo",
    "Dirq",
    "DirqError",
    "ExtractFunction",
    "FormatName",
    "LiveChange",
    "LiveQuery",
    "Param",
    "Params",
    "PlacedRow",
    "Row",
    "RowChange",
    "RowError",
    "RowEvent",
    "RowEventStream",
    "SkippedFile",
    "Table",
    "TableInfo",
    "UpdatedRow",
    "Value",
    "__version__",
    "open",
]
