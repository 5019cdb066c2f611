"""The audit on Apache Spark, for logs one machine cannot hold: the same polars checks, per Arrow batch.

Spark reads the log (every column as text) and hands each task its rows as Arrow record batches
(`DataFrame.mapInArrow`). Each batch goes through the very functions the polars engine uses
(`audit.prepared`, `findings.round_findings`, `fairness.observed_counts`). What needs more than a batch
is arranged by Spark first:
- DUPLICATE_ROUND: a Spark group-by finds the round_ids on several rows; only those rows come back to
  the driver to be written up;
- integrity (CARD_COUNT, SHOE_SEQUENCE, TIMESTAMP): the log is repartitioned by shoe_id, so that each
  task holds whole shoes, and runs `integrity.integrity_findings` on its partition;
- fairness: each batch's counts per (table, dealer, shoe, profile) cell are added up on the driver,
  which runs the statistics (a few rows per table).

The driver collects what the tasks return (findings, quarantine, counts: small next to the log) and
writes findings.parquet, quarantine.parquet, fairness.parquet and summary.json as the polars engine
does. Not run on Spark (yet): bets and their settlement, the Great Expectations contract, the evidence
and report; `audit` refuses the options it does not run, and summary.json names what was not run.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa

from pipeline import audit as polars_engine
from pipeline import fairness, ingest, integrity, profiles
from pipeline.checks import DUPLICATE, PER_ROUND
from pipeline.errors import InputError
from pipeline.findings import FINDINGS_SCHEMA, in_log_order, round_findings

BATCH_ROWS = 10_000  # rows per Arrow batch handed to a task
SHOE_ROWS = 1_000_000  # rows per partition of whole shoes for the integrity checks
TEXT_COLUMNS = ingest.columns("round_log")
NOT_RUN = "bets and settlement, the contract, the evidence and the report are polars-engine only"

QUARANTINE_SCHEMA = {**{c: pl.String for c in polars_engine.QUARANTINE_COLUMNS}, "source_row": pl.UInt32,
                     "reason": pl.String}
TALLY_SCHEMA = {"source_file": pl.String, "rows": pl.Int64, "rows_quarantined": pl.Int64, "suited_cards": pl.Int64}


def _spark_type(dtype: pl.DataType) -> tuple[pa.DataType, str]:
    """The Arrow type a task hands back for a polars column, and Spark's name for it."""
    if dtype == pl.String:
        return pa.string(), "string"
    if dtype == pl.Boolean:
        return pa.bool_(), "boolean"
    if dtype.is_integer():
        return pa.int64(), "bigint"
    if dtype.is_float():
        return pa.float64(), "double"
    raise TypeError(f"no Spark type for {dtype}")


def _ddl(schema: dict[str, pl.DataType]) -> str:
    """A polars schema as Spark's DDL string (`name type, ...`)."""
    return ", ".join(f"`{name}` {_spark_type(dtype)[1]}" for name, dtype in schema.items())


def _to_batches(frame: pl.DataFrame) -> Iterator[pa.RecordBatch]:
    arrow = pa.schema([(name, _spark_type(dtype)[0]) for name, dtype in frame.schema.items()])
    yield from frame.to_arrow().cast(arrow).to_batches()


def _prepared(batch: pa.RecordBatch | pa.Table, profile: str) -> pl.LazyFrame:
    """Rows from Spark as the polars engine's staged rounds (parsed, replayed, `dealt_utc`, `id_key`)."""
    frame = pl.from_arrow(batch).lazy().with_columns(pl.col("source_row").cast(pl.UInt32))
    return polars_engine.prepared(frame, profile)


def _replayable(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.filter(pl.col("reject").is_null())


def _findings_in(batches, profile: str):
    """mapInArrow task: the per-round findings of each batch."""
    for batch in batches:
        yield from _to_batches(round_findings(_replayable(_prepared(batch, profile)), PER_ROUND).collect())


def _quarantine_in(batches, profile: str):
    """mapInArrow task: the rows of each batch that cannot be replayed, with the reason."""
    for batch in batches:
        rejected = _prepared(batch, profile).filter(pl.col("reject").is_not_null())
        yield from _to_batches(rejected.select(*polars_engine.QUARANTINE_COLUMNS, reason="reject").collect())


def _tallies_in(batches, profile: str):
    """mapInArrow task: per file, the rows of each batch, those quarantined and the suited cards."""
    for batch in batches:
        yield from _to_batches(polars_engine.tallies(_prepared(batch, profile)).collect())


def _cells_in(batches, profile: str, levels: list[str]):
    """mapInArrow task: each batch's fairness counts per cell (they add up over batches)."""
    for batch in batches:
        yield from _to_batches(fairness.observed_counts(_replayable(_prepared(batch, profile)), levels).collect())


def _integrity_in(batches, profile: str, decks: dict[str, int], columns: frozenset[str], started: datetime):
    """mapInArrow task on a partition of whole shoes: its integrity findings (with their `kind`)."""
    table = pa.Table.from_batches(list(batches))
    if table.num_rows == 0:
        return
    rounds = _replayable(_prepared(table, profile))
    by_profile = pl.LazyFrame({"profile": list(decks), "decks": list(decks.values())},
                              schema={"profile": pl.String, "decks": pl.Int64})
    yield from _to_batches(integrity.integrity_findings([rounds], by_profile, columns, started,
                                                        lambda frame: frame.collect()))


def session(master: str):
    """A Spark session; under spark-submit (which starts the driver's gateway) its --master wins."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this environment's packages
    builder = SparkSession.builder.appName("baccarat-audit")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        builder = builder.master(master)
    spark = (builder
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(BATCH_ROWS)).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _read(spark, files: tuple[Path, ...]):
    """The log as Spark sees it: contract columns as trimmed text (null when empty), `source_file`,
    `source_row` and `log_row`, which orders the rows as the polars engine reads them (file, then row)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    frames = []
    for index, path in enumerate(files):
        raw = (spark.read.parquet(str(path)) if ingest.format_of(path) == "parquet"
               else spark.read.option("header", True).option("mode", "PERMISSIVE").csv(str(path)))
        clean = {c: F.when(F.trim(F.col(f"`{c}`").cast("string")) != "", F.trim(F.col(f"`{c}`").cast("string")))
                 if c in raw.columns else F.lit(None).cast("string") for c in TEXT_COLUMNS}
        row = F.row_number().over(Window.orderBy("_order")).cast("long")
        frames.append(raw.withColumn("_order", F.monotonically_increasing_id()).select(
            F.lit(str(path)).alias("source_file"), row.alias("source_row"), (F.lit(index << 32) + row).alias("log_row"),
            F.lit(None).cast("string").alias("malformed"), *(expr.alias(c) for c, expr in clean.items())))
    log = frames[0]
    for frame in frames[1:]:
        log = log.unionByName(frame)
    return log


def _collect(frame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """A Spark DataFrame a task wrote, back on the driver with the polars engine's types."""
    return pl.from_arrow(frame.toArrow()).cast(schema) if not frame.isEmpty() else pl.DataFrame(schema=schema)


def audit(rounds, out_dir: Path, options: polars_engine.Options = polars_engine.Options(),
          master: str = "local[2]") -> dict:
    """Audit a round log on Spark into `out_dir`; returns summary.json as written. Options the Spark
    engine does not run (bets, a mapping, a selection, a window) are refused with an InputError."""
    from pyspark.sql import functions as F

    refused = [name for name, given in (("--bets", options.bets), ("--mapping", options.mapping),
                                        ("--table/--shoe/--since/--until", options.selection),
                                        ("--window-start/--window-end", options.window.start or options.window.end))
               if given]
    if refused:
        raise InputError(f"--engine spark does not run {', '.join(refused)} yet; use --engine polars")
    started = datetime.now(UTC)
    log = ingest.scan(rounds, "round_log")  # the polars engine's one-line errors, before Spark starts
    spark = session(master)
    try:
        text = _read(spark, log.files).cache()
        named = text.select("profile").where(F.col("profile").isNotNull()).distinct().collect()
        names = polars_engine.profiles_in(pl.LazyFrame({"profile": [row[0] for row in named]},
                                                       schema={"profile": pl.String}), log.path, options.profile)
        profile = options.profile
        tally = _collect(text.mapInArrow(lambda b: _tallies_in(b, profile), _ddl(TALLY_SCHEMA)), TALLY_SCHEMA)
        counted = polars_engine.round_counts(tally)
        per_round = _collect(text.mapInArrow(lambda b: _findings_in(b, profile), _ddl(FINDINGS_SCHEMA)), FINDINGS_SCHEMA)
        quarantine = _collect(text.mapInArrow(lambda b: _quarantine_in(b, profile), _ddl(QUARANTINE_SCHEMA)),
                              QUARANTINE_SCHEMA).sort("source_file", "source_row")
        replayable = text.join(spark.createDataFrame(quarantine.select(
            "source_file", pl.col("source_row").cast(pl.Int64)).to_arrow()),
                               ["source_file", "source_row"], "left_anti").filter(F.col("round_id").isNotNull())
        repeated = replayable.groupBy("round_id").count().filter(F.col("count") > 1).select("round_id")
        copies = pl.from_arrow(replayable.join(repeated, "round_id", "left_semi").toArrow())
        duplicates = round_findings(_replayable(_prepared(copies.to_arrow(), profile)), DUPLICATE).collect() \
            if copies.height else pl.DataFrame(schema=FINDINGS_SCHEMA)
        found = [in_log_order(pl.concat([per_round, duplicates.cast(FINDINGS_SCHEMA)]))]
        if options.across_rounds:
            decks = {name: profiles.load(name).decks for name in names}
            columns, schema = log.columns, {**FINDINGS_SCHEMA, "kind": pl.UInt8}
            shoes = text.repartition(max(spark.sparkContext.defaultParallelism,
                                         -(-counted["rounds"]["rows_read"].item() // SHOE_ROWS)), "shoe_id")
            checked = shoes.mapInArrow(lambda b: _integrity_in(b, profile, decks, columns, started), _ddl(schema))
            found.append(_collect(checked, schema).sort(integrity.IN_ORDER).drop("kind"))
            levels = [level for level in fairness.LEVELS if level in log.columns]
            if levels:
                cells = fairness.observed_counts(_replayable(_prepared(
                    pa.table({c: pa.array([], pa.string()) for c in text.columns}), profile)), levels).collect_schema()
                counted["fairness"] = fairness.add_up([_collect(
                    text.mapInArrow(lambda b: _cells_in(b, profile, levels), _ddl(dict(cells))), dict(cells))], levels)
    finally:
        spark.stop()
    return _write(log, names, counted, pl.concat(found), quarantine, options, started, Path(out_dir))


def _write(log: ingest.Log, names: list[str], counted: dict[str, pl.DataFrame], found: pl.DataFrame,
           quarantine: pl.DataFrame, options: polars_engine.Options, started: datetime, out_dir: Path) -> dict:
    """The outputs the polars engine writes from the same counts and findings, published the same way."""
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".audit-", dir=out_dir))
    try:
        found.write_parquet(staging / "findings.parquet")
        quarantine.write_parquet(staging / "quarantine.parquet")
        tests = polars_engine.fairness_tests(counted, options, staging)
        findings = pl.read_parquet(staging / "findings.parquet")
        summary = polars_engine.summarize(started, log, None, names, counted, findings, tests, options)
        summary["tool"]["engine"] = "spark"
        summary["not_run"] = NOT_RUN
        (staging / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        polars_engine.publish(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return summary


def require() -> None:
    """Fail with one line when Spark cannot run here."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise InputError("--engine spark needs pyspark: pip install -e '.[spark]' (and Java 17+)") from None
