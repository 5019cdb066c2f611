"""dealt_at as the audit reads it: an ISO 8601 date-time, as UTC."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from ..errors import InputError


_ZULU = "%Y-%m-%dT%H:%M:%SZ"  # whole seconds with a Z: what logs mostly hold, and polars' fast path
_GENERAL = ("%Y-%m-%dT%H:%M:%S%.f%#z", "%Y-%m-%dT%H:%M:%S%.f")  # fractions, offsets, or no zone (UTC)


def _as_utc(iso: pl.Expr, form: str) -> pl.Expr:
    # Not cached: the cache pays where values repeat, and a log's times are nearly all distinct.
    return iso.str.to_datetime(form, time_zone="UTC", strict=False, cache=False)


def _iso(text: pl.Expr) -> pl.Expr:
    return text.str.replace(" ", "T", literal=True, n=1)


def timestamp(text: pl.Expr) -> pl.Expr:
    """An ISO 8601 date-time as UTC: with Z or an offset, or without (taken as UTC); null when unreadable.

    Whole seconds with a Z take polars' fast fixed-format path; only the rows it cannot read go through
    the general formats. For a filter; `with_timestamp` adds a column faster.
    """
    zulu = _as_utc(_iso(text), _ZULU)
    rest = pl.when(zulu.is_null()).then(_iso(text))
    return _held(pl.coalesce(zulu, *(_as_utc(rest, form) for form in _GENERAL)))


def _held(instant: pl.Expr) -> pl.Expr:
    """`instant`, null before the year 1 (year 0 parses; no datetime of Python, nor of a report, holds
    it): unreadable, as a year past 9999 already is."""
    return pl.when(instant >= EARLIEST).then(instant)


def utc_column(text: str) -> str:
    """Where a time column's value as UTC is kept beside its text (`with_timestamp`): dealt_at in dealt_utc."""
    return text.removesuffix("_at") + "_utc"


def with_timestamp(frame: pl.LazyFrame, text: str, name: str) -> pl.LazyFrame:
    """`timestamp(pl.col(text))` as the column `name`, computed in steps: within one expression polars
    parses again at every use of a subexpression. A text without a space,
    which `_iso` leaves as it is, is tried first without that copy; the rest are tried after it."""
    # Copied with a T only where the fast path read nothing: the rows it read need no copy.
    rest = _iso(pl.when(pl.col(name).is_null()).then(pl.col(text)))
    spaceless = pl.when(~pl.col(text).str.contains(" ", literal=True)).then(pl.col(text))
    return (frame.with_columns(_as_utc(spaceless, _ZULU).alias(name))
            .with_columns(_held(pl.coalesce(name, *(_as_utc(rest, form) for form in (_ZULU, *_GENERAL)))).alias(name)))


#: The first and last instants Python's datetime holds: a bound at or past them is open-ended.
EARLIEST, LATEST = datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC)


def moment(text: str, named: str) -> datetime:
    """A bound or present given as text (an ISO 8601 date or date-time, with Z or an offset; without
    one, UTC), or as a datetime (naive: UTC), with its offset as given; an InputError naming `named`
    for anything else. An instant beyond what a datetime holds in UTC (9999-12-31T23:59:59-05:00) is
    taken as the last or first one: a scheduler's open-ended bound."""
    if isinstance(text, datetime):
        found = text
    else:
        try:
            found = datetime.fromisoformat(str(text).strip())
        except ValueError:
            raise InputError(f"{named} {text!r}: expected an ISO 8601 date or date-time") from None
    return _held_in_utc(found if found.tzinfo else found.replace(tzinfo=UTC))


def shifted(instant: datetime, by: timedelta) -> datetime:
    """`instant` moved `by`, held within EARLIEST and LATEST instead of overflowing."""
    try:
        return _held_in_utc(instant + by)
    except OverflowError:
        return LATEST if by > timedelta(0) else EARLIEST


def _held_in_utc(instant: datetime) -> datetime:
    """`instant`, or EARLIEST or LATEST where it has no UTC time within the years 1 to 9999."""
    try:
        instant.astimezone(UTC)
    except OverflowError:
        return LATEST if instant.year > 1 else EARLIEST
    return instant
