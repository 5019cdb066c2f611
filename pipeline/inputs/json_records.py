"""JSON logs: a record on each line (JSON Lines: .jsonl, .ndjson) or one array of records (.json).

Records are read by polars, nested fields as structs and lists, for a mapping to address by their
dotted paths (`mappings`). Each field is typed from every record (written 6 in one record and "6" in
another, it is text). A record's `source_row` is its line in a JSON Lines file and its place in an
array. A blank line is no record; one between records stops the run, as a line that is not a JSON
object does, naming the line: the rows would no longer be numbered by their lines. An array is read
whole, so a large log is better written as JSON Lines.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from ..errors import InputError, first_line

SUFFIXES = {".jsonl", ".ndjson"}  # picked up in folders; an array file (.json) is read when named
ARRAY_SUFFIX = ".json"


def is_array(source: Path) -> bool:
    """Whether the file's first character, past white space, opens an array."""
    with source.open("rb") as handle:
        while block := handle.read(1 << 16):
            if text := block.lstrip():
                return text.startswith(b"[")
    return False


def schema(source: Path, label: Path) -> dict[str, pl.DataType]:
    """The fields of the records of `source` (the file `label`, or its decompressed copy), typed from all."""
    try:
        if is_array(source):
            return dict(pl.read_json(source, infer_schema_length=None).schema)
        return dict(pl.scan_ndjson(source, infer_schema_length=None).collect_schema())
    except pl.exceptions.PolarsError as error:
        raise _unreadable(source, label, error) from None


def scan(source: Path, dtypes: dict[str, pl.DataType]) -> pl.LazyFrame:
    """The records with the fields `schema` found."""
    if is_array(source):
        return pl.read_json(source, schema=dtypes).lazy()
    return pl.scan_ndjson(source, schema=dtypes)


def rows(source: Path, label: Path, dtypes: dict[str, pl.DataType]) -> int:
    """How many records `source` holds; an InputError naming a blank line between two of them."""
    try:
        count = scan(source, dtypes).select(pl.len()).collect().item()
    except pl.exceptions.PolarsError as error:
        raise _unreadable(source, label, error) from None
    if is_array(source):
        return count
    lines = pl.scan_csv(source, has_header=False, separator="\x00", quote_char=None, schema={"line": pl.String},
                        encoding="utf8-lossy", glob=False).with_row_index("number", offset=1)
    written = pl.col("line").str.strip_chars().fill_null("") != ""
    last = lines.filter(written).select(pl.col("number").max()).collect().item() or 0
    if last != count:
        blank = lines.filter(~written & (pl.col("number") < last)).select(pl.col("number").min()).collect().item()
        raise InputError(f"{label}: line {blank} is blank; a JSON Lines log holds a record on each line")
    return count


def _unreadable(source: Path, label: Path, error: pl.exceptions.PolarsError) -> InputError:
    """The first line of a JSON Lines file that is not a JSON object, named (polars names a character
    only); the reader's own words for an array, or where no line is to blame."""
    if not is_array(source):
        written = False
        with source.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                written = True
                try:
                    record = json.loads(line)
                except ValueError as problem:
                    return InputError(f"{label}: line {number} is not JSON ({problem})")
                except RecursionError:
                    return InputError(f"{label}: line {number} is nested too deeply to be a record of a round")
                if not isinstance(record, dict):
                    return InputError(f"{label}: line {number} is not a JSON object (a record of named fields)")
        if not written:
            return InputError(f"{label}: holds no record, only blank lines; nothing to audit")
    return InputError(f"{label}: not a readable JSON log ({first_line(error) or type(error).__name__})")
