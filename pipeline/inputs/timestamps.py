"""dealt_at as the audit reads it: an ISO 8601 date-time, as UTC."""

from __future__ import annotations

import polars as pl


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
    return pl.coalesce(zulu, *(_as_utc(rest, form) for form in _GENERAL))


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
            .with_columns(pl.coalesce(name, *(_as_utc(rest, form) for form in (_ZULU, *_GENERAL))).alias(name)))
