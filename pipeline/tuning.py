"""Tuning: the sizes that bound what a run holds in memory and set its pace, in one typed object.

A run's sizes are its `run.Options.tuning`, in force while it runs (`using`): the modules that cut
work into pieces ask `current()`. The defaults are the measured ones (docs/performance.md); a test
that needs many pieces of a small log gives smaller sizes, not patched module globals.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Tuning:
    #: Rows per staging query: bounds memory; each piece has a fixed cost of a few queries.
    piece_rows: int = 1_000_000
    #: Rows the one read holds in memory at once, parsed and replayed (`run._read_once`).
    read_rows: int = 200_000
    #: Bets the settlement reads at once beside their rounds (`bets_beside._settle_in_log_order`), the next
    #: piece read while one is settled: two pieces are held.
    bet_rows: int = 100_000
    #: Findings sorted at once (`staging.sink_in_log_order`); more are filed by piece this many at a time
    #: in one query: a sort holds all it sorts, and polars' partitioned sink held all it was given.
    filing_rows: int = 100_000
    #: Rows a row group holds in the files put in log order (findings, bets quarantined) and in
    #: findings.parquet: the one write of every finding reads them back a few row groups at a time.
    filed_row_group: int = 16_384
    #: The most plans one piece of a log reads (`ingest.Log.pieces`): polars' streaming engine takes a
    #: union of plans in a time that grows as their square.
    plans: int = 32
    #: The most files one scan reads together (`ingest.Log.pieces`, `formats.csv_rows`): polars holds
    #: buffers for every file of a scan, so a log of many small files grew with its files, not its rows.
    scan_files: int = 250
    #: Parts written a file each (`parts.write`); past them, a file per bucket of parts.
    fan_out: int = 256
    #: Rows a row group of a bucket file holds, so that one part's rows are read without the others'.
    split_row_group: int = 8192
    #: Groups (shoes, mostly) whose fairness tests are computed at once (`fairness.statistics_by_chunk`).
    chunk_groups: int = 10_000
    #: Fairness cells (a shoe's rounds under one profile, mostly) a level's groups are counted from at
    #: once (`run.fairness_tests`): a log of more is tested a part of its groups at a time.
    cells_per_part: int = 100_000
    #: Rows Great Expectations checks at once (`contract`): it keeps every expectation's work on every row.
    batch_rows: int = 500_000
    #: Pieces of round facts (`read_rows` each) held beside a piece of bets (`bets_beside._settle_in_log_order`):
    #: a bet log further from its rounds' order is settled by part instead.
    window_pieces: int = 4
    #: Rows per Arrow batch the Spark engine hands to a task.
    spark_batch_rows: int = 10_000

    def __post_init__(self) -> None:
        for size in fields(self):
            value = getattr(self, size.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Tuning.{size.name} must be a whole number of at least 1, not {value!r}")


_CURRENT: ContextVar[Tuning] = ContextVar("tuning", default=Tuning())


def current() -> Tuning:
    """The sizes in force: those of the run under way (`using`), else the defaults."""
    return _CURRENT.get()


@contextmanager
def using(tuning: Tuning) -> Iterator[Tuning]:
    """`tuning` in force for what runs inside (and in threads started with its context copied)."""
    token = _CURRENT.set(tuning)
    try:
        yield tuning
    finally:
        _CURRENT.reset(token)
