"""Ingest: open a log lazily, hold it to its contract, and mark the rows that cannot be used.

Every column is read as text and parsed later, so that a value which cannot be read is caught with
its column and row instead of silently becoming null (polars' `ignore_errors` would hide a bad third
card as "not dealt"). Rows keep their 1-based position in the file (`source_row`, header not counted).

A CSV row whose field count differs from the header's, or that holds bytes that are not UTF-8, is
read anyway and marked `malformed` with the reason (`formats.csv_records`, `flag_not_utf8`), so that it
is quarantined while the rest of the file is audited. Records spanning several lines (quoted newlines)
are not supported. The files of a log are found by `discover`.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache, cached_property, reduce
from pathlib import Path
from typing import NamedTuple

import polars as pl
import pyarrow.parquet as pq

from . import card_events, json_records, lines, mappings
from ..rules import cards
from .. import tuning
from ..errors import InputError, OutputError, first_line
from ..folders import SCHEMAS
from .selection import Selection
from .discover import expand, hive_values, names_in_log
from .formats import (BLANK, NOT_RECORD, REPLACED, REPLACEMENT, LineStarts, corrupt_parquet, zones_as_utc, csv_header, csv_records, csv_rows, csv_span,
                      format_of, unreadable)

MAPPINGS = SCHEMAS / "mappings"
FILE_NAME = "_file_name"  # a row's file as the log argument names it, while a round_id is derived of it


@cache
def contract(name: str) -> dict:
    """A data contract: the Great Expectations suite `schemas/NAME.json`, with column meanings in `meta`."""
    return json.loads((SCHEMAS / f"{name}.json").read_text())


def columns(name: str) -> tuple[str, ...]:
    """Every column the contract knows, in its order."""
    return tuple(contract(name)["meta"]["columns"])


def required(name: str) -> tuple[str, ...]:
    """The columns the contract's `expect_table_columns_to_match_set` requires."""
    (column_set,) = (e["kwargs"]["column_set"] for e in contract(name)["expectations"]
                     if e["type"] == "expect_table_columns_to_match_set")
    return tuple(column_set)


@cache
def outcome_spellings() -> dict[str, str]:
    """Accepted spellings of a recorded result (upper case) -> PLAYER, BANKER or TIE."""
    spellings = contract("round_log")["meta"]["outcome_spellings"]
    return {word: outcome for outcome, words in spellings.items() for word in words}


Mapping = mappings.Mapping


def load_mapping(name_or_path: str | Path, contract_name: str = "round_log") -> Mapping:
    """A mapping of a log held to `contract_name`: `schemas/mappings/NAME.json`, or a JSON file by path."""
    path = Path(name_or_path)
    if not path.is_file():
        path = MAPPINGS / f"{name_or_path}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in MAPPINGS.glob("*.json")))
        raise InputError(f"unknown mapping {str(name_or_path)!r} (known: {known}; or give a path to a JSON file)")
    return mappings.load(path, _schema("mapping"), columns(contract_name), contract_name)


@cache
def _schema(name: str) -> dict:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def with_profiles(mapping: Mapping | None, house: dict[str, str]) -> Mapping | None:
    """`mapping` (or none) with the `profile` column's names that `house` holds (`profile_files.in_folder`)
    read as the references to their files, after the mapping's own translation of that column: a
    house profile is then found by both engines, and its file's SHA-256 is in the provenance."""
    if not house:
        return mapping
    own = mapping.values.get("profile", {}) if mapping else {}
    table = {old: house.get(new, new) for old, new in own.items()} | {
        name: reference for name, reference in house.items() if name not in own}
    if mapping is None:
        return Mapping("profiles", {}, {"profile": table}, None)
    return replace(mapping, values=mapping.values | {"profile": table})


#: One file's rows by range: (start, count or None for the rest, narrowed) -> those rows, as `Log.frame`
#: has them; narrowed (the default), only those that pass the selection's test on stored text.
Rows = Callable[..., pl.LazyFrame]


@dataclass(frozen=True)
class Log:
    """An opened log, one file or many read as one: its files, formats, columns and rows.

    The frame has `source_file`, `source_row` (1-based within its file, header not counted), every
    contract column as trimmed text (null when empty or absent) and `malformed`, the reason a row's
    structure is broken (null when it is fine). `path` names the log as the user gave it.
    """

    path: Path
    files: tuple[Path, ...]
    formats: tuple[str, ...]
    columns: frozenset[str]
    opened: tuple[_Opened, ...]  # per file: its rows by range, its shape, whether the selection rules it out
    selection: Selection
    unread: tuple[tuple[Path, str], ...] = ()  # entries of its directories not read, and why (`discover.expand`)
    notation: str = "cards"  # how its cards are written (`cards.NOTATIONS`), as its mapping says
    not_records: str = BLANK  # a CSV line that is not a record, as a pattern (`Mapping.not_records`)

    @property
    def ranked(self) -> bool:
        """Whether its cards carry their ranks: not when written as points, where pairs are unknown."""
        return self.notation == "cards"

    @property
    def ruled_out(self) -> tuple[bool, ...]:
        """Per file, whether the selection keeps none of its rows (see `scan`)."""
        return tuple(one.ruled_out for one in self.opened)

    @property
    def frame(self) -> pl.LazyFrame:
        """The whole log as one frame (a plan per shape of its files: for a few files; see `pieces`)."""
        return self._read([(i, 0, self.rows_per_file[i]) for i in self._selected(tuple(range(len(self.files))))])

    def at_rows(self, places: Iterable[tuple[str, int]]) -> pl.LazyFrame:
        """The rows at these (source_file, source_row) places, each read alone (a Parquet file from its
        row, a CSV file from its line), in log order: a few rows of a log without reading it all."""
        number = {str(file): i for i, file in enumerate(self.files)}
        spans = sorted({(number[file], row - 1, 1) for file, row in places if file in number})
        return pl.concat([self._read([span]) for span in spans]) if spans else self._read([(0, 0, 0)])

    def span(self, file: int, start: int, count: int) -> pl.LazyFrame:
        """Rows `start` (from 0) to `start + count` of the log's file number `file`, as `frame` has them:
        a part of the log read alone (by a Spark task)."""
        return self._read([(file, start, count)])

    def _read_with(self, span: tuple[int, int, int]) -> object:
        """What a span of a file (file number, first row from 0, row count) is read with: a whole file,
        with the other whole files of its shape (see `_Opened.whole`); any other span, alone."""
        i, start, count = span
        whole = start == 0 and 0 < count == self.rows_per_file[i]
        return self.opened[i].shape if whole else span

    def _read(self, piece: list[tuple[int, int, int]]) -> pl.LazyFrame:
        """Spans of the log's files (see `_read_with`), in log order, as one frame, narrowed: the whole
        files of one shape by one scan, any other span alone, merged back into log order."""
        groups: dict[object, list[tuple[int, int, int]]] = {}
        for span in piece:
            groups.setdefault(self._read_with(span), []).append(span)
        held = [self.opened[group[0][0]].whole([(self.files[i], rows) for i, _, rows in group]) if len(group) > 1
                else self.opened[group[0][0]].rows(group[0][1], group[0][2]) for group in groups.values()]
        joined = held[0] if len(held) == 1 else _in_log_order(held, [str(self.files[i]) for i, _, _ in piece])
        return joined.filter(self.selection.predicate()) if self.selection else joined

    @property
    def files_read(self) -> tuple[Path, ...]:
        """The files the selection does not rule out (see `_selected`)."""
        return tuple(self._selected(self.files))

    def _selected(self, per_file: tuple) -> list:
        """`per_file` (one item per file) but for the files the selection rules out, which are then
        not scanned (one table's night out of a month of files); the first file when it rules out
        every one, so that the log is an empty frame, not no frame."""
        kept = [item for item, out in zip(per_file, self.ruled_out) if not out]
        return kept or [per_file[0]]

    @cached_property
    def rows_per_file(self) -> tuple[int, ...]:
        """Each file's rows before the selection, counted once however often the log is cut in pieces
        or sized (settlement, the contract and the evidence each cut the bet log): a Parquet file's read
        from its footer by pyarrow when it was opened (`_Opened.stored_rows`; a polars query per file
        cost a query per file), the CSV files' by one count of their lines (`formats.csv_rows`); 0 for a file
        the selection rules out."""
        return tuple(0 if one.ruled_out else self._csv_lines[i][0] if one.stored_rows is None else one.stored_rows
                     for i, one in enumerate(self.opened))

    @cached_property
    def _csv_lines(self) -> dict[int, tuple[int, int]]:
        """The CSV files' lines under the header, and the lines of them that are not records, by file number."""
        counted = [i for i, one in enumerate(self.opened) if one.stored_rows is None and not one.ruled_out]
        return dict(zip(counted, csv_rows(self.path, [self.files[i] for i in counted], self.not_records)))

    @property
    def lines_skipped(self) -> tuple[int, ...]:
        """Per file, the lines of a CSV file that are not records (blank, or skipped by the mapping); 0 for others."""
        return tuple(self._csv_lines.get(i, (0, 0))[1] for i in range(len(self.files)))

    @property
    def rows_in_files(self) -> tuple[int | None, ...]:
        """Each file's rows before any selection, for the provenance of a narrowed run: as
        `rows_per_file` less the lines that are not records, but a file the selection ruled out unread counts
        its rows when its footer or a read of it says them (Parquet, JSON Lines), None when it would take a
        read (CSV)."""
        return tuple(one.stored_rows if one.ruled_out else rows - skipped
                     for one, rows, skipped in zip(self.opened, self.rows_per_file, self.lines_skipped))

    def pieces(self, rows: int) -> Iterator[pl.LazyFrame]:
        """The log in pieces of at most `rows` rows before the selection, in order, for one streaming
        query each (see `spans`), of at most `Tuning.plans` plans (see `_read`): a piece is cut in consecutive
        parts where its files are of more shapes, or more than `Tuning.scan_files`. A log without a row is
        one empty piece."""
        selected = self._selected(tuple(enumerate(self.rows_per_file)))
        most, most_files = tuning.current().plans, tuning.current().scan_files
        for piece in list(spans(selected, rows)) or [[(selected[0][0], 0, 0)]]:
            part: list[tuple[int, int, int]] = []
            plans: set[object] = set()
            for span in piece:
                plan = self._read_with(span)
                if (plan not in plans and len(plans) == most) or len(part) == most_files:
                    yield self._read(part)
                    part, plans = [], set()
                part.append(span)
                plans.add(plan)
            yield self._read(part)


def _in_log_order(frames: list[pl.LazyFrame], paths: list[str]) -> pl.LazyFrame:
    """Frames each in log order, of rows from the files `paths` (in log order), merged into log order:
    by file, then row. Streamed, as a merge of sorted frames, so that files of two shapes are read by
    two scans, not by a plan each."""
    by_file = pl.col("source_file").cast(pl.Enum(paths)).to_physical().alias("log_file")
    keyed = [frame.with_columns(by_file) for frame in frames]
    merged = reduce(lambda merged, more: merged.merge_sorted(more, key=["log_file", "source_row"]), keyed)
    return merged.drop("log_file")


def spans(sizes: Iterable[tuple[object, int]], rows: int) -> Iterator[list[tuple[object, int, int]]]:
    """Items of the given sizes (a log's files and their rows), in order, cut in pieces of at most
    `rows` rows: each piece a list of (item, first row from 0, row count). An item larger than a piece
    spans several; items smaller than a piece share one. A piece bounds what a streaming query holds:
    polars read ahead of a slow plan by as much as it could hold. Small files share one because every
    stage runs a few queries per piece."""
    held: list[tuple[object, int, int]] = []
    size = 0
    for item, total in sizes:
        for start in range(0, total, rows):
            count = min(rows, total - start)
            if held and size + count > rows:
                yield held
                held, size = [], 0
            held.append((item, start, count))
            size += count
    if held:
        yield held


class Shape(NamedTuple):
    """What files read together by one scan share (`_Opened.whole`): their format, the columns read as
    stored (see `_open`), and the contract columns their Hive folders fill."""

    file_format: str
    stored: tuple[tuple[str, str], ...]
    folders: tuple[str, ...]
    copy: str = ""  # a file read through a copy (`lines.readable`) is read alone: a scan names rows by file


@dataclass(frozen=True)
class _Opened:
    """One opened file: the columns it really has, its format, its rows by range, whether the
    selection keeps none of them, and how it is read whole with the files of its shape."""

    names: list[str]
    file_format: str
    rows: Rows
    ruled_out: bool
    #: A Parquet file's rows, from its footer; CSV files are counted together (`formats.csv_rows`).
    stored_rows: int | None
    source: Path  # what is read: the file, or a copy of a CSV file with its line ends made LF (`lines.readable`)
    #: Files of one shape are read whole together by `whole` of any of them, given them all and their rows.
    shape: Shape
    whole: Callable[[list[tuple[Path, int]]], pl.LazyFrame]


def _open(path: Path, contract_name: str, mapping: Mapping | None, selection: Selection, made: dict,
          names_in_log: dict[str, str]) -> _Opened:
    """One file as a frame of contract columns (text), with the columns it really has and its format;
    `made` holds what files of one shape are read by (`_texts`), and every file's section lines
    (`SECTIONS`), for all the files of a log."""
    file_format = format_of(path)
    if mapping is not None and mapping.header is not None and file_format != "csv":
        raise InputError(f"{path}: the mapping gives a header, which only a CSV log can lack; this is a "
                         f"{file_format} file")
    events = mapping is not None and mapping.events is not None
    not_records = mapping.not_records if mapping is not None else BLANK
    sectioned = mapping.sectioned if mapping is not None else ()
    if mapping is not None and (mapping.skip or mapping.sections) and (file_format != "csv" or events):
        raise InputError(f"{path}: the mapping skips lines or reads section lines, which only a CSV or text log "
                         f"of rounds has; this is a {'card-event' if events else file_format} log")
    try:
        if file_format == "parquet" or events:
            # The schema from the file's footer, by a scan of its own: asked of `whole`, it keeps later
            # filters from the reader. Every scan of a named file is told not to glob: `night[1].parquet`
            # is a name, not a pattern that matches night1.parquet. A card-event log is read as the
            # rounds its events make, written to a Parquet copy.
            source, footer = ((_rounds_of_events(path, file_format, contract_name, mapping), None) if events
                              else zones_as_utc(path))
            dtypes = pl.scan_parquet(source, glob=False).collect_schema()
            footer = footer or pq.read_metadata(source)
            stored_rows = footer.num_rows
            held = sum(footer.row_group(i).num_rows for i in range(footer.num_row_groups))
            if held != stored_rows:  # a reader trusting the footer would audit some rows and skip the rest
                raise InputError(f"{path}: its footer says {stored_rows} rows but its row groups hold {held}; "
                                 "the file is damaged or was written wrongly")
            names = list(dtypes)

            def read(start: int = 0, count: int | None = None) -> pl.LazyFrame:
                # Planned when asked, as `here` is: most files of a many-file log are only read by
                # `whole_files`. A cut reaches the scan, but keeps a filter from it (see `ranged`).
                whole = pl.scan_parquet(source, hive_partitioning=False, glob=False)
                return whole if (start, count) == (0, None) else whole.slice(start, count)
        elif file_format == "json":
            source = lines.decompressed(path)
            dtypes = json_records.schema(source, path)
            stored_rows, names, footer = json_records.rows(source, path, dtypes), list(dtypes), None

            def read(start: int = 0, count: int | None = None) -> pl.LazyFrame:
                whole = json_records.scan(source, dtypes)
                return whole if (start, count) == (0, None) else whole.slice(start, count)
        else:
            # Every field is read as text: the header is the schema (cheaper than a plan built to ask it).
            source = _csv_source(path, mapping)
            header = names = csv_header(source, path)
            dtypes = {name: pl.String for name in names}
            stored_rows = footer = None

            starts = LineStarts(source)

            def read(start: int, count: int | None) -> pl.LazyFrame:
                # The whole file by polars' own reader, which stops early for a few rows; a span by its bytes.
                if (start, count) == (0, None):
                    return csv_records(source, header, 1, not_records=not_records)
                return csv_span(source, starts, header, 1 + start, count, not_records)
    except pl.exceptions.PolarsError as error:
        raise InputError(f"{path}: not a readable {file_format} file "
                         f"({first_line(error) or type(error).__name__})") from None
    as_found = dtypes  # as the file names them, before a mapping renames them
    found, broken = mappings.columns_of(mapping, dtypes, columns(contract_name), path)
    plain = {column.stored: target for target, column in found.items() if column.stored}
    names = [plain.get(name, name) for name in names] + [c for c, column in found.items() if column.stored is None]
    twice = next((c for c in sectioned if c in names), None)
    if twice:
        raise InputError(f"{path}: column {twice} is in the log, and the mapping's section lines fill it too; "
                         "one of them would be lost")
    names += sectioned
    if sectioned:
        made.setdefault(SECTIONS, []).append(_sections(source, path, mapping))
    folders = hive_values(path)
    both = next((k for k in folders if mapping is not None and k in mapping.constants), None)
    if both:  # the constant would win unseen, merging every folder's rows into one table (or shoe)
        raise InputError(f"{path}: its folder {both}={folders[both]} fills {both}, and the mapping's constants fill "
                         f"it too ({mapping.constants[both]!r}); one of them would be lost")
    partitions = {k: v for k, v in folders.items() if k in columns(contract_name) and k not in names}
    missing = [c for c in required(contract_name) if c not in names]
    if missing:
        maps = ("a mapping renames a provider's columns (audit --bets-mapping, validate --bets --mapping)"
                if contract_name == "bet_log" else "--mapping renames a provider's columns")
        hint = "" if mapping and mapping.path else f"; {maps}"
        in_other_case = {name.casefold(): name for name in names}
        cased = next((in_other_case[c] for c in missing if c in in_other_case), None)
        if cased:
            hint = f"; names are matched as written: {cased} is not {cased.casefold()}{hint}"
        # An export from a spreadsheet in a locale whose decimal mark is the comma: ';' between fields.
        other = next((mark for mark in (";", "\t", "|") if len(names) == 1 and mark in names[0]), None)
        if other:
            hint = f"; the header is one field, split by {other!r}: a CSV log's fields are separated by commas"
        raise InputError(f"{path}: required column {', '.join(missing)} missing "
                         f"(found: {', '.join(names) or 'none'}{hint})")
    present = [c for c in columns(contract_name) if c in found]
    # A list or a struct would be read as its printed form ('{"R1"}'), or fail mid-read; a duration
    # cannot be read as text at all.
    nested = [c for c in present if found[c].dtype.is_nested() or found[c].dtype == pl.Binary
              or isinstance(found[c].dtype, pl.Duration)]
    if nested:
        raise InputError(f"{path}: column {nested[0]} is stored as {found[nested[0]].dtype}; "
                         "expected text, a number or a timestamp")
    # The columns as stored, which with the format and the Hive folders that fill a column make a shape:
    # in CSV the header as it is, since a record's fields are taken by place; in Parquet, by name, the
    # columns the contract reads, since a scan of several files takes those by name and leaves others
    # (`whole_files`). A file with a column of its own, or another order, is then read with its
    # neighbours, not by a plan of its own.
    read_from = {root for column in found.values() for root in column.expr.meta.root_names()}
    if file_format == "parquet" and not events:
        _text_bounded(path, source, footer, sorted(n for n in read_from if as_found.get(n) == pl.String))
    stored = (tuple((name, str(dtype)) for name, dtype in as_found.items()) if file_format == "csv" else
              tuple(sorted((name, str(dtype)) for name, dtype in as_found.items() if name in read_from)))
    # A JSON file is read alone: its records are typed by its own (`json_records`).
    shape = Shape(file_format, stored, tuple(partitions), "" if source == path and file_format != "json" else str(path))
    if shape not in made:
        made[shape] = _texts(contract_name, file_format == "csv" or events, found, broken, mapping)
    trimmed, finished, as_stored, timed, malformed = made[shape]

    derived = mapping is not None and bool(mapping.round_id)

    def shaped(rows: pl.LazyFrame, keep: pl.Expr | None, at: dict[str, pl.Expr]) -> pl.LazyFrame:
        """The rows as `Log.frame` has them, those that pass `keep` (on the stored rows, numbered), and
        `at` their place: source_file, source_row and the values of the Hive folders they are in."""
        if keep is not None:
            rows = rows.filter(keep)
        csv_text = file_format == "csv" and not events  # checked for bytes not UTF-8 (Parquet's are by its rules)
        if csv_text:  # a blank line, or one the mapping skips, is not a record (`Log.lines_skipped`)
            rows = rows.filter(~pl.col(NOT_RECORD))
        rows = rows.select(at["source_file"].alias("source_file"), at["source_row"].alias("source_row"), malformed,
                           *([REPLACED] if csv_text else []), **(trimmed | {c: at[c] for c in partitions}),
                           **({FILE_NAME: at[FILE_NAME]} if derived else {}))
        if sectioned:
            rows = _in_sections(rows.drop(sectioned), sectioned, made)
        rows = rows.with_columns(**finished)
        if derived:
            rows = rows.with_columns(round_id=mappings.derived_round_id(mapping, pl.col(FILE_NAME))).drop(FILE_NAME)
        return flag_not_utf8(rows, present) if csv_text else rows

    def here() -> dict[str, pl.Expr]:
        # A round made of events is where its first event is.
        row = pl.col(card_events.FIRST_ROW).cast(pl.get_index_type()) if events else pl.col("source_row")
        return {"source_file": pl.lit(str(path)), "source_row": row,
                FILE_NAME: pl.lit(names_in_log.get(str(path), str(path)), pl.String),
                **{c: pl.lit(value, pl.String) for c, value in partitions.items()}}

    def numbered(rows: pl.LazyFrame, first_row: int) -> pl.LazyFrame:
        return rows.with_row_index("source_row", offset=first_row)

    def ranged(start: int, count: int | None, narrowed: bool = True) -> pl.LazyFrame:
        """The rows `start` to `start + count`; `narrowed`, only those that pass `Selection.stored`.

        A range is cut before the rows are numbered, so that the cut reaches the reader; but a cut keeps
        a filter from a Parquet reader, so a narrowed Parquet range is cut by row number in the filter.
        """
        if not (narrowed and selection):
            return shaped(numbered(read(start, count), start + 1), None, here())
        stored = selection.stored(as_stored, timed)
        if file_format == "csv" and not events:
            return shaped(numbered(read(start, count), start + 1), stored, here())
        row = pl.col("source_row")
        within = row > start if count is None else (row > start) & (row <= start + count)
        return shaped(numbered(read(), 1), stored & within, here())

    def whole_files(files: list[tuple[Path, int]]) -> pl.LazyFrame:
        """Whole files of this one's shape (`_Opened.shape`) and their rows, read by one scan, narrowed.
        Each row's file is numbered by its path as an Enum, and its source_row and Hive folder values
        gathered by that number: a binary search of the files' first rows by row number held a whole
        piece. A union of one plan per file, as `ranged` reads a file, took polars' streaming engine a
        time that grew as the square of the files. CSV
        files of one header are read by one scan of their records and one of their lines (`formats.csv_records`),
        whose rows stay in step: a file whose records and lines differ stopped the count (`formats.csv_rows`)."""
        starts = pl.Series(list(itertools.accumulate((rows for _, rows in files[:-1]), initial=0)), dtype=pl.Int64)
        paths = [str(file) for file, _ in files]
        scanned = (pl.scan_parquet(paths, schema={name: as_found[name] for name, _ in stored}, extra_columns="ignore",
                                   hive_partitioning=False, include_file_paths="log_file", glob=False)
                   if file_format == "parquet" else csv_records(paths, header, 1, file_column="log_file",
                                                                not_records=not_records))
        rows = scanned.with_row_index("log_index")
        keep = selection.stored(as_stored, timed) if selection else None
        file = pl.col("log_file").cast(pl.Enum(paths)).to_physical()
        at = {"source_file": pl.col("log_file"),
              "source_row": (pl.col("log_index").cast(pl.Int64) - pl.lit(starts).gather(file) + 1
                             ).cast(pl.get_index_type()),
              FILE_NAME: pl.lit(pl.Series([names_in_log.get(str(f), str(f)) for f, _ in files], dtype=pl.String)
                                ).gather(file),
              **{c: pl.lit(pl.Series([hive_values(f)[c] for f, _ in files], dtype=pl.String)).gather(file)
                 for c in partitions}}
        return shaped(rows, keep, at)

    translated = {c: mapping.values.get(c, {}).get(v, v) if mapping else v for c, v in partitions.items()}
    # By its folders, or by a Parquet file's statistics; by its rows too (see `_tested`).
    ruled_out = selection.rules_out(translated) or (
        footer is not None and selection.rules_out_by(footer, as_stored, timed and timed[0]))
    return _Opened([*names, *partitions], file_format, ranged, ruled_out, stored_rows, source,
                   shape, whole_files)


#: The text a Parquet log may hold, as bytes of its text columns written out, and as times its size on
#: disk past that: Parquet writes a repeated value once and each row as a number, so a tiny file can
#: hold thousands of rows of one long value, which every step and output would then hold once a row. An
#: honest log's text is a few tens of times its file (docs/performance.md).
TEXT_BYTES, TEXT_TIMES = 256 << 20, 1000


def _text_bounded(path: Path, source: Path, footer: pq.FileMetaData, names: list[str]) -> None:
    """An InputError naming a Parquet file whose text columns hold more than `TEXT_BYTES` and more
    than `TEXT_TIMES` its size, and the column that holds most. Read only where the footer allows as
    much (no column chunk holds more than its values times its stored bytes: a one-row file of many is
    not read for it); polars reads a dictionary's text once, however many rows name it."""
    chunks = [footer.row_group(g).column(i) for g in range(footer.num_row_groups) for i in range(footer.num_columns)]
    most = max(TEXT_BYTES, TEXT_TIMES * path.stat().st_size)
    if not names or sum(c.num_values * c.total_uncompressed_size for c in chunks if c.path_in_schema in names) <= most:
        return
    rows = pl.scan_parquet(source, glob=False, hive_partitioning=False)
    held = collect(path, [rows.select(pl.col(names).str.len_bytes().sum())])[0].row(0, named=True)
    if sum(held.values()) > most:
        widest = max(held, key=held.get)
        raise InputError(f"{path}: its text columns hold {sum(held.values()):,} bytes ({widest} {held[widest]:,}), "
                         f"over {TEXT_TIMES:,} times the file's {path.stat().st_size:,}; a log's values are not "
                         "repeated so (a file that is not a log?)")


SECTIONS = "sections"  # what `made` holds every file's section lines under (`_sections`)


def _sections(source: Path, path: Path, mapping: Mapping) -> pl.DataFrame:
    """The section lines of a CSV or text log (`Mapping.sections`): each line's file and row, numbered as
    its records are, and for each column a section fills, its value where the line fills it (a line of
    a pattern that names it), null where the line fills another."""
    line = pl.col("line")
    rows = pl.scan_csv(source, has_header=False, skip_rows=1, separator="\x00", quote_char=None,
                       schema={"line": pl.String}, encoding="utf8-lossy", glob=False).with_row_index("source_row", 1)
    named = [(pattern, set(re.compile(pattern).groupindex)) for pattern in mapping.sections]
    hit = [line.str.contains(pattern) for pattern, _ in named]
    filled = {c: pl.coalesce([pl.when(found).then(line.str.extract_groups(pattern).struct.field(c))
                              for (pattern, groups), found in zip(named, hit) if c in groups])
              for c in mapping.sectioned}
    # Which columns each line fills, whatever the values: a line of a pattern fills all its groups.
    fills = {f"fills {c}": pl.any_horizontal([found for (_, groups), found in zip(named, hit) if c in groups])
             for c in mapping.sectioned}
    return collect(path, [rows.filter(pl.any_horizontal(hit)).select(
        source_file=pl.lit(str(path)), source_row="source_row", **filled, **fills)])[0]


def _in_sections(rows: pl.LazyFrame, sectioned: tuple[str, ...], made: dict) -> pl.LazyFrame:
    """`rows` (with source_file and source_row, in log order) with each column the section lines fill
    taken from the last line before the row, in its file, that fills it."""
    sections = pl.concat(made[SECTIONS]).lazy()
    for c in sectioned:
        lines_filling = sections.filter(pl.col(f"fills {c}")).select("source_file", section_row="source_row",
                                                                     **{c: pl.when(pl.col(c) != "").then(pl.col(c))})
        rows = rows.join_asof(lines_filling, left_on="source_row", right_on="section_row", by="source_file",
                              strategy="backward", check_sortedness=False).drop("section_row")
    return rows


def _csv_source(path: Path, mapping: Mapping | None) -> Path:
    """What a CSV file is read through: itself, or a copy decompressed, with LF line ends, or with the
    header its mapping gives (`lines`), said to `lines.read_through` for the rows an error names."""
    source = lines.readable(path)
    if mapping is not None and mapping.header is not None:
        source = lines.with_header(source, mapping.header)
    return lines.read_through(path, source)


def _rounds_of_events(path: Path, file_format: str, contract_name: str, mapping: Mapping) -> Path:
    """A card-event log's rounds (`card_events.rounds`), written to a Parquet copy in the scratch folder:
    the events read whole as text (a CSV row's structure judged, as any CSV row's), the mapping's
    renames applied but to the events' own fields."""
    if file_format == "csv":
        source = _csv_source(path, mapping)
        names = csv_header(source, path)
        rows = flag_not_utf8(csv_records(source, names, 1), names)
    else:
        source = lines.decompressed(path) if file_format == "json" else path
        rows = (json_records.scan(source, json_records.schema(source, path)) if file_format == "json"
                else pl.scan_parquet(path, glob=False)).with_columns(malformed=pl.lit(None, pl.String))
    stored = rows.collect_schema()
    spec = mapping.events
    lacking = next((f for f in (spec.round, spec.position, spec.card, spec.sequence) if f and f not in stored), None)
    if lacking:
        raise InputError(f"{path}: the mapping's events are read from field {lacking}, which the log lacks "
                         f"(found: {', '.join(n for n in stored if n != 'malformed')})")
    flat = [name for name, dtype in stored.items() if name not in ("malformed", NOT_RECORD) and not dtype.is_nested()]
    renames = {field: target for field, target in mapping.columns.items() if field in flat}
    # A blank line is no event; the events keep the rows of their lines.
    skipped = pl.col(NOT_RECORD) if NOT_RECORD in stored else pl.lit(False)
    texts = rows.select(*(as_text(pl.col(name), stored[name]).str.strip_chars().alias(renames.get(name, name))
                          for name in flat), "malformed", skipped.alias(NOT_RECORD)).with_row_index(
        "event_row", offset=1).filter(~pl.col(NOT_RECORD)).drop(NOT_RECORD)
    copy = lines.new_copy(".parquet")
    card_events.rounds(collect(path, [texts])[0], spec, columns(contract_name)).write_parquet(copy)
    return copy


def _texts(contract_name: str, judged: bool, found: dict[str, mappings.Column], broken: list[pl.Expr],
           mapping: Mapping | None) -> tuple:
    """How a file of one shape is read as contract text, built once per shape (`_open`): the trimmed
    text of every contract column (null where a file lacks it; Hive folders fill theirs), the step
    that nulls empty text and translates mapped values, the stored names and dealt_at type that
    `Selection.stored` tests, and `malformed` (with the reasons its layout is `broken`, by the
    mapping). Built once a shape, not once a file."""
    present = [c for c in columns(contract_name) if c in found]
    trimmed, finished = text_columns(contract_name, found, mapping)
    as_stored = {c: found[c].stored for c in present if found[c].stored is not None
                 and found[c].dtype == pl.String and not (mapping and c in mapping.values)}
    dealt = found.get("dealt_at")
    timed = ((dealt.stored, dealt.dtype) if dealt is not None and dealt.stored is not None
             and isinstance(dealt.dtype, pl.Datetime) and not (mapping and "dealt_at" in mapping.values) else None)
    # Only a CSV row, or a round of events, is `judged` malformed as it is read; another is never, the
    # column then added after the filter, which it would keep from the reader.
    malformed = pl.col("malformed") if judged else pl.lit(None, pl.String)
    malformed = (reasons_text([malformed, *broken]) if broken else malformed).alias("malformed")
    return trimmed, finished, as_stored, timed, malformed


def text_columns(contract_name: str, found: dict[str, mappings.Column], mapping: Mapping | None
                 ) -> tuple[dict[str, pl.Expr], dict[str, pl.Expr]]:
    """The text rules of a log, for both engines: each contract column as text (`as_text`), trimmed
    unless a number or a time, null where a file lacks it (`trimmed`), then, a step after, empty text
    made null and the mapping's values translated (`finished`)."""
    present = [c for c in columns(contract_name) if c in found]
    # Numbers and times become text as `as_text` writes them: no space to trim.
    typed = {c for c in present if found[c].dtype.is_numeric() or found[c].dtype.is_temporal()}
    kinds = {c: spec["kind"] for c, spec in contract(contract_name)["meta"]["columns"].items()}
    # Columns are renamed in the select that trims them: a rename before it keeps a filter from the reader.
    column = {c: as_text(found[c].expr, found[c].dtype) for c in present}
    trimmed = {c: (column[c] if c in typed else trim(column[c], kinds[c] in SHORT_KINDS))
               if c in present else pl.lit(None, pl.String) for c in columns(contract_name)}
    # A step after the trim, not one expression: polars computes a subexpression used twice twice.
    finished = {c: pl.when(pl.col(c) != "").then(pl.col(c)) for c in present if c not in typed}
    if mapping is not None:
        # Empty text is null by then: an empty value in the table translates nothing.
        finished |= {c: mappings.translated(pl.col(c), finished.get(c, pl.col(c)), table)
                     for c, table in mapping.values.items() if c in trimmed}
        if mapping.paid == "net" and {"paid", "stake"} <= set(present):
            finished["paid"] = mappings.gross_paid(finished.get("paid", pl.col("paid")), pl.col("stake"))
    return trimmed, finished


#: The characters `str.strip_chars()` takes from either end: Unicode's White_Space.
BLANKS = ("\t", "\n", "\x0b", "\x0c", "\r", " ", "\x85", "\xa0", "\u1680", *map(chr, range(0x2000, 0x200B)),
          "\u2028", "\u2029", "\u202f", "\u205f", "\u3000")
#: The kinds of column (the contract's `meta`) whose values are a few characters: cards, totals,
#: outcomes, profiles, bet types and amounts.
SHORT_KINDS = frozenset({"card", "third_card", "total", "outcome", "profile", "bet_type", "amount"})


def trim(text: pl.Expr, short: bool = False) -> pl.Expr:
    """`text` without the blanks at either end. A `short` text is trimmed only where it holds a blank:
    on a few characters the search costs less than the trim, and polars works no row of a branch that
    no row takes (on ids and times, longer, the trim costs less than the search)."""
    if not short:
        return text.str.strip_chars()
    return pl.when(text.str.contains_any(BLANKS)).then(text.str.strip_chars()).otherwise(text)


_NUMBERS = pl.Series([str(number) for number in range(1024)], dtype=pl.String)


def as_text(column: pl.Expr, dtype: pl.DataType) -> pl.Expr:
    """A stored column as the text the audit parses (and the findings show), the same in both engines.

    A float that is a whole number is written as one: pandas stores an integer column with gaps as
    floats, and a hand_no or total of 6.0 was recorded as 6 (as text "6.0" would be flagged). NaN,
    pandas' gap, is not recorded; 1.5 and inf stay as they are. A decimal is written as a float
    is, without the zeros that end its places: a database's NUMBER exported as decimal(38,10) holds
    a hand_no of 6 as 6.0000000000, and a stake of 12.5 as 12.5000000000. A timestamp is written in
    ISO 8601, in UTC with a Z when it is one (without a zone when the file gives none), to the
    microsecond when it has a fraction of a second.
    """
    if isinstance(dtype, pl.Datetime):
        moment, zone = (column.dt.convert_time_zone("UTC"), "Z") if dtype.time_zone else (column, "")
        return (pl.when(moment.dt.microsecond() == 0).then(moment.dt.to_string(f"%Y-%m-%dT%H:%M:%S{zone}"))
                .otherwise(moment.dt.to_string(f"%Y-%m-%dT%H:%M:%S%.6f{zone}")))
    if isinstance(dtype, pl.Decimal) and dtype.scale:  # written with its point and every place
        return column.cast(pl.String).str.replace(r"\.?0+$", "")
    if dtype.is_integer():
        # Small numbers (a hand_no, a total) taken from a table of their texts: cheaper than a cast.
        number = column.cast(pl.Int64, strict=False)
        return (pl.when(number.is_between(0, len(_NUMBERS) - 1))
                .then(pl.lit(_NUMBERS).gather(number.clip(0, len(_NUMBERS) - 1)))
                .otherwise(column.cast(pl.String)))
    if not dtype.is_float():
        return column.cast(pl.String)
    whole = column.is_finite() & (column == column.floor()) & (column.abs() < 2**53)
    return (pl.when(whole).then(column.cast(pl.Int64, strict=False).cast(pl.String))
            .when(column.is_nan()).then(pl.lit(None, pl.String))
            .otherwise(column.cast(pl.String)))


def scan(inputs: Path | str | list, contract_name: str, mapping: Mapping | None = None,
         selection: Selection = Selection()) -> Log:
    """Open a log (one file or many, see `discover.expand`) against a contract; see `Log`.

    A mapping renames the provider's columns and translates its values first. Optional columns a
    file lacks are added as nulls (or taken from Hive folder names), so later stages see one shape;
    a required column that is missing, a repeated column, or a log none of whose files has a row
    under its header, is an InputError naming the file. One file among others may have none (a table
    closed for the night): it is an input with 0 rows. Other columns are ignored. A selection narrows
    the rows before anything is read, and rules out a file it keeps no row of: by the file's Hive
    folders (table_id, shoe_id), by a Parquet file's statistics of its ids (`Selection.rules_out_by`),
    or by a read of the few columns it tests (see `_tested`), in which Parquet files of nights before
    `since` are skipped by their statistics (see `Selection.stored`).
    """
    label, files, unread = expand(inputs)
    _FILES[label] = tuple(files)
    made: dict = {}  # by shape, what its files are read by (`_texts`); the section lines (`SECTIONS`)
    named = names_in_log(inputs) if mapping is not None and "source_file" in mapping.round_id else {}
    opened = _tested(label, files, [_open(path, contract_name, mapping, selection, made, named) for path in files],
                     selection)
    if not any(_has_rows(path, one.rows(0, None, narrowed=False)) for path, one in zip(files, opened)):
        raise InputError(f"{files[0]}: the header has no rows under it; nothing to audit" if len(files) == 1
                         else f"{label}: none of its {len(files)} files has a row under its header; nothing to audit")
    names = frozenset(name for one in opened for name in one.names)
    return Log(label, tuple(files), tuple(one.file_format for one in opened), names, tuple(opened), selection,
               tuple(unread), mapping.notation if mapping else "cards", mapping.not_records if mapping else BLANK)


def _tested(label: Path, files: list[Path], opened: list[_Opened], selection: Selection) -> list[_Opened]:
    """`opened` with each file not yet ruled out (by its folders or statistics) ruled out when none of
    its rows passes the selection: the files of one shape by one query, which reads the few columns
    the selection tests, not a query per file. A file is not tested when its folders decide the
    selection for every row (`Selection.decided_by`), nor a CSV file alone in its shape: the test
    parses a CSV file whole, as its staging does, so it pays only where it rules files out, and a lone
    file it would only read twice."""
    if not selection:
        return opened
    shapes: dict[Shape, list[int]] = {}
    for i, one in enumerate(opened):
        if not (one.ruled_out or selection.decided_by(one.shape.folders)):
            shapes.setdefault(one.shape, []).append(i)
    most = tuning.current().scan_files
    groups = [group[first:first + most] for shape, group in shapes.items()
              if shape.file_format == "parquet" or len(group) > 1 for first in range(0, len(group), most)]
    kept: set[str] = set()
    for group in groups:
        # CSV files are counted later, those kept only (`Log.rows_per_file`): rows number source_row,
        # which the test does not read. It reads each record's file from the reader of the records.
        rows = opened[group[0]].whole([(files[i], opened[i].stored_rows or 0) for i in group])
        try:
            found = collect(label, [rows.filter(selection.predicate()).select(pl.col("source_file").unique())])[0]
        except InputError:
            # A CSV record that spans lines put the records out of step with the lines: the count
            # names its file and row.
            csv_rows(label, [files[i] for i in group if opened[i].stored_rows is None])
            raise
        kept |= set(found["source_file"])
    tested = {i for group in groups for i in group}
    return [replace(one, ruled_out=str(files[i]) not in kept) if i in tested else one for i, one in enumerate(opened)]


def _has_rows(path: Path, frame: pl.LazyFrame) -> bool:
    return collect(path, [frame.select("source_row").head(1)])[0].height > 0


def reasons_text(reasons: list) -> pl.Expr:
    """The reasons that hold for a row, joined with "; "; null when none does."""
    # Not when(joined != "").then(joined): polars would join them twice. Nor replace("", None):
    # polars' streaming engine holds the whole frame for it; extract streams, in the same time.
    return pl.concat_str(reasons, separator="; ", ignore_nulls=True).str.extract(r"(?s)^(.+)$", 1)


PREFETCH = "POLARS_ROW_GROUP_PREFETCH_SIZE"


_AHEAD = threading.Lock()
_runs_ahead = 0  # runs under way that set PREFETCH (see `one_row_group_ahead`)


@contextmanager
def one_row_group_ahead() -> Iterator[None]:
    """Polars told to read Parquet one row group ahead while a run lasts (also a decorator), unless
    the environment says otherwise; as it was before, after.

    Polars reads ahead at least 16 row groups of a Parquet scan, a default sized for object stores. The
    files an audit reads back grow with the log, and a query over one then grew with it. One ahead keeps
    the peak flat and keeps up with local disks. Polars reads the variable per query. It is set here, around a run,
    not when the package is imported: importing the engine changes nothing. The variable is the
    process's: runs that overlap (threads of one process) count themselves, and the last to end
    removes it, not the first.
    """
    global _runs_ahead
    with _AHEAD:
        ours = _runs_ahead > 0 or PREFETCH not in os.environ
        if ours:
            _runs_ahead += 1
            os.environ[PREFETCH] = "1"
    try:
        yield
    finally:
        if ours:
            with _AHEAD:
                _runs_ahead -= 1
                if _runs_ahead == 0:
                    os.environ.pop(PREFETCH, None)


#: Errors of writing, as polars quotes the OS: no space, file too large, quota exceeded, read-only.
_NOT_WRITTEN = re.compile(r"\(os error (28|27|122|30)\)")


#: The files of each log this process opened (`scan`), by the log's label: what a query that panics
#: is checked against (`collect`).
_FILES: dict[Path, tuple[Path, ...]] = {}


def collect(path: Path, frames: list[pl.LazyFrame]) -> list[pl.DataFrame]:
    """`pl.collect_all`, with a read failure met mid-file reported as an InputError on the file, and
    a failure to write an output as an OutputError. A panic of polars is an InputError on a Parquet
    file of the log that pyarrow cannot read either (its pages damaged: `formats.corrupt_parquet`), and
    stays the tool's own failure where every file reads."""
    try:
        return pl.collect_all(frames)
    except pl.exceptions.PolarsError as error:
        written = _NOT_WRITTEN.search(str(error))
        if written:
            raise OutputError(os.strerror(int(written.group(1)))) from None
        raise unreadable(path, error) from None
    except pl.exceptions.PanicException:
        corrupt = corrupt_parquet(_FILES.get(Path(path), ()))
        if corrupt is None:
            raise
        raise corrupt from None


def write_parquet(frame: pl.DataFrame, path: Path, **options) -> None:
    """`frame.write_parquet`, with a failure to write (a full disk, a size limit) an OutputError."""
    try:
        frame.write_parquet(path, **options)
    except (pl.exceptions.PolarsError, OSError) as error:
        written = _NOT_WRITTEN.search(str(error))
        if written:
            raise OutputError(os.strerror(int(written.group(1)))) from None
        raise


CARD_COLUMNS = tuple(f"{hand}_card_{i}" for hand in ("player", "banker") for i in (1, 2, 3))


def code_column(card_column: str) -> str:
    """`player_card_3` -> `player_code_3`: where the parsed card code of a card column goes."""
    return card_column.replace("_card_", "_code_")


NOT_A = {"cards": "card", "points": "card point (0 to 9)"}  # what a card that cannot be read is not


def parse_rounds(frame: pl.LazyFrame, notation: str = "cards") -> pl.LazyFrame:
    """Add card codes (`player_code_1` ... `banker_code_3`) and `reject`, the reason a row cannot be replayed.

    A row is replayable when it is well formed, has a round_id and four readable opening cards, and its
    third cards are readable where present. `reject` names each failing column and its value.
    """
    codes = {code_column(c): cards.parse_expr(pl.col(c), notation) for c in CARD_COLUMNS}
    reasons = [pl.col("malformed"), pl.when(pl.col("round_id").is_null()).then(pl.lit("round_id is empty"))]
    for column in CARD_COLUMNS:
        raw, parsed = pl.col(column), pl.col(code_column(column))
        reasons.append(pl.when(raw.is_not_null() & parsed.is_null())
                       .then(pl.format("{} '{}' is not a {}", pl.lit(column), raw, pl.lit(NOT_A[notation]))))
        if not column.endswith("_3"):
            reasons.append(pl.when(raw.is_null()).then(pl.lit(f"{column} is empty")))
    return frame.with_columns(**codes).with_columns(
        reject=reasons_text(reasons)
    )


def places_of(path: Path, contract_name: str, column: str, values: list[str], mapping: Mapping | None = None
              ) -> list[dict]:
    """Every row of a whole log whose `column` holds one of `values`, as its file, row and that value:
    for an investigation, the copies of a round's bets anywhere in the bet log. Only that column is
    asked of the files."""
    log = scan(path, contract_name, mapping)
    wanted = pl.col(column).is_in(pl.Series(values, dtype=pl.String).implode())
    return pl.concat([collect(log.path, [piece.filter(wanted).select("source_file", "source_row", column)])[0]
                      for piece in log.pieces(max(1, sum(log.rows_per_file)))]).to_dicts()


def rows_for_round(path: Path, contract_name: str, round_id: str, mapping: Mapping | None = None) -> list[dict]:
    """Every row of a log carrying `round_id` (round logs parsed), for an investigation of one round:
    narrowed as `--table` narrows an audit, so a Parquet reader decodes little but the round_ids."""
    log = scan(path, contract_name, mapping, Selection(rounds=(round_id,)))
    # The log in as few pieces as `Tuning.plans` allows: a year of nightly CSV files in one plan was slow.
    wanted = list(log.pieces(max(1, sum(log.rows_per_file))))
    if contract_name == "round_log":
        wanted = [parse_rounds(piece, log.notation) for piece in wanted]
    # One query a piece: `collect` given them all runs them as one plan, the union that is slow.
    return pl.concat([collect(log.path, [piece])[0] for piece in wanted]).to_dicts()


def flag_not_utf8(rows: pl.LazyFrame, checked: list[str]) -> pl.LazyFrame:
    """CSV rows (`formats.csv_records`) with a reason added to `malformed` for each `checked` column holding
    bytes that are not UTF-8 (read as U+FFFD), and without `REPLACED`. Only the columns of a line
    `REPLACED` marks are searched: polars skips a branch that no row takes, and most logs have none."""
    not_utf8 = [pl.when(pl.col(REPLACED)).then(pl.when(pl.col(c).str.contains(REPLACEMENT, literal=True))
                                                 .then(pl.lit(f"{c} holds bytes that are not UTF-8")))
                for c in checked]
    return rows.with_columns(malformed=reasons_text(["malformed", *not_utf8])).drop(REPLACED)
