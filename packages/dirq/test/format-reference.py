#!/usr/bin/env python3
"""The rows Python's own parsers read from data files, for dirq's built-in formats.

Usage:
  format-reference.py FORMAT [--each A.B.C] FILE...
  format-reference.py FORMAT [--each A.B.C] -0 < NUL-separated file names

FORMAT: json, jsonl, csv, tsv, yaml, toml, markdown or auto (by each file's extension).

Prints one JSON document: a list with, per file, either
  {"path": P, "columns": [...], "rows": [[[column, cell], ...], ...]}
or
  {"path": P, "error": "why", "line": N or null}.
A cell is null (SQL NULL) or [kind, text] with kind "integer" (exact digits), "real" (Python's
repr, also "inf"/"-inf"), "text" (the string), "date" (a YAML/TOML date, time or date-time as
Python's isoformat writes it; the harness compares it as an ISO-8601 value, since the rules say
"ISO-8601 text", not which of its spellings) or "json" (a nested array or object as compact JSON
text, which the harness compares as a JSON value, not as a spelling; a date inside it is a
string that starts with U+E010, for the same comparison; bytes inside it are their lowercase
hex, as dirq's JSON output writes a BLOB).

The parsing is Python's: json, csv, tomllib and PyYAML's safe loader. What this file adds is
only the value mapping of dirq's rules (DECISIONS.md, "Built-in formats") and the little that
no parser says: which lines of a JSON Lines file are read, CSV's header names and typing, and
where Markdown front matter ends. Where the rules say something, this file follows the rules
(an empty JSON file is not "exactly one JSON text": an error); where they leave a choice open,
it follows dirq's choice and says so (a YAML stream of several documents, a front-matter key
`body`, blanks after a front-matter fence).
"""

import csv
import datetime
import io
import json
import re
import sys
import tomllib

import yaml

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
BOM = "\ufeff"
DATE_MARK = "\ue010"

# Python refuses to turn integers of more than 4300 digits into text: dirq has no such limit.
sys.set_int_max_str_digits(0)
csv.field_size_limit(sys.maxsize)

EXTENSIONS = {
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".tsv": "tsv",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".md": "markdown",
    ".markdown": "markdown",
}


class FileError(Exception):
    """The file is dirq's error: skipped, with this reason (and line, when one is named)."""

    def __init__(self, reason, line=None):
        super().__init__(reason)
        self.line = line


def real(value):
    return ["real", repr(value)]


def iso(value):
    if isinstance(value, (datetime.date, datetime.time)):
        return DATE_MARK + value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"{type(value).__name__} has no JSON text")


def key_text(key):
    """A mapping key as a column name: strings as they are, others as JSON writes them."""
    if isinstance(key, str):
        return key
    if isinstance(key, (datetime.date, datetime.time)):
        return key.isoformat()
    return json.dumps(key)


def nested(value):
    """Nested mappings (YAML keys may be anything) with keys as JSON text keys."""
    if isinstance(value, dict):
        return {key_text(k): nested(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [nested(v) for v in value]
    return value


def cell(value):
    """A parsed value as dirq stores it: the rules' mapping, nothing more."""
    if value is None:
        return None
    if isinstance(value, bool):
        return ["integer", "1" if value else "0"]
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return ["integer", str(value)]
        # Beyond 64 bits an integer is a REAL, as SQLite reads such a literal.
        try:
            return real(float(value))
        except OverflowError:
            return real(float("inf") if value > 0 else float("-inf"))
    if isinstance(value, float):
        return real(value)
    if isinstance(value, str):
        return ["text", value]
    if isinstance(value, bytes):
        return ["blob", value.hex().upper()]
    if isinstance(value, (datetime.date, datetime.time)):
        return ["date", value.isoformat()]
    if isinstance(value, (list, dict)):
        text = json.dumps(
            nested(value), separators=(",", ":"), ensure_ascii=False, default=iso
        )
        return ["json", text]
    raise FileError(f"a {type(value).__name__} value has no mapping in the rules")


ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def fold(name):
    """A column name as SQLite compares names: ASCII letters case-folded, nothing else. This is
    dirq's documented rule (docs/formats.md): SQLite's identifiers are ASCII-case-insensitive
    only, so `É` and `é` are two columns while `a` and `A` are one. Python's str.lower() folds
    every script, which is not how the table can compare its columns."""
    return name.translate(ASCII_LOWER)


def row_of(mapping):
    """A mapping's cells. Keys that differ only in ASCII case are one column in SQLite; dirq's
    long-standing rule for hook rows (docs/hooks.md, docs/formats.md), which the built-in formats
    share: the column keeps the first spelling, the last value stands within the row. Python's
    dict keeps both keys, so the reference merges them here, explicitly. Nested values (JSON
    text) are not columns and keep every key as parsed."""
    cells = {}
    for key, value in mapping.items():
        name = key_text(key)
        folded = fold(name)
        spelling = cells[folded][0] if folded in cells else name
        cells[folded] = [spelling, cell(value)]
    return list(cells.values())


def rows_of(data, each):
    """A parsed document's rows: an array of objects, or one object; `each` picks the part."""
    if each:
        for step in each.split("."):
            if not isinstance(data, dict) or step not in data:
                raise FileError(f"each path {each}: no key {step}")
            data = data[step]
    if isinstance(data, dict):
        return [row_of(data)]
    if isinstance(data, list):
        rows = []
        for i, item in enumerate(data):
            if not isinstance(item, dict):
                raise FileError(f"item {i} is not an object")
            rows.append(row_of(item))
        return rows
    raise FileError(f"the document is a {type(data).__name__}, not an array or object")


def decode(data):
    text = data.decode("utf-8")
    return text[1:] if text.startswith(BOM) else text


def no_constant(name):
    raise ValueError(f"{name} is not JSON")


def load_json(text):
    # Python reads NaN and Infinity by default: they are not JSON.
    return json.loads(text, parse_constant=no_constant)


JSON_BLANKS = " \t\n\r"


def read_json(text, each):
    # An empty or all-blank file holds no JSON text: the file's error, as Python's json says,
    # with dirq's own reason and no line (dirq's documented rule: "the file is empty").
    if text.strip(JSON_BLANKS) == "":
        raise FileError("the file is empty")
    try:
        data = load_json(text)
    except json.JSONDecodeError as error:
        raise FileError(str(error), error.lineno) from None
    except ValueError as error:
        raise FileError(str(error)) from None
    return rows_of(data, each)


def read_jsonl(text, each):
    rows = []
    lines = text.split("\n")
    # The last piece has no newline after it: a line still being written, not read.
    for number, line in enumerate(lines[:-1], start=1):
        if line.strip() == "":
            continue
        try:
            data = load_json(line)
        except ValueError as error:
            raise FileError(str(error), number) from None
        if not isinstance(data, dict) and not each:
            raise FileError("not an object", number)
        try:
            rows.extend(rows_of(data, each))
        except FileError as error:
            raise FileError(str(error), number) from None
    return rows


INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")
REAL = re.compile(r"-?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]+)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def csv_cell(field):
    """CSV typing per field: empty is NULL, an integer or real literal a number, else TEXT."""
    if field == "":
        return None
    if INTEGER.fullmatch(field):
        return cell(int(field))
    if REAL.fullmatch(field):
        return real(float(field))
    return ["text", field]


def header_names(fields):
    """Empty names become column<i>; repeats get _1, _2, ... as DuckDB's read_csv names them,
    compared as SQLite compares names (ASCII case folded)."""
    # dirq's documented rule (docs/formats.md), as DuckDB 1.5's read_csv names repeats: one
    # counter per case-folded name; a candidate already taken gets its own suffix in turn, so
    # `a,a_1,a` is `a,a_1,a_1_1` and `a,a_1,a,A` is `a,a_1,a_1_1,A_2`. Names compare with ASCII
    # case folded only (SQLite's rule): `É,é` are two names, not a repeat.
    names = [name if name != "" else f"column{i}" for i, name in enumerate(fields)]
    counts = {}
    out = []
    for name in names:
        while fold(name) in counts:
            counts[fold(name)] += 1
            name = f"{name}_{counts[fold(name)]}"
        counts[fold(name)] = 0
        out.append(name)
    return out


def read_csv(text, delimiter):
    # newline="": the reader itself ends records at CRLF, LF or a lone CR.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    header = None
    rows = []
    try:
        for record in reader:
            if record == []:
                continue  # a completely empty line is not a record
            if header is None:
                header = header_names(record)
                continue
            if len(record) != len(header):
                raise FileError(
                    f"{len(record)} fields, the header has {len(header)}", reader.line_num
                )
            rows.append([[name, csv_cell(field)] for name, field in zip(header, record)])
    except csv.Error as error:
        raise FileError(str(error), reader.line_num) from None
    return header or [], rows


FENCES = {"---": "yaml", "+++": "toml"}
LINE = re.compile(r"[^\n]*(?:\n|$)")


def fence_of(line):
    """`---` or `+++` alone on a line (trailing blanks allowed, as static-site tools allow)."""
    text = line.rstrip("\r\n").rstrip(" \t")
    return text if text in FENCES else None


def read_markdown(text):
    lines = [m.group(0) for m in LINE.finditer(text) if m.group(0) != ""]
    fence = fence_of(lines[0]) if lines else None
    if fence is not None:
        for j in range(1, len(lines)):
            if fence_of(lines[j]) == fence:
                front = "".join(lines[1:j])
                body = "".join(lines[j + 1 :])
                data = parse_document(front, FENCES[fence])
                if data is None:
                    data = {}
                if not isinstance(data, dict):
                    raise FileError("the front matter is not a mapping")
                row = row_of(data)
                # The rules leave a front-matter key `body` open; dirq refuses the file.
                if any(fold(name) == "body" for name, _ in row):
                    raise FileError("the front matter has a key body")
                return [row + [["body", cell(body)]]]
    # No front matter, or an opening fence never closed: all of it is the body.
    return [[["body", cell(text)]]]


def millis(value):
    """TOML date-times and times to whole milliseconds, truncated. A documented limitation of
    dirq (docs/formats.md): its TOML parser gives JavaScript Dates, which hold milliseconds, so
    `00:32:00.999999` is `00:32:00.999`; tomllib keeps microseconds."""
    if isinstance(value, (datetime.datetime, datetime.time)):
        return value.replace(microsecond=value.microsecond // 1000 * 1000)
    if isinstance(value, dict):
        return {k: millis(v) for k, v in value.items()}
    if isinstance(value, list):
        return [millis(v) for v in value]
    return value


# PyYAML's constructors raise Python's own errors for a value an explicit tag cannot take
# (`!!int x` a ValueError, `!!bool y` a KeyError, `!!timestamp x` an AttributeError): in
# safe_load these, too, are the file's error.
YAML_ERRORS = (yaml.YAMLError, ValueError, KeyError, AttributeError)


def parse_document(text, kind):
    try:
        if kind == "toml":
            return millis(tomllib.loads(text))
        return yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, *YAML_ERRORS) as error:
        raise FileError(" ".join(str(error).split())) from None


def read_file(path, fmt, each):
    if fmt == "auto":
        dot = path.rfind(".")
        fmt = EXTENSIONS.get(path[dot:].lower()) if dot > path.rfind("/") else None
        if fmt is None:
            raise FileError("no format for this extension")
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        text = decode(data)
    except UnicodeDecodeError as error:
        raise FileError(f"not UTF-8: {error}") from None
    if fmt == "json":
        return None, read_json(text, each)
    if fmt == "jsonl":
        return None, read_jsonl(text, each)
    if fmt in ("csv", "tsv"):
        return read_csv(text, "," if fmt == "csv" else "\t")
    if fmt == "toml":
        return None, rows_of(parse_document(text, fmt), each)
    if fmt == "yaml":
        # Beyond the rules, dirq reads a stream of several documents as the rows of each in
        # turn, and an empty document as none: safe_load_all, not safe_load, which refuses both.
        try:
            documents = list(yaml.safe_load_all(text))
        except YAML_ERRORS as error:
            raise FileError(" ".join(str(error).split())) from None
        rows = []
        for document in documents:
            if document is not None:
                rows.extend(rows_of(document, each))
        return None, rows
    if fmt == "markdown":
        return None, read_markdown(text)
    raise SystemExit(f"unknown format {fmt}")


def main(argv):
    if not argv:
        raise SystemExit(__doc__)
    fmt, args = argv[0], argv[1:]
    each = None
    if args[:1] == ["--each"]:
        each, args = args[1], args[2:]
    if args == ["-0"]:
        args = [p for p in sys.stdin.buffer.read().decode("utf-8").split("\0") if p]
    out = []
    for path in args:
        try:
            columns, rows = read_file(path, fmt, each)
            entry = {"path": path, "rows": rows}
            if columns is not None:
                entry["columns"] = columns
            out.append(entry)
        except FileError as error:
            out.append({"path": path, "error": str(error), "line": error.line})
    # ASCII out: lone surrogates a JSON string may hold survive as escapes.
    sys.stdout.write(json.dumps(out, ensure_ascii=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
