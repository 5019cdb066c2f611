"""Findings: one row per (round, failed check), built from the check columns in a single pass."""

from __future__ import annotations

import numpy as np
import polars as pl

from .round_checks import CHECKS, Check
from ..inputs.timestamps import timestamp

#: Where a finding sits: carried from the round log into every finding.
#: `source` says which log `source_row` counts in: "rounds" or "bets"; `source_file` which file of it.
PLACE_COLUMNS = ("source_file", "source_row", "source", "round_id", "table_id", "shoe_id", "hand_no", "dealt_at", "bet_id")
FINDING_COLUMNS = (*PLACE_COLUMNS, "check", "expected", "recorded", "detail")
FINDINGS_SCHEMA = {c: pl.UInt32 if c == "source_row" else pl.String for c in FINDING_COLUMNS}


def round_findings(replayed: pl.LazyFrame, checks: tuple[Check, ...] = CHECKS) -> pl.LazyFrame:
    """Every failed check (of `round_checks`) of every replayed round, by check: the audit puts them in log
    order (`in_log_order`) where it merges them, a piece of the log at a time. Sorted here, a piece's
    findings were held whole, for no time saved.

    The flags are computed in one streaming pass and only rounds with a flag are kept; the texts are
    then built on that small frame, once per check. (One filtered copy of the whole frame per check
    would make polars cache the whole frame for the branches to share.)
    """
    chosen = [(order, check) for order, check in enumerate(CHECKS) if check in checks]
    flags = {f"flag_{order}": check.flag for order, check in chosen}
    flagged = (replayed.with_columns(source=pl.lit("rounds"), bet_id=pl.lit(None, pl.String), **flags)
               .filter(pl.any_horizontal(*flags)))
    per_check = [
        flagged.filter(pl.col(f"flag_{order}")).select(
            *PLACE_COLUMNS,
            check=pl.lit(check.code),
            expected=check.expected,
            recorded=check.recorded,
            detail=check.detail,
        )
        for order, check in chosen
    ]
    return pl.concat(per_check).cast(FINDINGS_SCHEMA)


def published(found: pl.LazyFrame, run_id: str) -> pl.LazyFrame:
    """Findings as findings.parquet holds them: the run's id first, then each finding's place typed
    (`hand_no` a whole number, `dealt_at` a UTC time; null where the log's text is neither, which the
    finding's own `recorded` and `detail` then quote) and its texts. Inside a run they stay text."""
    return found.select(
        pl.lit(run_id).alias("run_id"), *PLACE_COLUMNS, "check", "expected", "recorded", "detail"
    ).with_columns(hand_no=pl.col("hand_no").str.strip_chars().cast(pl.Int64, strict=False),
                   dealt_at=timestamp(pl.col("dealt_at")))


def in_log_order(found: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame | pl.LazyFrame:
    """Round findings by file and row, and within a round in the order of `CHECKS`."""
    order = {check.code: i for i, check in enumerate(CHECKS)}
    return found.sort("source_file", "source_row", pl.col("check").replace_strict(order, return_dtype=pl.UInt8))


#: A finding placed on a row of the round log (not on a bet, nor on a whole table): what the summary
#: counts as a round flagged, and what the report and the evidence list.
ON_A_ROUND_ROW = (pl.col("source") == "rounds") & pl.col("source_row").is_not_null()


def row_key() -> pl.Expr:
    """A finding's row of its log (source_file, source_row) as one integer: the file's category code
    above its row (a UInt32 index), smaller to count distinct than pairs that hold each file's name.
    Codes are not the same from one query to the next: compare keys within one query."""
    return (pl.col("source_file").cast(pl.Categorical).to_physical().cast(pl.UInt64) * 2**32
            + pl.col("source_row").cast(pl.UInt64))


class HeldKeys:
    """The id keys (64-bit hashes, `ids.id_key`) of every row of a log held in one array, 8 bytes a row,
    filled piece by piece as the log is read; the keys on more than one row are then found by one sort
    in place (`repeated`): DUPLICATE_ROUND's candidates (and, rarely, a hash two ids share, which the
    exact count of their rows then clears), without every key written out by part and read back."""

    def __init__(self, rows: int) -> None:
        self._keys = np.empty(rows, np.uint64)  # `rows`: as many as the log may hold; grown if more come
        self._held = 0

    def add(self, keys: pl.Series) -> None:
        """The keys of some rows (no null), after those added before."""
        end = self._held + keys.len()
        if end > self._keys.size:
            self._keys = np.resize(self._keys, max(end, 2 * self._keys.size))
        self._keys[self._held:end] = keys.to_numpy()
        self._held = end

    def repeated(self, name: str) -> pl.Series:
        """The keys on more than one row, named `name`, found once: the array is let go."""
        held, self._keys = self._keys[:self._held], np.empty(0, np.uint64)
        held.sort()
        return repeated_keys(pl.Series(name, held, pl.UInt64), in_order=True)


def repeated_keys(keys: pl.Series, in_order: bool = False) -> pl.Series:
    """The id keys (64-bit hashes, no null) on more than one of these rows: every duplicated id (and,
    rarely, a hash collision, which the exact count of the findings on those rows then clears). Found
    by sorting them (numpy), unless they are `in_order` already: a hash group-by of a piece's keys took
    several times as long."""
    ordered = keys.to_numpy() if in_order else np.sort(keys.to_numpy())
    again = ordered[1:][ordered[1:] == ordered[:-1]]
    return pl.Series(keys.name, np.unique(again), keys.dtype)
