"""Formats: what a file is (Parquet, CSV or JSON, by its first bytes and name), and how a CSV file's
lines are read as records: every field as text, a line whose field count is not the header's marked
`malformed`, one that may hold bytes that are not UTF-8 marked for `ingest.flag_not_utf8`, and a file
whose quotes are not CSV quoting refused by the row that breaks it."""

from __future__ import annotations

import csv
import threading
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from polars.io.plugins import register_io_source

from . import json_records, lines
from .. import tuning
from ..errors import InputError, first_line
from .discover import TEXT_SUFFIXES, text_suffix


PARQUET_MAGIC = b"PAR1"
REPLACEMENT = "\ufffd"  # what a byte that is not UTF-8 is read as
REPLACED = "line holds U+FFFD"  # a column of `csv_records`, named as no log column is: maybe a byte not UTF-8
NOT_RECORD = "line is not a record"  # a column of `csv_records`: blank, or a line the mapping skips
#: A line of blanks alone: never a record of a CSV log, whatever its mapping says.
BLANK = r"^\s*$"


def not_record(line: pl.Expr, pattern: str = BLANK) -> pl.Expr:
    """Whether a CSV line (null when empty) is not a record: blank, or matched by `pattern`, the
    mapping's lines that are not records (`mappings.Mapping.not_records`) or else blanks alone. A
    line with a comma is not blank: only the few without one are searched for blanks."""
    if pattern == BLANK:
        return line.is_null() | pl.when(line.str.contains(",", literal=True)).then(False).otherwise(
            line.str.contains(BLANK))
    return line.is_null() | line.str.contains(pattern)


#: How files named .csv that are not CSV text begin, and what they are: read as text, their header
#: was a line of garbled names.
NOT_TEXT = {b"PK\x03\x04": "a ZIP archive (a spreadsheet workbook? export it as CSV)",
            b"\xff\xfe": "UTF-16 text (save it as UTF-8)", b"\xfe\xff": "UTF-16 text (save it as UTF-8)"}


def format_of(path: Path) -> str:
    """"parquet" or "csv", from the file's first bytes and name; an InputError for anything else."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a file")
    try:
        with path.open("rb") as handle:
            head = handle.read(4)
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror})") from None
    if not head:
        raise InputError(f"{path}: the file is empty; expected a CSV header, JSON records or a Parquet file")
    if head == PARQUET_MAGIC:
        return "parquet"
    if text_suffix(path) in TEXT_SUFFIXES:
        found = next((what for start, what in NOT_TEXT.items() if head.startswith(start)), None)
        if found:
            raise InputError(f"{path}: not CSV text but {found}; expected CSV in UTF-8")
        return "csv"
    if text_suffix(path) in json_records.SUFFIXES | {json_records.ARRAY_SUFFIX}:
        return "json"
    raise InputError(f"{path}: neither CSV (.csv), JSON (.jsonl, .ndjson, .json) nor Parquet (no PAR1 header)")


def csv_header(path: Path, label: Path | None = None) -> list[str]:
    """The column names of a CSV file's first line, stripped; an InputError (on `label`, the file as
    the user named it) when it has none, repeats one, or cannot be parsed."""
    label = label or path
    try:
        with path.open(encoding="utf-8-sig", errors="replace", newline="") as handle:
            header = next(csv.reader(handle), [])
    except csv.Error as error:
        raise InputError(f"{label}: the header cannot be read as CSV ({error})") from None
    names = [name.strip() for name in header]
    if not any(names):
        raise InputError(f"{label}: the first line is empty; expected a header row")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise InputError(f"{label}: column {', '.join(repeated)} appears more than once in the header")
    return names


def csv_records(source: Path | bytes | list[str], names: list[str], skip: int = 0, count: int | None = None,
                file_column: str | None = None, not_records: str = BLANK) -> pl.LazyFrame:
    """CSV lines as records, one per line (a blank line too, marked `NOT_RECORD` as the lines matching
    `not_records` are), every field as text under `names`, and
    `malformed` when a line's field count is not the header's: lines `skip` to `skip + count` of a file
    (all by default; lines before `skip` are only looked at for their ends), of each of several files
    (with each row's file under `file_column`), or the whole of `source` when it is the text of some
    lines (the Spark engine hands over its tasks' lines this way). `REPLACED` marks the lines that
    `flag_not_utf8` looks at."""
    schema = {name: pl.String for name in names}
    # Extra fields ignored here and counted below: polars takes a file's width from its first record,
    # and stopped the run on a file whose first row has more fields than the header.
    records = pl.scan_csv(source, has_header=False, skip_rows=skip, n_rows=count, schema=schema,
                          missing_columns="insert", extra_columns="ignore", truncate_ragged_lines=True,
                          encoding="utf8-lossy", quote_char='"', include_file_paths=file_column, glob=False)
    # Polars cannot tell a missing field from an empty one, so count each line's fields apart:
    # commas outside quoted text, plus one; none on a blank line (read as null). Quoted text is cut out
    # only of a line with a quote: most lines have none, and a literal count is cheaper than a pattern.
    lines = pl.scan_csv(source, has_header=False, skip_rows=skip, n_rows=count, separator="\x00",
                        quote_char=None, schema={"line": pl.String}, encoding="utf8-lossy", glob=False)
    line = pl.col("line")
    unquoted = pl.when(line.str.contains('"', literal=True)).then(line.str.replace_all(r'"[^"]*"', "")).otherwise(line)
    fields = lines.select(fields=unquoted.str.count_matches(",", literal=True) + 1,
                          **{REPLACED: line.str.contains(REPLACEMENT, literal=True),
                             NOT_RECORD: not_record(line, not_records)})
    counted = pl.col("fields")
    return pl.concat([records, fields], how="horizontal").select(
        *names, *filter(None, [file_column]), REPLACED, NOT_RECORD,
        malformed=pl.when(counted.is_not_null() & (counted != len(names))).then(
            pl.format("the row has {} field{}, the header {}", counted,
                      pl.when(counted == 1).then(pl.lit("")).otherwise(pl.lit("s")), pl.lit(len(names)))
        )
    )


class LineStarts:
    """Where each line of a file begins, in bytes, found by scanning on from the nearest line already
    found: spans asked for in order cost one pass over the file in all. (Polars skips rows by parsing
    them, so a file read a span at a time from its start cost the square of its length.) A chunk is
    read into, and its LFs marked in, buffers each thread keeps (`_scan_buffers`)."""

    CHUNK = 1 << 22

    def __init__(self, path: Path) -> None:
        self.path, self.found = path, {0: 0}

    def __call__(self, line: int) -> int:
        """The offset of `line` (0 the first), or the file's length when it has fewer lines."""
        at = max(known for known in self.found if known <= line)
        offset = self.found[at]
        chunk, octets, marks = _scan_buffers(self.CHUNK)
        with self.path.open("rb") as handle:
            handle.seek(offset)
            while at < line:
                size = handle.readinto(chunk)
                if not size:
                    break
                is_lf = np.equal(octets[:size], ord("\n"), out=marks[:size])
                ends = int(np.count_nonzero(is_lf))
                if at + ends < line:
                    at, offset = at + ends, offset + size
                    continue
                at, offset = line, offset + int(np.flatnonzero(is_lf)[line - at - 1]) + 1
        self.found[line] = offset
        return offset


_SCANNING = threading.local()


def _scan_buffers(size: int) -> tuple[bytearray, np.ndarray, np.ndarray]:
    """This thread's buffers for `LineStarts`: `size` bytes read into, the same bytes as numbers, and a
    mark for each. Made once and reused: fresh memory for every chunk cost more than the scan, and
    Python's bytes methods, counting or finding the LFs, took longer than numpy marking them."""
    if getattr(_SCANNING, "size", None) != size:
        chunk = bytearray(size)
        _SCANNING.size, _SCANNING.buffers = size, (chunk, np.frombuffer(chunk, np.uint8), np.empty(size, bool))
    return _SCANNING.buffers


def csv_span(source: Path, starts: LineStarts, names: list[str], first: int, count: int | None,
             not_records: str = BLANK) -> pl.LazyFrame:
    """Lines `first` to `first + count` of a CSV file as `csv_records` reads them, the bytes of the span
    read when the frame is collected (a polars IO source: `pl.defer` lost the rows of a frame asked
    for no column, as a row count or a row index asks)."""
    schema = {**dict.fromkeys(names, pl.String), REPLACED: pl.Boolean, NOT_RECORD: pl.Boolean, "malformed": pl.String}

    def span(columns: list[str] | None, predicate: pl.Expr | None, rows: int | None, _: int | None
             ) -> Iterator[pl.DataFrame]:
        begin = starts(first)
        end = None if count is None else starts(first + count)
        with source.open("rb") as handle:
            handle.seek(begin)
            text = handle.read(-1 if end is None else end - begin)
        records = csv_records(text, names, not_records=not_records) if text else pl.LazyFrame(schema=schema)
        if predicate is not None:
            records = records.filter(predicate)
        if columns is not None:
            records = records.select(columns or names[:1])  # one column keeps the rows' count
        yield (records if rows is None else records.head(rows)).collect()
    return register_io_source(span, schema=schema)


def csv_rows(label: Path, files: list[Path], not_records: str = BLANK) -> list[tuple[int, int]]:
    """The lines under the header of each CSV file, and how many of them are not records (`not_record`),
    counted by one query over them all, not a query per
    file. A file with a line whose quotes are not CSV quoting, or whose records, as the reader parses
    them, are not as many as its lines (a record that spans lines, which `csv_records` cannot read):
    an InputError naming its row (`_misquoted_row`). Each file is read through its copy (`lines.copy_of`).
    At most `Tuning.scan_files` files a query."""
    most = tuning.current().scan_files
    if len(files) > most:
        return [rows for first in range(0, len(files), most)
                for rows in csv_rows(label, files[first:first + most], not_records)]
    if not files:
        return []
    shared = {"has_header": False, "skip_rows": 1, "encoding": "utf8-lossy", "include_file_paths": "file",
              "glob": False}
    names = [str(lines.copy_of(file)) for file in files]
    text_lines = pl.scan_csv(names, separator="\x00", quote_char=None, schema={"line": pl.String}, **shared)
    records = pl.scan_csv(names, quote_char='"', truncate_ragged_lines=True, extra_columns="ignore",
                          schema={"field": pl.String}, **shared)
    # A line whose quotes are not CSV quoting can make the reader fail, or read it as it was not meant:
    # its file is found by this count, before the log is read, and its row by `unreadable`.
    line = pl.col("line")
    misquoted = pl.when(line.str.contains('"', literal=True)).then(~line.str.contains(_QUOTED_AS_CSV)).any()
    try:
        per_file = pl.collect_all([text_lines.group_by("file").agg(pl.len(), misquoted=misquoted,
                                                                   skipped=not_record(line, not_records).sum()),
                                   records.group_by("file").len()])
    except pl.exceptions.PolarsError as error:  # on a file whose quotes broke the reader, named by its row
        raise unreadable(next(filter(_misquoted_row, files), label), error) from None
    misquoted_in = set(per_file[0].filter("misquoted")["file"])
    counts = [dict(zip(found["file"], found["len"])) for found in per_file]
    for file, name in zip(files, names):
        if name in misquoted_in:
            raise unreadable(file, pl.exceptions.ComputeError("a quote out of place"))
        if counts[0].get(name, 0) != counts[1].get(name, 0):
            raise unreadable(file, pl.exceptions.ShapeError("its records and its lines differ in number"))
    skipped = dict(zip(per_file[0]["file"], per_file[0]["skipped"]))
    return [(counts[0].get(name, 0), skipped.get(name, 0)) for name in names]


def corrupt_parquet(files: Iterable[Path]) -> InputError | None:
    """An InputError on the first of `files` that is a Parquet file whose data pyarrow cannot read (a
    page damaged after its footer was written), naming pyarrow's reason; None when each reads. Asked
    only once polars has panicked on a log: a panic on data that reads is the tool's own failure."""
    for path in files:
        if format_of(path) != "parquet":
            continue
        try:
            file = pq.ParquetFile(path)
            for group in range(file.metadata.num_row_groups):
                file.read_row_group(group)
        except (OSError, pa.ArrowException) as error:
            return InputError(f"{path}: not a readable parquet file ({first_line(error) or type(error).__name__})")
    return None


def unreadable(path: Path, error: pl.exceptions.PolarsError) -> InputError:
    """A read failure as an InputError on the file, a CSV file's by the row its quotes break (see
    `_misquoted_row`). The reader fails on one with a ShapeError when it is counted, and with a
    ComputeError when it is read."""
    misquoted = None
    if isinstance(error, (pl.exceptions.ShapeError, pl.exceptions.ComputeError)):
        misquoted = _misquoted_row(path)
    if misquoted is not None:
        row, spans = misquoted
        why = ("opens a quoted field that its line does not close; records that span lines are not supported"
               if spans else 'holds a quote inside a field; a field with quotes in it must be quoted whole and '
               'its quotes doubled ("R""2" for R"2)')
        return InputError(f"{path}: row {row} {why}")
    return InputError(f"{path}: could not be read to the end ({first_line(error) or type(error).__name__})")


_FIELD = r'(?:[^,"]*|"(?:[^"]|"")*")'  # unquoted, or quoted whole with its quotes doubled
_QUOTED_AS_CSV = rf"^{_FIELD}(?:,{_FIELD})*\r?$"


def _misquoted_row(path: Path) -> tuple[int, bool] | None:
    """The first row of a CSV file whose quotes are not CSV quoting, and whether its line holds an odd
    number of them: a record that runs on to the next line (which the reader takes as one record where
    `csv_records` counts two lines, so their lengths differ), or runs on to the end of the file. An
    even number out of place, a quote inside a field (`R"2,...,4"S`), makes the reader fail too, or
    read it as it was not meant. Looked for once the reader has failed, or the count of the lines found
    such a line (`csv_rows`)."""
    if not (Path(path).is_file() and format_of(Path(path)) == "csv"):
        return None
    # Its lines as the reader reads them: of the copy it is read through (decompressed, its line ends
    # made LF, a header given), where the header is the first line as in any CSV file.
    read = pl.scan_csv(lines.copy_of(path), has_header=False, separator="\x00", quote_char=None,
                       schema={"line": pl.String}, encoding="utf8-lossy", glob=False).with_row_index("row")
    odd = pl.col("line").str.count_matches('"') % 2 == 1
    found = read.filter(odd | ~pl.col("line").str.contains(_QUOTED_AS_CSV)).select("row", odd=odd).head(1).collect()
    return (found["row"].item(), found["odd"].item()) if found.height else None


def zones_as_utc(path: Path) -> tuple[Path, pq.FileMetaData | None]:
    """A Parquet file whose timestamp columns all carry a zone polars knows, and its footer: the file
    itself, or a copy in the scratch folder (`lines.new_copy`) where a zone polars cannot parse (a fixed
    offset such as "+05:30", which pandas writes for `datetime.timezone`) is said as UTC. The instants
    are the same: Parquet stores them in UTC whatever the zone. polars stopped the process on such a
    schema, even in a column the audit does not read. Written a row group at a time. The footer is
    read once here for the opening of the file (None where it cannot be: the reader names why)."""
    try:
        footer = pq.read_metadata(path)
    except (OSError, pa.ArrowException):
        return path, None
    schema = footer.schema.to_arrow_schema()
    utc = pa.schema([field.with_type(_in_utc(field.type)) for field in schema], metadata=schema.metadata)
    if utc.equals(schema):
        return path, footer
    copy = lines.new_copy(".parquet")
    stored = pq.ParquetFile(path)
    with pq.ParquetWriter(copy, utc) as writer:
        for group in range(stored.num_row_groups):
            writer.write_table(stored.read_row_group(group).cast(utc))
    return copy, pq.read_metadata(copy)


def _in_utc(dtype: pa.DataType) -> pa.DataType:
    """`dtype` with each timestamp whose zone polars cannot parse said as UTC, nested ones too."""
    if pa.types.is_timestamp(dtype):
        return pa.timestamp(dtype.unit, "UTC") if dtype.tz and dtype.tz not in _zones() else dtype
    if pa.types.is_struct(dtype):
        return pa.struct([dtype.field(i).with_type(_in_utc(dtype.field(i).type)) for i in range(dtype.num_fields)])
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        inner = dtype.value_field.with_type(_in_utc(dtype.value_type))
        return pa.list_(inner) if pa.types.is_list(dtype) else pa.large_list(inner)
    return dtype


@cache
def _zones() -> frozenset[str]:
    """The zone names polars reads: the IANA database's."""
    import zoneinfo

    return frozenset(zoneinfo.available_timezones()) | {"UTC"}
