"""The staging folder of a run on polars: the pieces of the log it staged, the queries that read them
back, the copies of an id found among them by key, and rows put in log order. Nothing here is
published as it is: `run.publish` moves the finished outputs into place."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from .. import tuning
from ..inputs import ingest
from . import parts, stored
from ..checks.findings import repeated_keys


#: Each row's `run.staged_columns`, in pieces, read by the checks across rounds; never published.
STAGED = "rounds.staged"


@dataclass(frozen=True)
class Queries:
    """Runs each output as its own streaming query, one after another.

    One query per output keeps memory bounded: queries that shared a scan in one plan made polars cache
    the whole scan for the branches to share. Every query after the first reads the staged rounds,
    which are cheap to read again. A read failure is reported on the log it came from.
    """

    staging: Path

    def sink(self, name: str, frame: pl.LazyFrame, label: Path, **parquet) -> None:
        ingest.collect(label, [frame.sink_parquet(self.staging / name, lazy=True, **parquet)])

    def frame(self, frame: pl.LazyFrame, label: Path) -> pl.DataFrame:
        return ingest.collect(label, [frame])[0]


#: The staged rounds and bets are read back on this machine and never published: written fast (lz4, and
#: no statistics, which only random hashes and a few picks by row would use; docs/performance.md).
STAGING_PARQUET = {"compression": "lz4", "statistics": False}


def _by_file_and_row(rows: pl.LazyFrame) -> pl.LazyFrame:
    return rows.sort("source_file", "source_row")


def sink_in_log_order(rows: pl.LazyFrame, log: ingest.Log, name: str, run: Queries,
                      in_order: Callable[[pl.LazyFrame], pl.LazyFrame] = _by_file_and_row,
                      first_by: str | None = None) -> None:
    """The rows of `log` in `rows` (Parquet scanned, in no order) sunk to `name` sorted `in_order` (by
    file and row), and first by `first_by` when given (a column numbering groups of rows from 0, then
    dropped). Up to `Tuning.filing_rows` rows are sorted at once. More are filed by group and by the
    piece of the log they are in (`ingest.spans` of its files by name; see `pipeline.engines.parts`), that many
    rows at a time, then each group's piece sorted alone and the sorted pieces joined end to end. Where the
    rows are as many as the log's (every round found), a piece is `filing_rows` rows of the log: sorted
    a piece of the log at a time, they were held a piece of the log at a time.

    Sorted at once, many findings were held whole. Picked out of every row once per piece, the pieces
    cost as the square of the log."""
    total = rows.select(pl.len()).collect().item()
    sizes = tuning.current()
    piece_rows, filing_rows, row_group = sizes.piece_rows, sizes.filing_rows, sizes.filed_row_group
    if total <= filing_rows:
        ordered = in_order(rows)
        run.sink(name, ordered if first_by is None else ordered.sort(first_by, maintain_order=True).drop(first_by),
                 log.path, row_group_size=row_group)
        return
    sizes = sorted(zip(map(str, log.files), log.rows_per_file))
    # Each piece is sorted alone: a log's pieces when the rows are few beside it, else smaller ones.
    unit = piece_rows if total <= filing_rows * len(list(ingest.spans(sizes, piece_rows))) else filing_rows
    pieces = list(ingest.spans(sizes, unit))
    # A file is cut into spans at multiples of `unit`, so a row's span is its file and row // unit.
    spans = pl.LazyFrame([(file, start // unit, k) for k, piece in enumerate(pieces) for file, start, _ in piece],
                         schema={"source_file": pl.String, "span": pl.UInt32, "piece": pl.UInt32}, orient="row")
    groups = 1 if first_by is None else rows.select(pl.col(first_by).max()).collect().item() + 1
    group = pl.lit(0, pl.UInt32) if first_by is None else pl.col(first_by).cast(pl.UInt32)
    folder = run.staging / f"{name}.pieces"
    for i, start in enumerate(range(0, total, filing_rows)):
        placed = rows.slice(start, filing_rows).with_columns(
            span=((pl.col("source_row") - 1) // unit).cast(pl.UInt32)).join(spans, on=["source_file", "span"])
        filed = placed.with_columns(part=group * len(pieces) + pl.col("piece")).drop("span", "piece")
        ingest.collect(log.path, [parts.write(filed, pl.col("part"), groups * len(pieces), folder, f"{i:06d}")])
    schema = rows.collect_schema()
    filled = parts.filled(folder)
    written = [f"{name}.sorted/{k:06d}.parquet" for k in filled]
    (run.staging / f"{name}.sorted").mkdir()
    for k, piece in zip(filled, written):
        run.sink(piece, in_order(parts.read(folder, k, schema)), log.path)
    joined = pl.concat([stored.scan(run.staging / piece) for piece in written])
    run.sink(name, joined if first_by is None else joined.drop(first_by), log.path, row_group_size=row_group)
    placed = stored.scan(run.staging / name).select(pl.len()).collect().item()
    if placed != total:  # the join to the pieces drops a row no piece of the log holds: a bug, not lost quietly
        raise RuntimeError(f"{name}: {total - placed:,} of {total:,} rows are not in any piece of {log.path}")


def staged_pieces(staging: Path) -> list[list[Path]]:
    """The staged pieces of the log, in log order: its staged files, `Tuning.piece_rows` rows at most
    (a file is never more). A piece of many small files is read in several queries (`Tuning.plans`)
    and staged in as many files; read as one piece again, the checks run a query for it, not one for
    each."""
    files = sorted((staging / STAGED).glob("*.parquet"))
    sizes = [(file, pq.read_metadata(file).num_rows) for file in files]
    return [[file for file, _, _ in piece] for piece in ingest.spans(sizes, tuning.current().piece_rows)]


def copies_by_key(pieces: list[pl.LazyFrame], key: str, run: Queries, label: Path, name: str,
                  repeated: pl.Series | None = None) -> list[pl.LazyFrame]:
    """The rows of `pieces` whose `key` (a 64-bit hash of an id, `ids.id_key`) is on more than one
    row, a part of the keys at a time (each copy of an id in the same part, and rarely a hash collision,
    which an exact count on the part then clears): DUPLICATE_ROUND's and DUPLICATE_BET's candidates.

    The keys `repeated`, where the read found them (`findings.HeldKeys`); else the keys are filed by
    part (of their value) in one pass and counted a part at a time. The copies are fetched a piece at
    a time: is_in with the few keys reaches the scan; a semi-join held the whole piece. They grow with
    the log, so they are written, not held through the checks that follow, by part of their key, and
    each part is scanned, not held as `parts.each` holds it."""
    collect, count = partial(run.frame, label=label), len(pieces)
    if repeated is None:
        keys = parts.each([piece.select(key) for piece in pieces], pl.col(key) % count, count, collect,
                          run.staging / f"{name}.keys")
        repeated = pl.concat([repeated_keys(of_part[key]) for of_part in keys])
    wanted = pl.col(key).is_in(repeated.implode())
    for i, piece in enumerate(pieces):
        collect(parts.write(piece.filter(wanted), pl.col(key) % count, count, run.staging / name, f"{i:06d}"))
    schema = pieces[0].collect_schema()
    return [parts.read(run.staging / name, k, schema) for k in parts.filled(run.staging / name)]
