"""Findings: one row per (round, failed check), built from the check columns in a single pass."""

from __future__ import annotations

import polars as pl

from pipeline.checks import CHECKS, Check

#: Where a finding sits: carried from the round log into every finding.
#: `source` says which log `source_row` counts in: "rounds" or "bets"; `source_file` which file of it.
PLACE_COLUMNS = ("source_file", "source_row", "source", "round_id", "table_id", "shoe_id", "hand_no", "dealt_at", "bet_id")
FINDING_COLUMNS = (*PLACE_COLUMNS, "check", "expected", "recorded", "detail")
FINDINGS_SCHEMA = {c: pl.UInt32 if c == "source_row" else pl.String for c in FINDING_COLUMNS}


def round_findings(replayed: pl.LazyFrame, checks: tuple[Check, ...] = CHECKS) -> pl.LazyFrame:
    """Every failed check (of `checks`) of every replayed round, in log order and check order.

    One filtered frame per check, concatenated: the texts are built for flagged rounds only, and the
    replay plan underneath is shared (polars caches a common subplan).
    """
    placed = replayed.with_columns(source=pl.lit("rounds"), bet_id=pl.lit(None, pl.String))
    per_check = [
        placed.filter(check.flag).select(
            *PLACE_COLUMNS,
            check=pl.lit(check.code),
            expected=check.expected,
            recorded=check.recorded,
            detail=check.detail,
            order=pl.lit(order, pl.UInt8),
        )
        for order, check in enumerate(CHECKS) if check in checks
    ]
    return pl.concat(per_check).sort("source_file", "source_row", "order").drop("order").cast(FINDINGS_SCHEMA)
