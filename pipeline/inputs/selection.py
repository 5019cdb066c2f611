"""Narrowing for an investigation (`--table`, `--shoe`, `--since`, `--until`, `explain`'s round):
which rows a selection keeps, a cheaper test on the rows as stored that every kept row passes, and
what a Parquet file's statistics and a file's Hive folders tell of it before any row is read."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from .ids import outside_ascii, same_id
from .timestamps import shifted, timestamp


#: The instants a timestamp of nanoseconds holds (64 bits from 1970), whole seconds within them.
NANOSECONDS = (datetime(1677, 9, 22, tzinfo=UTC), datetime(2262, 4, 11, tzinfo=UTC))


@dataclass(frozen=True)
class Selection:
    """Narrowing for an investigation, pushed down into the scan: rows outside it are not read.
    `rounds` is `explain`'s: the rows of one round_id."""

    tables: tuple[str, ...] = ()
    shoes: tuple[str, ...] = ()
    since: datetime | None = None
    until: datetime | None = None
    rounds: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.tables or self.shoes or self.since or self.until or self.rounds)

    def __str__(self) -> str:
        """The narrowing as the command line states it, for messages."""
        return " ".join([*(f"--table {t}" for t in self.tables), *(f"--shoe {s}" for s in self.shoes),
                         *(f"--{name} {moment.isoformat()}" for name, moment in (("since", self.since),
                                                                                 ("until", self.until)) if moment),
                         *(f"round_id {r}" for r in self.rounds)])

    @property
    def _by_id(self) -> dict[str, tuple[str, ...]]:
        """The id columns this selection narrows (table_id, shoe_id, round_id), and the values it wants."""
        return {column: wanted for column, wanted in (("table_id", self.tables), ("shoe_id", self.shoes),
                                                      ("round_id", self.rounds)) if wanted}

    @property
    def _round_ids(self) -> list[str]:
        """The round_ids wanted, as ids are compared (`ids.same_id`)."""
        return pl.Series("id", self.rounds, pl.String).to_frame().select(same_id(pl.col("id")))["id"].to_list()

    @property
    def _by_folder(self) -> dict[str, tuple[str, ...]]:
        """The columns a Hive folder can fix that this selection narrows, and the values it wants."""
        return {column: wanted for column, wanted in self._by_id.items() if column != "round_id"}

    @property
    def _day_before(self) -> datetime:
        """A day before `since`: a dealt_at as stored is tested a day wide of the window (`stored`)."""
        return shifted(self.since, -timedelta(days=1))

    @property
    def _day_after(self) -> datetime:
        """A day after `until` (see `_day_before`)."""
        return shifted(self.until, timedelta(days=1))

    def rules_out(self, fixed: dict[str, str]) -> bool:
        """Whether no row of a file whose table_id or shoe_id is `fixed` (by its Hive folders) is kept."""
        return any(column in fixed and fixed[column] not in wanted for column, wanted in self._by_folder.items())

    def stored(self, columns: dict[str, str], timed: tuple[str, pl.Datetime] | None = None) -> pl.Expr:
        """A test on a file's rows as stored (text not yet trimmed, nor translated by a mapping) that
        every row the selection keeps passes; `columns` names the columns that are such text, and what
        the file calls each (a mapping renames them); `timed`, a dealt_at stored as a Parquet timestamp
        (what the file calls it, and its type). Put before the trim, it spares the trim of the
        rows it drops; and in a Parquet file, the reader decodes the other columns only where it holds,
        and passes over the row groups whose statistics rule it out (under `since`, the nights before
        the window).

        A kept table_id, shoe_id or round_id, trimmed, equals a wanted value, so it contains one. A
        time the contract reads (`timestamp`) starts with its date, year first, and sorts as text by
        that date whatever the rest: an offset moves it less than a day, and a month or day written
        with one digit sorts at or above its two-digit form; text before the first digit (a space, a
        sign) sorts below "0". Under `until`, only a text that starts with a padded date (YYYY-MM-DD)
        is tested, since "2026-9-30" sorts after "2026-10-01": a row is dropped when that date is
        over a day after the window. A timestamp is tested on both sides, a day wide of the window
        (the text the audit reads of it keeps microseconds), so the reader passes over the row groups
        outside it.
        """
        keep = pl.lit(True)
        for column, wanted in self._by_id.items():
            if column in columns:
                stored = pl.col(columns[column])
                if column == "round_id":
                    wanted = tuple({*wanted, *self._round_ids})
                holds = pl.any_horizontal(stored.str.contains(value, literal=True) for value in wanted)
                # A round_id is one id with its copies that differ invisibly (`ids.same_id`), which hold
                # a character outside ASCII.
                keep &= (holds | outside_ascii(stored)) if column == "round_id" else holds
        if self.since and "dealt_at" in columns:
            stored = pl.col(columns["dealt_at"])
            keep &= (stored >= self._day_before.date().isoformat()) | (stored < "0")
        if self.until and "dealt_at" in columns:
            date = pl.col(columns["dealt_at"]).str.slice(0, 10)
            keep &= ~((date > self._day_after.date().isoformat()) & date.str.contains(PADDED_DATE))
        if timed is not None:
            name, dtype = timed

            def as_stored(moment: datetime) -> pl.Expr:
                """`moment` as the column holds one: in its zone, or in UTC without one (as it is read),
                within what its unit holds (nanoseconds span 1677 to 2262): no value lies beyond."""
                if dtype.time_unit == "ns":
                    moment = min(max(moment, NANOSECONDS[0]), NANOSECONDS[1])
                utc = pl.lit(moment.astimezone(UTC)).dt.cast_time_unit(dtype.time_unit)
                return utc.dt.convert_time_zone(dtype.time_zone) if dtype.time_zone else utc.dt.replace_time_zone(None)
            if self.since:
                keep &= pl.col(name) >= as_stored(self._day_before)
            if self.until:
                keep &= pl.col(name) <= as_stored(self._day_after)
        return keep

    def rules_out_by(self, footer: pq.FileMetaData, columns: dict[str, str], timed: str | None = None) -> bool:
        """Whether a Parquet file's statistics show that it holds no row the selection keeps: in every
        row group, the least and greatest value of some column the selection tests (as `stored` names
        them: `columns` of text, `timed` a dealt_at stored as a timestamp) leave no room for one it
        keeps: a table_id, shoe_id or round_id that trims to a wanted one (`_may_trim_to`), or a
        dealt_at that passes `stored`'s test of the window (`_may_fall_within`, `_may_be_within`).
        They come with the footer read as the file is opened, and spare a query of the file
        (`ingest._tested`)."""
        # Not a round_id's: a copy that differs invisibly may sort anywhere among a row group's ids.
        tests = {columns[c]: partial(_may_trim_to, wanted=wanted) for c, wanted in self._by_id.items()
                 if c in columns and c != "round_id"}
        if (self.since or self.until) and "dealt_at" in columns:
            tests[columns["dealt_at"]] = self._may_fall_within
        if (self.since or self.until) and timed is not None:
            tests[timed] = self._may_be_within
        leaves = footer.schema.names if tests else []
        # A leaf of a nested column may have the name: only a column whose path is the name is tested.
        at = {i: tests[name] for i, name in enumerate(leaves) if name in tests and footer.schema.column(i).path == name}
        groups = (footer.row_group(g) for g in range(footer.num_row_groups))
        return bool(at) and all(any(not _may_hold(group.column(i).statistics, test) for i, test in at.items())
                                for group in groups)

    def _may_fall_within(self, least: str, greatest: str) -> bool:
        """Whether a row group of dealt_at texts from `least` to `greatest` may hold one that passes
        `stored`'s test of the window: one at or after the day before `since` (or below "0"), and, under
        `until`, one not starting with a date written in full after the day after it. All the texts
        from `least` to `greatest` start with what those two share, so a date written in full that
        they both start with is every text's."""
        if self.since and not (greatest >= self._day_before.date().isoformat() or least < "0"):
            return False
        date = least[:10]
        return not (self.until and greatest[:10] == date and date > self._day_after.date().isoformat()
                    and re.match(PADDED_DATE, date))

    def _may_be_within(self, least: int, greatest: int) -> bool:
        """Whether a row group of dealt_at timestamps from `least` to `greatest` (`_least_and_greatest`)
        may hold one that passes `stored`'s test of the window: none more than a day outside it."""
        def micros(moment: datetime) -> int:
            return (moment.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
        return not ((self.since and greatest < micros(self._day_before))
                    or (self.until and least > micros(self._day_after)))

    def decided_by(self, folders: tuple[str, ...]) -> bool:
        """Whether a file whose Hive `folders` fill these columns is kept or ruled out whole by them
        (`rules_out`): the selection tests only table_id and shoe_id, and the folders give each."""
        return not (self.rounds or self.since or self.until) and all(column in folders for column in self._by_folder)

    def predicate(self) -> pl.Expr:
        keep = pl.lit(True)
        if self.tables:
            keep &= pl.col("table_id").is_in(list(self.tables))
        if self.shoes:
            keep &= pl.col("shoe_id").is_in(list(self.shoes))
        if self.rounds:
            keep &= same_id(pl.col("round_id")).is_in(pl.Series(self._round_ids).implode())
        if self.since:
            keep &= timestamp(pl.col("dealt_at")) >= self.since
        if self.until:
            keep &= timestamp(pl.col("dealt_at")) <= self.until
        return keep


def _may_hold(statistics: pq.Statistics | None, test: Callable[[Any, Any], bool]) -> bool:
    """`test` of a row group's least and greatest value in a column (`_least_and_greatest`); without
    them, the row group may hold anything."""
    found = _least_and_greatest(statistics)
    return found is None or test(*found)


#: Microseconds per tick of a Parquet timestamp, as a fraction.
_MICROS = {"milliseconds": (1000, 1), "microseconds": (1, 1), "nanoseconds": (1, 1000)}


def _least_and_greatest(statistics: pq.Statistics | None) -> tuple[str, str] | tuple[int, int] | None:
    """A row group's least and greatest value in a column, from its statistics: text as text; a
    timestamp as microseconds from 1970 (in UTC, or as written when it has no zone, as the audit reads
    it), widened to whole microseconds; None without them, or for any other column."""
    if statistics is None or not statistics.has_min_max:
        return None
    if isinstance(statistics.min, str):
        return statistics.min, statistics.max
    kind = json.loads(statistics.logical_type.to_json()) if statistics.logical_type is not None else {}
    least, greatest = statistics.min_raw, statistics.max_raw
    if kind.get("Type") != "Timestamp" or kind.get("timeUnit") not in _MICROS or not (
            isinstance(least, int) and isinstance(greatest, int)):
        return None
    times, per = _MICROS[kind["timeUnit"]]
    return least * times // per, -(-greatest * times // per)


def _may_trim_to(least: str, greatest: str, wanted: tuple[str, ...]) -> bool:
    """Whether texts from `least` to `greatest` may hold one that trims to a `wanted` value: such a
    text is a wanted value with white space around it, so either it starts with the wanted value and
    sorts from it to below it and U+3001 (U+3000 is the highest white space), or it starts with white
    space, ASCII (below "!") or not (from U+0085)."""
    return least < "!" or greatest >= "\u0085" or any(least < value + "\u3001" and greatest >= value
                                                      for value in wanted)


#: A date written in full, year first: as text, such dates sort as the dates do.
PADDED_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
