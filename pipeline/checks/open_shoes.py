"""Shoes dealt across the cut between two nights' logs: each table's last shoe, carried into the next audit.

A gaming day's log is cut at a time, not at the end of a shoe: the shoe a table was dealing goes on in
the next night's log. Each audit keeps the rows of every table's last shoe as it reads the log
(`OpenShoes`), and writes them beside its findings. `audit --after PREVIOUS_OUT` reads them back
(`carried`) and puts them before the log for the checks across the rounds of a shoe alone
(CARD_COUNT, SHOE_SEQUENCE, TIMESTAMP), so that a shoe dealt across the cut is checked as one shoe;
their findings on the carried rows were the previous audit's, and are left out (`CARRIED`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import polars as pl

#: What a carried row's source_file says while the checks run: its findings are not this audit's.
CARRIED = "(carried from the previous audit)"
#: A carried row's own file, kept for the next night's carry.
CARRIED_FILE = "carried_file"
#: The shoes still open at the end of a run, listed in summary.json (all in open_shoes.parquet).
NAMED = 100


class OpenShoes:
    """The replayed rows of each table's last shoe so far, as the pieces of the log come in log order
    (a log without table_id is one table). A table that starts another shoe lets go of the one before,
    and the shoe is noted as left (`_left`, a key a shoe): should the table come back to it and end the
    log on it, its rows before it came back are read again (`returned`, `again`)."""

    def __init__(self) -> None:
        self.rows: pl.DataFrame | None = None
        self._left: list[np.ndarray] = []  # the keys (`_shoe_key`) of the shoes a table left for another

    def add(self, piece: pl.DataFrame) -> None:
        """The next piece of the log, prepared (`engines.run.prepared`), or the carried rows first."""
        # A piece is a few runs of one table's shoe: the tables' shoes are found on the runs' first rows,
        # and a row is kept by its run, not matched by its text (a join hashed the ids of every row).
        narrow = _open(piece.lazy().with_row_index("_at")).select("_at", "_table", "shoe_id", _run=_runs()).collect()
        runs = narrow.filter(pl.col("_run") != pl.col("_run").shift(1).fill_null(-1))
        held = None if self.rows is None else _tabled(self.rows.lazy()).collect()
        pairs = runs.select("_table", "shoe_id")
        if held is not None:  # the held shoes first: a table's last shoe is the last of its pairs
            pairs = pl.concat([held.select("_table", "shoe_id").unique(), pairs])
        shoes = pairs.group_by("_table").agg(pl.col("shoe_id").last(), dealt=pl.col("shoe_id").unique())
        last = shoes.select("_table", "shoe_id")
        open_runs = runs.join(last, on=["_table", "shoe_id"], how="semi")["_run"]
        kept = piece[narrow.filter(pl.col("_run").is_in(open_runs.implode()))["_at"]]
        if held is not None:
            before = held.join(last, on=["_table", "shoe_id"], how="semi").drop("_table")
            kept = pl.concat([before, kept], how="diagonal_relaxed")
        self.rows = kept
        left = shoes.explode("dealt").filter(pl.col("dealt") != pl.col("shoe_id"))
        self._left.append(left.select(_shoe_key(pl.col("_table"), pl.col("dealt"))).to_series().to_numpy())

    def returned(self) -> pl.DataFrame:
        """The tables' last shoes that their table left for another before it came back to them (table
        and shoe_id): held from where they came back, their rows before it are to be read again (`again`)."""
        if self.rows is None:
            return pl.DataFrame(schema={"_table": pl.String, "shoe_id": pl.String})
        last = _tabled(self.rows.lazy()).select("_table", "shoe_id").unique().collect()
        left = np.concatenate(self._left) if self._left else np.empty(0, np.uint64)
        return last.filter(pl.Series(np.isin(last.select(_shoe_key(pl.col("_table"), pl.col("shoe_id")))
                                             .to_series().to_numpy(), left)))

    def again(self, returned: pl.DataFrame, pieces: Iterable[pl.DataFrame]) -> None:
        """Every row of the `returned` shoes, from the pieces of the log (prepared, and the carried rows
        first) read again, in place of the rows held of them."""
        found = [_open(piece.lazy()).join(returned.lazy(), on=["_table", "shoe_id"], how="semi").collect()
                 for piece in pieces]
        kept = _tabled(self.rows.lazy()).join(returned.lazy(), on=["_table", "shoe_id"], how="anti")
        self.rows = pl.concat([kept.collect(), *found], how="diagonal_relaxed").sort("log_row").drop("_table")

    def table(self) -> pl.DataFrame | None:
        """The rows to carry into the next audit, each under its own file again; None when none is open."""
        if self.rows is None or not self.rows.height:
            return None
        rows = self.rows
        if CARRIED_FILE in rows.columns:
            rows = rows.with_columns(source_file=pl.coalesce(CARRIED_FILE, "source_file")).drop(CARRIED_FILE)
        return rows


def _tabled(rows: pl.LazyFrame) -> pl.LazyFrame:
    """`rows` with their table as `_table`: "" where it is not recorded (a log without table_id is one table)."""
    table = pl.col("table_id").fill_null("") if "table_id" in rows.collect_schema() else pl.lit("")
    return rows.with_columns(table.alias("_table"))


def _open(rows: pl.LazyFrame) -> pl.LazyFrame:
    """The rows that may be in an open shoe: replayed, with a shoe_id (`_tabled`)."""
    return _tabled(rows.filter(pl.col("reject").is_null() & pl.col("shoe_id").is_not_null()))


def _runs() -> pl.Expr:
    """Each row's run: the rows in a row of one table and shoe, numbered from 0 (`_tabled` rows)."""
    moved = (pl.col("_table") != pl.col("_table").shift(1)) | (pl.col("shoe_id") != pl.col("shoe_id").shift(1))
    return (moved.fill_null(True).cum_sum() - 1).cast(pl.UInt32)


def _shoe_key(table: pl.Expr, shoe: pl.Expr) -> pl.Expr:
    """A shoe of a table as one number: a hash of both (two shoes that share one are both read again)."""
    return pl.struct(table.alias("t"), shoe.alias("s")).hash(seed=0)


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
