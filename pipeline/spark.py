"""The audit on Apache Spark, for logs one machine cannot hold: the same polars replay, per Arrow batch.

Spark reads the log (every column as text) and hands each task its rows as Arrow record batches
(`DataFrame.mapInArrow`); each batch goes through the very functions the polars engine uses
(`ingest.parse_rounds`, `audit.replayable`, `findings.round_findings`). What needs the whole log stays
with Spark's group-bys: a round_id on several rows is found by a Spark group-by, and only those rows
come back to the driver to be written up. The driver collects the findings and the quarantine
(small) and writes the same files as the polars engine.

Run on Spark: the per-round checks (draws, totals, result), DUPLICATE_ROUND and the quarantine.
Not run on Spark (yet): settlement, the contract, integrity, fairness and the report.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa

from pipeline import __version__, ingest
from pipeline.audit import QUARANTINE_COLUMNS, replayable, sha256
from pipeline.checks import CODES, DUPLICATE, PER_ROUND
from pipeline.errors import EXIT_CLEAN, EXIT_FLAGGED, InputError
from pipeline.findings import FINDING_COLUMNS, FINDINGS_SCHEMA, in_log_order, round_findings

BATCH_ROWS = 10_000  # rows per Arrow batch handed to a task
TEXT_COLUMNS = ingest.columns("round_log")


def _arrow_schema(columns: tuple[str, ...]) -> pa.Schema:
    return pa.schema([(c, pa.int64() if c == "source_row" else pa.string()) for c in columns])


FINDINGS_ARROW = _arrow_schema(FINDING_COLUMNS)
QUARANTINE_ARROW = _arrow_schema((*QUARANTINE_COLUMNS, "reason"))


def _to_batches(frame: pl.DataFrame, schema: pa.Schema):
    yield from frame.with_columns(pl.col("source_row").cast(pl.Int64)).to_arrow().cast(schema).to_batches()


def _parsed(batch: pa.RecordBatch, profile: str) -> pl.LazyFrame:
    frame = pl.from_arrow(batch).lazy().with_columns(pl.col("source_row").cast(pl.UInt32))
    return ingest.parse_rounds(frame).with_columns(pl.col("profile").fill_null(profile))


def _findings_in(batches, profile: str):
    """mapInArrow task: the per-round findings of each batch (the polars engine's own expressions)."""
    for batch in batches:
        found = round_findings(replayable(_parsed(batch, profile)), PER_ROUND).collect()
        yield from _to_batches(found, FINDINGS_ARROW)


def _quarantine_in(batches, profile: str):
    """mapInArrow task: the rows of each batch that cannot be replayed, with the reason."""
    for batch in batches:
        parsed = _parsed(batch, profile)
        rejected = parsed.filter(pl.col("reject").is_not_null()).select(*QUARANTINE_COLUMNS, reason="reject")
        yield from _to_batches(rejected.collect(), QUARANTINE_ARROW)


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


def _read(spark, files: list[Path]):
    """The log as Spark sees it: contract columns as text, plus source_file and source_row."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    frames = []
    for path in files:
        raw = (spark.read.parquet(str(path)) if ingest.format_of(path) == "parquet"
               else spark.read.option("header", True).option("mode", "PERMISSIVE").csv(str(path)))
        clean = {c: F.when(F.trim(F.col(f"`{c}`").cast("string")) != "", F.trim(F.col(f"`{c}`").cast("string")))
                 if c in raw.columns else F.lit(None).cast("string") for c in TEXT_COLUMNS}
        frames.append(raw.withColumn("_order", F.monotonically_increasing_id()).select(
            F.lit(str(path)).alias("source_file"),
            F.row_number().over(Window.orderBy("_order")).cast("long").alias("source_row"),
            F.lit(None).cast("string").alias("malformed"),
            *(expr.alias(c) for c, expr in clean.items())))
    log = frames[0]
    for frame in frames[1:]:
        log = log.unionByName(frame)
    return log


def audit(rounds, out_dir: Path, profile: str = "standard", master: str = "local[2]") -> dict:
    """Audit a round log on Spark into `out_dir` (findings.parquet, quarantine.parquet, summary.json)."""
    from pyspark.sql import functions as F

    started = datetime.now(UTC)
    label, files = ingest.expand(rounds)
    for path in files:
        ingest.scan(path, "round_log")  # the same one-line errors as the polars engine, before Spark starts
    spark = session(master)
    log = _read(spark, files).cache()
    findings = log.mapInArrow(lambda batches: _findings_in(batches, profile),
                              _spark_schema(FINDINGS_ARROW))
    quarantine = log.mapInArrow(lambda batches: _quarantine_in(batches, profile),
                                _spark_schema(QUARANTINE_ARROW)).cache()
    replayable_ids = log.join(quarantine.select("source_file", "source_row"), ["source_file", "source_row"],
                              "left_anti").filter(F.col("round_id").isNotNull())
    repeated = replayable_ids.groupBy("round_id").count().filter(F.col("count") > 1).select("round_id")
    copies = pl.from_arrow(replayable_ids.join(repeated, "round_id", "left_semi").toArrow())
    duplicates = (round_findings(replayable(ingest.parse_rounds(
        copies.lazy().with_columns(pl.col("source_row").cast(pl.UInt32)).with_columns(
            pl.col("profile").fill_null(profile)))), DUPLICATE).collect() if copies.height
        else pl.DataFrame(schema=FINDINGS_SCHEMA))
    found = in_log_order(pl.concat([pl.from_arrow(findings.toArrow()).cast(FINDINGS_SCHEMA),
                                    duplicates.cast(FINDINGS_SCHEMA)]))
    rejected = pl.from_arrow(quarantine.toArrow()).with_columns(pl.col("source_row").cast(pl.UInt32)).sort(
        "source_file", "source_row")
    rows_read = log.count()
    spark.stop()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    by_check = dict(found.group_by("check").len().iter_rows())
    summary = {
        "tool": {"name": "baccarat-audit", "version": __version__, "engine": "spark"},
        "started_at": started.isoformat(timespec="seconds"),
        "inputs": [{"role": "rounds", "path": str(p), "sha256": sha256(p)} for p in files],
        "rows_read": rows_read,
        "rounds_audited": rows_read - rejected.height,
        "rows_quarantined": rejected.height,
        "rounds_flagged": found.select("source_file", "source_row").n_unique(),
        "findings": {code: by_check.get(code, 0) for code in CODES},
        "not_run": "settlement, contract, integrity, fairness and report are polars-engine only",
    }
    summary["exit_code"] = EXIT_FLAGGED if summary["rounds_flagged"] or rejected.height else EXIT_CLEAN
    for name, frame in (("findings.parquet", found), ("quarantine.parquet", rejected)):
        frame.write_parquet(out_dir / f".{name}.tmp")
        (out_dir / f".{name}.tmp").replace(out_dir / name)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _spark_schema(schema: pa.Schema):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([StructField(f.name, LongType() if f.type == pa.int64() else StringType()) for f in schema])


def require() -> None:
    """Fail with one line when Spark cannot run here."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise InputError("--engine spark needs pyspark: pip install -e '.[spark]' (and Java 17+)") from None
