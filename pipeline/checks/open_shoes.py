"""Shoes dealt across the cut between two nights' logs: each table's last shoe, carried into the next audit.

A gaming day's log is cut at a time, not at the end of a shoe: the shoe a table was dealing goes on in
the next night's log. Each audit keeps the rows of every table's last shoe as it reads the log
(`OpenShoes`), and writes them beside its findings. `audit --after PREVIOUS_OUT` reads them back
(`carried`) and puts them before the log for the checks across the rounds of a shoe alone
(CARD_COUNT, SHOE_SEQUENCE, TIMESTAMP), so that a shoe dealt across the cut is checked as one shoe;
their findings on the carried rows were the previous audit's, and are left out (`CARRIED`).
"""

from __future__ import annotations

import polars as pl

#: What a carried row's source_file says while the checks run: its findings are not this audit's.
CARRIED = "(carried from the previous audit)"
#: A carried row's own file, kept for the next night's carry.
CARRIED_FILE = "carried_file"
#: The shoes still open at the end of a run, listed in summary.json (all in open_shoes.parquet).
NAMED = 100


class OpenShoes:
    """The replayed rows of each table's last shoe so far, as the pieces of the log come in log order
    (a log without table_id is one table). A table that starts another shoe lets go of the one before."""

    def __init__(self) -> None:
        self.rows: pl.DataFrame | None = None

    def add(self, piece: pl.DataFrame) -> None:
        """The next piece of the log, prepared (`engines.run.prepared`), or the carried rows first."""
        table = (pl.col("table_id").fill_null("") if "table_id" in piece.columns else pl.lit("")).alias("_table")
        rows = piece.lazy().filter(pl.col("reject").is_null() & pl.col("shoe_id").is_not_null()).with_columns(table)
        # The piece's rows of each table's last shoe in it, found on two columns: a copy of the piece held
        # its every column.
        last = rows.select("_table", "shoe_id").group_by("_table").agg(pl.col("shoe_id").last())
        kept = rows.join(last, on=["_table", "shoe_id"], how="semi").collect()
        if self.rows is not None:
            kept = pl.concat([self.rows.with_columns(table), kept], how="diagonal_relaxed")
        last = kept.group_by("_table").agg(pl.col("shoe_id").last())
        self.rows = kept.join(last, on=["_table", "shoe_id"], how="semi").drop("_table")

    def table(self) -> pl.DataFrame | None:
        """The rows to carry into the next audit, each under its own file again; None when none is open."""
        if self.rows is None or not self.rows.height:
            return None
        rows = self.rows
        if CARRIED_FILE in rows.columns:
            rows = rows.with_columns(source_file=pl.coalesce(CARRIED_FILE, "source_file")).drop(CARRIED_FILE)
        return rows


def listed(rows: pl.DataFrame | None) -> dict:
    """summary.json's `open_shoes`: how many, and the first `NAMED` with their table, last hand and time."""
    if rows is None:
        return {"count": 0, "shoes": []}
    table = pl.col("table_id") if "table_id" in rows.columns else pl.lit(None, pl.String)
    shoes = rows.group_by("shoe_id", maintain_order=True).agg(
        table.last().alias("table_id"), pl.len().alias("hands"), pl.col("hand_no").last().alias("last_hand"),
        pl.col("dealt_at").last().alias("last_dealt_at"))
    return {"count": shoes.height, "shoes": shoes.head(NAMED).to_dicts()}


def carried(rows: pl.DataFrame, like: pl.Schema) -> pl.DataFrame:
    """The previous audit's open shoes as rows of this one (`like`, a prepared piece's schema, `shaped_as`),
    their own file kept apart (`CARRIED_FILE`) and their source_file `CARRIED`."""
    rows = rows.with_columns(pl.col("source_file").alias(CARRIED_FILE), source_file=pl.lit(CARRIED))
    return shaped_as(rows, like).with_columns(rows[CARRIED_FILE])


def shaped_as(rows: pl.DataFrame, schema: pl.Schema) -> pl.DataFrame:
    """`rows` with the columns of `schema` alone, cast to its types, null where they lack one: carried
    rows of another night's log read beside this one's."""
    return rows.select(*(pl.col(name).cast(dtype) if name in rows.columns else pl.lit(None, dtype).alias(name)
                         for name, dtype in schema.items()))
