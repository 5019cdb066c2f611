"""The audit on Apache Spark, for logs one machine cannot hold: the same polars checks, per Arrow batch.

Spark reads the logs (every column as text) and hands each task its rows as Arrow record batches
(`DataFrame.mapInArrow`). Each batch goes through the very functions the polars engine uses
(`run.prepared`, `findings.round_findings`, `fairness.observed_counts`). What needs more than a batch
is arranged by Spark first:
- DUPLICATE_ROUND and DUPLICATE_BET: a Spark group-by on the polars engine's id key finds the round_ids
  (bet_ids) on several rows; only those rows come back to the driver to be written up;
- integrity (CARD_COUNT, SHOE_SEQUENCE, TIMESTAMP): the log is repartitioned by shoe_id, so that each
  task holds whole shoes, and runs `integrity.integrity_findings` on its partition;
- fairness: each batch's counts per (table, dealer, shoe, profile) cell are added up on the driver,
  which runs the statistics (a few rows per table);
- settlement: bets and rounds are grouped by a part of the round_id hashes and each part is settled
  by `settlement.settle` (`cogroup().applyInArrow`), as the polars engine settles a part at a time;
- the contract: each task makes the contract's view of its batch, which Great Expectations validates
  as a Spark DataFrame.

Logs are read as `ingest.scan` reads them (mappings, Hive folder values, a CSV file's lines read by the
polars engine's CSV code in each task, a selection decided by the polars engine's own predicate); a
layout Spark's readers cannot take (JSON, compressed, card events, a mapping that reshapes rows) is read
by the polars engine's reader itself, a span of a file a task. The
driver collects what the tasks return (findings, quarantines, counts: small next to the log, and the
few rows the evidence explains) and writes every output of the polars engine with its code."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote, urlparse

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from . import run
from ..checks import contract, fairness, integrity, open_shoes, settlement
from ..outputs import evidence
from ..outputs import summary as summary_of
from ..inputs import discover, formats, ingest, mappings
from .. import owned, tuning
from . import stored
from ..checks.round_checks import DUPLICATE, PER_ROUND
from ..errors import InputError, OutputError, first_line
from ..checks.findings import FINDINGS_SCHEMA, in_log_order, published, round_findings
from ..inputs.ids import id_key
from ..inputs.selection import Selection



def _spark_type(dtype: pl.DataType) -> tuple[pa.DataType, str]:
    """The Arrow type a task hands back for a polars column, and Spark's name for it."""
    if dtype == pl.String:
        return pa.string(), "string"
    if dtype == pl.Boolean:
        return pa.bool_(), "boolean"
    if dtype == pl.Int128:  # exact money in 1/10^12: Spark has no 128-bit integer
        return pa.decimal128(38, 0), "decimal(38,0)"
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
    yield from frame.with_columns(pl.col(pl.Int128).cast(pl.Decimal(38, 0))).to_arrow().cast(arrow).to_batches()


def _from_spark(batch: pa.RecordBatch | pa.Table) -> pl.LazyFrame:
    """Rows a task gets, with the polars engine's types back (row numbers, exact money)."""
    return pl.from_arrow(batch).lazy().with_columns(pl.col("source_row").cast(pl.UInt32),
                                                    pl.col(pl.Decimal).cast(pl.Int128))


@dataclass(frozen=True)
class _Rounds:
    """How a task prepares rows of the round log as the polars engine does (`run.prepared`: parsed,
    replayed, `dealt_utc`, `id_key`): the run's default profile and the log's card notation, and whether
    its cards carry their ranks (`ingest.Log.ranked`), which settling and fairness ask."""

    profile: str
    notation: str
    ranked: bool

    def prepared(self, rows: pl.LazyFrame) -> pl.LazyFrame:
        return run.prepared(rows, self.profile, self.notation)


def _prepared(batch: pa.RecordBatch | pa.Table, rounds: _Rounds) -> pl.LazyFrame:
    """Rows from Spark, prepared (`_Rounds.prepared`)."""
    return rounds.prepared(_from_spark(batch))


def _replayable(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.filter(pl.col("reject").is_null())


def _round_outputs(rows: pl.LazyFrame, as_rounds: _Rounds, levels: list[str]) -> dict[str, pl.LazyFrame]:
    """What the driver needs of some rows of the log, prepared once: per file counts (`tallies`),
    per-round findings, the rows that cannot be replayed with their reason, and with `levels` the
    fairness counts per cell."""
    rounds = as_rounds.prepared(rows).collect().lazy()
    outputs = {"tallies": run.tallies(rounds),
               "findings": round_findings(_replayable(rounds), PER_ROUND),
               "quarantine": run.quarantined(rounds)}
    if levels:
        outputs["cells"] = fairness.observed_counts(rounds, levels)
    return outputs


OUTPUTS_DDL = "output string, frame binary"


def _outputs_in(batches, outputs_of: Callable[[pl.LazyFrame], dict[str, pl.LazyFrame]]):
    """mapInArrow task: `outputs_of` each batch, one row per output (its name, and its frame as Arrow
    IPC), so that the rows are handed to Python once, not once per output."""
    for batch in batches:
        outputs = outputs_of(_from_spark(batch))
        yield pa.RecordBatch.from_pydict({"output": list(outputs),
                                          "frame": [_ipc(frame) for frame in pl.collect_all(list(outputs.values()))]})


def _ipc(frame: pl.DataFrame) -> bytes:
    written = io.BytesIO()
    frame.write_ipc(written)
    return written.getvalue()


def _outputs(rows, outputs_of: Callable[[pl.LazyFrame], dict[str, pl.LazyFrame]],
             empty: pl.LazyFrame) -> dict[str, pl.DataFrame]:
    """`outputs_of` every batch of the Spark DataFrame `rows`, in one pass, added up on the driver; an
    output with no rows keeps the columns it has on `empty` (no rows, as `_from_spark` types them)."""
    shapes = outputs_of(empty)
    found = {name: [frame] for name, frame in zip(shapes, pl.collect_all(list(shapes.values())))}
    handed = rows.mapInArrow(lambda batches: _outputs_in(batches, outputs_of), OUTPUTS_DDL).toArrow()
    for name, blob in zip(handed.column("output").to_pylist(), handed.column("frame").to_pylist()):
        found[name].append(pl.read_ipc(io.BytesIO(blob)))
    return {name: pl.concat(frames) for name, frames in found.items()}


def _integrity_in(batches, as_rounds: _Rounds, decks: dict[str, int], columns: frozenset[str], started: datetime,
                  starts_cut: bool):
    """mapInArrow task on a partition of whole shoes: its integrity findings (with their `kind`)."""
    batches = list(batches)
    if not batches:  # a partition no shoe hashed to
        return
    table = pa.Table.from_batches(batches)
    rounds = _replayable(_prepared(table, as_rounds))
    yield from _to_batches(integrity.integrity_findings([rounds], decks, columns, started,
                                                        lambda frame: frame.collect(), starts_cut).collect())


def _settled(bet_rows: pl.LazyFrame, round_rows: pl.LazyFrame, as_rounds: _Rounds, names: list[str]) -> pl.LazyFrame:
    """The bets of some round_ids settled against every row of the round log with those round_ids,
    as the polars engine settles a part (`bets_beside._settle_left`)."""
    rounds = as_rounds.prepared(round_rows)
    replayable = _replayable(rounds)
    quarantined = rounds.filter(pl.col("reject").is_not_null()).select("round_id").collect()["round_id"]
    return settlement.settle(bet_rows, settlement.once_per_round(settlement.round_facts(replayable)), quarantined,
                             names, as_rounds.ranked)


def _settle_part(bet_rows: pa.Table, round_rows: pa.Table, as_rounds: _Rounds, names: list[str]) -> pa.Table:
    """applyInArrow task on one part of the round_ids (by hash): its bets and its rounds, settled."""
    settled = _settled(_from_spark(bet_rows), _from_spark(round_rows), as_rounds, names).collect()
    return pa.Table.from_batches(list(_to_batches(settled)))


def _settle(spark, text, placed, as_rounds: _Rounds, names: list[str], rows: int) -> dict:
    """Bets settled on Spark: bets and rounds grouped by a part of the round_id hashes (so that every
    copy of a round and its bets meet in one task), each part settled by the polars engine's code.
    Returns the bet findings, quarantine and counts (all small); the settled bets stay on Spark."""
    from pyspark.sql import functions as F

    tasks = _partitions(spark, rows)
    part = F.pmod(F.hash("round_id"), F.lit(tasks)).alias("part")
    schema = _settled(_from_spark(_empty(placed.columns)), _from_spark(_empty(text.columns)), as_rounds,
                      names).collect_schema()

    def by_part(frame):
        # Partitioned here, not by the group-by's shuffle into spark.sql.shuffle.partitions (200), which
        # Spark did not always coalesce: a Python task per partition.
        return frame.withColumn("part", part).repartition(tasks, "part").groupBy("part")
    settled = (by_part(placed).cogroup(by_part(text))
               .applyInArrow(lambda bet_rows, round_rows: _settle_part(
                   bet_rows.drop_columns(["part"]), round_rows.drop_columns(["part"]), as_rounds, names),
                   _ddl(dict(schema))))
    outputs = _outputs(settled, lambda rows: settlement.outputs(rows.collect()), pl.LazyFrame(schema=schema))
    # DUPLICATE_BET: a Spark group-by finds the bet_ids on several rows; only their rows come back.
    copies = _copies(placed.where(F.col("bet_id").isNotNull()), "bet_id")
    duplicates = settlement.duplicate_bets(_from_spark(copies)).collect()
    in_order = ["source_file", "source_row"]
    return {"findings": pl.concat([outputs["findings"], duplicates]).sort(*in_order, "check"),
            "quarantine": outputs["quarantine"].sort(in_order), "counted": settlement.bet_totals(outputs["counts"])}


def _partitions(spark, rows: int) -> int:
    """How many groups a log of `rows` rows is split into for a task each: one per core at least,
    and one per `Tuning.piece_rows` rows, so that a task holds about a piece of the log."""
    return max(spark.sparkContext.defaultParallelism, -(-rows // tuning.current().piece_rows))


def _empty(columns: list[str]) -> pa.Table:
    """No rows, in the shape `_read` gives (text, and 64-bit row numbers)."""
    return pa.table({c: pa.array([], pa.int64() if c in ("source_row", "log_row") else pa.string()) for c in columns})


def session(master: str):
    """A Spark session; under spark-submit (which starts the driver's gateway) its --master wins."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this environment's packages
    builder = SparkSession.builder.appName("baccarat-audit")
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ
    if not submitted:
        # Spark's own rule (mesos only before Spark 4); its JVM would refuse others with a stack trace.
        if not (master.startswith(("local", "spark://", "k8s://", "mesos://")) or master == "yarn"):
            raise InputError(f"--spark-master {master}: expected local, local[N], spark://HOST:PORT, "
                             "k8s://URL, mesos://URL or yarn")
        builder = builder.master(master)
    on_interrupt = signal.getsignal(signal.SIGINT)
    try:
        spark = (builder
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(tuning.current().spark_batch_rows))
                 .config("spark.sql.session.timeZone", "UTC")
                 # Hadoop's default local file system looks for a checksum file beside each file read,
                 # named from the file's name, which it cannot parse when that name holds a ':' (a
                 # night's time: `T01 22:00.csv`); the raw one reads the file alone.
                 .config("spark.hadoop.fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem").getOrCreate())
    except Exception as error:  # an unreachable master gives up after a minute, with a Java exception
        where = "the master given to spark-submit" if submitted else master
        cause = first_line(getattr(error, "java_exception", error)) or type(error).__name__
        raise InputError(f"{where}: no Spark session could be started; is the master up and reachable from "
                         f"here? ({cause})") from None
    spark.sparkContext.setLogLevel("ERROR")
    # Spark put in its own Ctrl-C handler, which fails when Ctrl-C comes as the session stops; the
    # caller's (the CLI's) stays in charge, and `audit` stops the session, and its jobs, on the way out.
    signal.signal(signal.SIGINT, on_interrupt)
    return spark


def _read(spark, log: ingest.Log, contract_name: str = "round_log", mapping: ingest.Mapping | None = None):
    """The log as Spark sees it, shaped as `ingest.scan` shapes it: the mapping's renames and value
    translations, contract columns as text stripped of white space (null when empty; a column a file
    lacks from its Hive folder names, or null), `source_file`, `source_row` (see `_row_numbers`),
    `malformed` (a CSV row's structure, judged by the polars engine's own code) and `log_row`, which
    orders the rows as the polars engine reads them (file, then row).

    The files the selection keeps are read, those of one shape as `ingest.scan` opened them (format,
    columns read as stored, Hive folders that fill a column) together, as one Spark read: a read per file
    costs Spark its planning per file. A layout Spark's readers cannot take (JSON, a compressed or
    card-event log, a mapping that reshapes rows) is read by the polars engine's reader in tasks
    (`_read_by_polars`).
    """
    from pyspark.sql import functions as F

    files = log.files_read
    shape_of = dict(zip(log.files, (one.shape for one in log.opened)))
    groups: dict[ingest.Shape, list[Path]] = {}
    for path in files:
        groups.setdefault(shape_of[path], []).append(path)
    read, placed, by_polars = [], [], []
    for shape, paths in groups.items():
        if shape.copy or shape.file_format not in ("parquet", "csv") or (mapping is not None and mapping.reshapes):
            by_polars += paths
            continue
        names = [_literal(path) for path in paths]
        if shape.file_format == "parquet":
            rows = _placed(spark.read.parquet(*names))
            renames = {k: v for k, v in mapping.columns.items() if k in rows.columns} if mapping is not None else {}
            read.append(rows.withColumnsRenamed(renames).withColumn("malformed", F.lit(None).cast("string")))
            placed.append(rows)
        else:
            lines = _placed(spark.read.text(names))
            read.append(_csv(lines, paths[0], contract_name, mapping))
            placed.append(lines)
    frames = [_read_by_polars(spark, log, by_polars, contract_name)] if by_polars else []
    if placed:
        numbers = F.broadcast(_row_numbers(spark, placed, log, contract_name))
        frames += [_shaped(raw.join(numbers, ["_path", "_split"]), contract_name, mapping) for raw in read]
    together = frames[0]
    for frame in frames[1:]:
        together = together.unionByName(frame)
    return together


_PLACED = {"source_file": pl.String, "source_row": pl.Int64, "log_row": pl.Int64, "malformed": pl.String}


def _read_by_polars(spark, log: ingest.Log, paths: list[Path], contract_name: str):
    """The rows of the log's files `paths` in `_read`'s columns, each task reading a span of a file by
    the polars engine's reader (`ingest.Log.span`): the same text, rows and reasons, in any layout it
    reads. A file is cut in spans of `Tuning.piece_rows` rows, as the polars engine cuts it; a JSON
    file, which is read from its start whatever the span, is one span."""
    number = {path: i for i, path in enumerate(log.files)}
    read_as = {path: i for i, path in enumerate(log.files_read)}  # as `_row_numbers` numbers the files
    rows, spans = tuning.current().piece_rows, []
    for path in paths:
        file = number[path]
        total = log.rows_per_file[file]
        step = rows if log.opened[file].shape.file_format != "json" else max(total, 1)
        spans += [(file, read_as[path], start, min(step, total - start)) for start in range(0, total, step)]
    schema = _PLACED | dict.fromkeys(ingest.columns(contract_name), pl.String)

    def task(batches):
        for batch in batches:
            for file, read_as, start, count in zip(*batch.to_pydict().values()):
                frame = ingest.collect(log.path, [log.span(file, start, count)])[0]
                # Numbered as `_shaped` numbers rows: the file's place among those read, then its row.
                yield from _to_batches(frame.with_columns(
                    log_row=pl.lit(read_as << 32, pl.Int64) + pl.col("source_row").cast(pl.Int64)).select(*schema))
    handed = spark.createDataFrame(spans, "file bigint, read_as bigint, start bigint, count bigint")
    return handed.repartition(max(1, len(spans))).mapInArrow(task, _ddl(schema))


def _literal(path: Path) -> str:
    """The path as Spark's reader takes a name: it expands any path as a Hadoop glob, so `night[1].csv`
    would read night1.csv (or nothing); a backslash makes each pattern character stand for itself.
    Expanding a pattern, Hadoop parses each part of the path alone, and one holding a ':' as a URI,
    which fails (a Java exception in a task): no escape helps, so such a path stops the run first."""
    if ":" in str(path) and re.search(r"[\\\[\]{}*?]", str(path)):
        raise InputError(f"{path}: Spark's reader cannot take a path with both ':' and one of []{{}}*?\\; "
                         "rename it, or audit it with --engine polars")
    return re.sub(r"([\\\[\]{}*?])", r"\\\1", str(path))


def _shaped(raw, contract_name: str, mapping: ingest.Mapping | None):
    """Rows of files read together, numbered (`_row_numbers`), in the columns `_read` gives: each
    contract column made text in a task by the polars engine's own rules (`ingest.text_columns`:
    numbers and times written as it writes them, text trimmed, empty text null, the mapping's values
    translated); a column the files lack from their Hive folders, or null."""
    from pyspark.sql import functions as F

    contract = ingest.columns(contract_name)
    stored = [c for c in contract if c in raw.columns]
    folders = [c for c in contract if c not in stored]
    row = (F.col("_id") + F.col("_shift")).alias("source_row")
    rows = raw.select("source_file", row, (F.col("_file") * F.lit(1 << 32) + row).alias("log_row"), "malformed",
                      *(F.col(f"`{c}`") for c in stored), *(F.col(f"_folder_{c}") for c in folders))

    def task(batches):
        for batch in batches:
            frame = pl.from_arrow(batch)
            found = {c: mappings.Column(pl.col(c), frame.schema[c], c) for c in stored}
            trimmed, finished = ingest.text_columns(contract_name, found, mapping)
            trimmed |= {c: pl.col(f"_folder_{c}") for c in folders}
            yield from _to_batches(frame.lazy().select(*_PLACED, **trimmed).with_columns(**finished).collect())
    texts = rows.mapInArrow(task, _ddl(_PLACED | dict.fromkeys(contract, pl.String)))
    return texts.where("source_row > 0")  # a CSV file's header is its row 0


def _placed(frame):
    """Rows (or lines) as Spark reads them, each with where it lies: its file (`_path`, as Spark names
    it), the split of the file its task read (`_split`) and its place among the rows that task read, in
    order (`_id`)."""
    from pyspark.sql import functions as F

    return frame.select("*", F.col("_metadata.file_path").alias("_path"),
                        F.col("_metadata.file_block_start").alias("_split"),
                        F.monotonically_increasing_id().alias("_id"))


def _row_numbers(spark, placed: list, log: ingest.Log, contract_name: str):
    """Per split of every file the log reads (`_path`, `_split`): the file's place among them
    (`_file`), its name as given (`source_file`), its Hive folder values (`_folder_COLUMN`) and
    `_shift`, which makes a row's number in its file: `_id + _shift` counts the rows of the splits
    before its own, less the split's first `_id`, and less one in a CSV file, whose first line is its
    header (numbered 0).

    One small job counts the rows of every split. Rows are numbered where they lie: a window over a
    whole file would move every row into one task.
    """
    from pyspark.sql import functions as F

    every = placed[0].select("_path", "_split", "_id")
    for more in placed[1:]:
        every = every.unionByName(more.select("_path", "_split", "_id"))
    splits = every.groupBy("_path", "_split").agg(F.count("*").alias("rows"), F.min("_id").alias("first"))
    counted = pl.from_arrow(splits.toArrow())
    # Spark names a file by URI ("file:/logs/a%20b.csv"); the polars engine by the path as given.
    files = log.files_read
    csv = {path for path, file_format in zip(log.files, log.formats) if file_format == "csv"}
    by_path = {os.path.abspath(path): (index, path) for index, path in enumerate(files)}
    given = {uri: by_path[unquote(urlparse(uri).path)] for uri in counted["_path"].unique()}
    folders = {path: discover.hive_values(path) for path in files}
    hive = [c for c in ingest.columns(contract_name) if any(c in values for values in folders.values())]
    facts = pl.DataFrame(
        [(uri, index, str(path), path in csv, *(folders[path].get(c) for c in hive))
         for uri, (index, path) in given.items()],
        schema={"_path": pl.String, "_file": pl.Int64, "source_file": pl.String, "_csv": pl.Boolean,
                **{f"_folder_{c}": pl.String for c in hive}}, orient="row")
    before = (pl.col("rows").cum_sum() - pl.col("rows")).over("_path")
    shifts = counted.sort("_path", "_split").join(facts, on="_path", maintain_order="left").select(
        pl.exclude("rows", "first", "_csv"), _shift=before - pl.col("first") + 1 - pl.col("_csv").cast(pl.Int64))
    numbers = spark.createDataFrame(shifts.to_arrow())
    missing = [c for c in ingest.columns(contract_name) if c not in hive]
    return numbers.select("*", *(F.lit(None).cast("string").alias(f"_folder_{c}") for c in missing))


def _csv(lines, path: Path, contract_name: str, mapping: ingest.Mapping | None):
    """CSV files' lines (`_placed`, headers too; files with `path`'s header) as rows, with the provider's
    columns renamed and `malformed` set as the polars engine sets it. Spark hands over lines, a blank
    one too (its CSV reader would skip it and number every later row one short), and each task reads its
    lines with `formats.csv_records`."""
    from pyspark.sql import functions as F

    names = formats.csv_header(path)
    renames = {k: v for k, v in mapping.columns.items() if k in names} if mapping is not None else {}
    renamed = [renames.get(name, name) for name in names]
    checked = [c for c in ingest.columns(contract_name) if c in renamed]
    placed = {"_path": pl.String, "_split": pl.Int64, "_id": pl.Int64}
    schema = {**{name: pl.String for name in renamed}, "malformed": pl.String, **placed}

    def task(batches):
        for batch in batches:
            if not batch.num_rows:
                continue
            # The lines' bytes as the file holds them, for the polars reader to decode (as it reads a file).
            lines = pa.ListArray.from_arrays(pa.array([0, batch.num_rows], pa.int32()), batch.column("line"))
            records = formats.csv_records(pc.binary_join(lines, b"\n")[0].as_py() + b"\n", names)
            rows = ingest.flag_not_utf8(records.rename(renames), checked).collect()
            # Side by side as the polars engine puts a file's records and lines (see `formats.csv_records`);
            # a blank line is not a record, and keeps its number from the rows after it.
            both = pl.concat([rows, pl.from_arrow(batch.select(list(placed)))], how="horizontal")
            yield from _to_batches(both.filter(~pl.col(formats.NOT_RECORD)).drop(formats.NOT_RECORD))
    # Spark's text is bytes unchecked: handed over as binary, since text that is not UTF-8 is not Arrow's.
    return lines.select(F.col("value").cast("binary").alias("line"), *placed).mapInArrow(task, _ddl(schema))


def _selected(text, selection: Selection):
    """The rows a selection keeps, decided in each task by the polars engine's own predicate (the same
    reading of dealt_at)."""
    if not selection:
        return text

    def task(batches):
        for batch in batches:
            yield from pl.from_arrow(batch).filter(selection.predicate()).to_arrow().cast(batch.schema).to_batches()
    return text.mapInArrow(task, text.schema)


def _collect(frame, schema: dict[str, pl.DataType]) -> pl.DataFrame:
    """A Spark DataFrame a task wrote, back on the driver with the polars engine's types."""
    return pl.from_arrow(frame.toArrow()).cast(schema)


def audit(rounds, out_dir: Path, options: run.Options = run.Options(),
          master: str = "local[2]") -> run.Result:
    """Audit a round log on Spark into `out_dir`, as `run.audit` does with the same options (the
    progress display aside), and return what it returns: summary.json as written, and where."""
    with tuning.using(options.tuning), run.locked(Path(out_dir)):
        return run.Result(_audit(rounds, out_dir, options, master), Path(out_dir))


@ingest.one_row_group_ahead()
def _audit(rounds, out_dir: Path, options: run.Options, master: str) -> dict:
    started = datetime.now(UTC)
    owned.claim(Path(out_dir), run.outputs_of(options))  # before anything is read
    options = run.with_house_profiles(options)
    # The polars engine's one-line errors, before Spark starts; and the columns the log has.
    log = ingest.scan(rounds, "round_log", options.mapping, options.selection)
    bet_log = ingest.scan(options.bets, "bet_log", options.bets_mapping) if options.bets else None
    for opened in filter(None, (log, bet_log)):
        # Counted here (Parquet from its footer, CSV by a read of its lines, as SHA-256 reads every file
        # here anyway), so that a CSV record that spans lines is one line naming the row, not a task's failure.
        opened.rows_per_file  # noqa: B018 (a cached property, computed for its errors)
    run_id = run.run_id_of(options, [log, *([bet_log] if bet_log else [])])
    carry = run.carried_in(options.after)
    if options.validate:
        contract.preload()
    out_dir = Path(out_dir)
    with run.staging_in(out_dir, run.outputs_of(options)) as staging:
        spark = session(master)
        try:
            checked = _run(spark, log, bet_log, options, started, run_id, staging, carry)
        except BaseException as error:
            # The error that ended the run is the one to report, even when the session cannot then be
            # stopped cleanly. (A stop by signal does not pass here: `stops` ends the process.)
            with contextlib.suppress(Exception):
                spark.stop()
            # Spark failing on a Parquet file whose pages are damaged: bad input, named as polars' engine names it.
            damaged = (formats.corrupt_parquet([*log.files, *(bet_log.files if bet_log else ())])
                       if isinstance(error, Exception) and not isinstance(error, (InputError, OutputError)) else None)
            if damaged is not None:
                raise damaged from None
            raise
        spark.stop()
        findings = stored.scan(staging / "findings.parquet")
        summary = summary_of.summarize(started, run_id, log, bet_log, checked.names, checked.counted, findings,
                                       checked.tests, options, staging / "flagged")
        summary["tool"]["engine"] = "spark"
        summary |= run.open_shoes_of(checked.still_open, options.after, carry)
        if checked.validated is not None:
            summary_of.add_contract(summary, checked.validated, options.fail_on)
        summary = summary_of.finish(summary)
        (staging / run.SUMMARY).write_text(json.dumps(summary, indent=2) + "\n")
        run.write_report(staging, findings, log, [checked.explained.lazy()], bet_log, options.profile)
        run.publish(staging, out_dir, summary["exit_code"])
    return summary


class _Checked(NamedTuple):
    """What the checks on Spark return for the summary and the report."""

    names: list[str]  # the rules profiles used
    counted: dict[str, pl.DataFrame]  # the counts the summary needs
    tests: pl.DataFrame | None  # the table level's fairness tests (`run.fairness_tests`)
    explained: pl.DataFrame  # the rows the evidence explains
    validated: dict | None  # the contract's result; None without the contract
    still_open: pl.DataFrame | None  # the shoes open at the end of the log (`open_shoes`)


def _run(spark, log: ingest.Log, bet_log: ingest.Log | None, options: run.Options, started: datetime,
         run_id: str, staging: Path, carry: pl.DataFrame | None) -> _Checked:
    """Every check on Spark: writes findings.parquet, fairness.parquet, the quarantines and the open shoes
    into `staging` (and the contract's Data Docs). `carry`: the previous audit's open shoes (`--after`),
    read before the log by the checks of shoes."""
    from pyspark.sql import functions as F

    text = _selected(_read(spark, log, mapping=options.mapping), options.selection).cache()
    named = text.where(F.col("malformed").isNull()).select("profile").where(F.col("profile").isNotNull()).distinct()
    names = run.profiles_in([row[0] for row in named.collect()], log.path, options.profile,
                                      options.mapping)
    as_rounds = _Rounds(options.profile, log.notation, log.ranked)
    levels = [level for level in fairness.LEVELS if level in log.columns] if options.across_rounds else []
    outputs = _outputs(text, lambda rows: _round_outputs(rows, as_rounds, levels), _from_spark(_empty(text.columns)))
    counted = run.round_counts(outputs["tallies"])
    rows = counted["rounds"]["rows_read"].item()
    run.require_rows(log, rows)
    per_round = outputs["findings"]
    quarantine = outputs["quarantine"].sort("source_file", "source_row")
    quarantine.write_parquet(staging / "quarantine.parquet")
    replayable = text.join(spark.createDataFrame(quarantine.select(
        "source_file", pl.col("source_row").cast(pl.Int64)).to_arrow()),
        ["source_file", "source_row"], "left_anti").filter(F.col("round_id").isNotNull())
    copies = pl.from_arrow(_copies(replayable, "round_id"))
    duplicates = round_findings(_replayable(_prepared(copies.to_arrow(), as_rounds)), DUPLICATE).collect() \
        if copies.height else pl.DataFrame(schema=FINDINGS_SCHEMA)
    found = [in_log_order(pl.concat([per_round, duplicates.cast(FINDINGS_SCHEMA)]))]
    if options.across_rounds:
        decks = integrity.decks_of(names)
        columns, schema = log.columns, {**FINDINGS_SCHEMA, "kind": pl.UInt8}
        rounds = text if carry is None else _carried_rows(spark, carry, text.columns).unionByName(text)
        shoes = rounds.repartition(_partitions(spark, rows), "shoe_id")
        starts_cut = options.selection.since is not None
        present = options.as_of or started
        checked = shoes.mapInArrow(lambda b: _integrity_in(b, as_rounds, decks, columns, present, starts_cut),
                                   _ddl(schema))
        # The carried rows' own findings were the previous audit's.
        found.append(_collect(checked, schema).filter(pl.col("source_file") != open_shoes.CARRIED)
                     .sort(integrity.IN_ORDER).drop("kind"))
    placed = _read(spark, bet_log, "bet_log", options.bets_mapping) if bet_log is not None else None
    if placed is not None and options.selection:  # the bets in scope, as `bets_beside.bets_in_scope` keeps them
        placed = placed.join(text.select("round_id").where(F.col("round_id").isNotNull()).distinct(), "round_id",
                             "left_semi")
    if placed is not None:
        settled = _settle(spark, text, placed, as_rounds, names, rows)
        found.append(settled["findings"])
        settled["quarantine"].write_parquet(staging / "bets_quarantine.parquet")
        counted |= settled["counted"]
    tests = run.fairness_tests(outputs["cells"].lazy() if levels else None, options, staging, as_rounds.ranked)
    if tests is not None:
        found.append(fairness.table_findings(tests, options.fairness_threshold))
    found = pl.concat(found)
    published(found.lazy(), run_id).collect().write_parquet(staging / "findings.parquet")
    validated = None
    if options.validate:
        views = {"round_log": _view(text, log.columns, "round_log")}
        if placed is not None:
            views["bet_log"] = _view(placed, bet_log.columns, "bet_log")
        validated = contract.validate_on_spark(views, options.window,
                                               staging / run.DOCS if options.data_docs else None, log.notation)
    still_open = _open_shoes(replayable, carry, as_rounds)
    if still_open is not None:
        ingest.write_parquet(still_open, staging / run.OPEN_SHOES)
    return _Checked(names, counted, tests, _rows_explained(spark, text, found, as_rounds), validated, still_open)


def _carried_rows(spark, carry: pl.DataFrame, columns: list[str]):
    """The previous audit's open shoes as rows of the log Spark read (`_read`'s columns), before its rows
    (negative `log_row`) and under `open_shoes.CARRIED`, for the checks of shoes."""
    rows = carry.select(*(pl.col(c).cast(pl.Int64 if c in ("source_row", "log_row") else pl.String) if c in carry.columns
                          else pl.lit(None, pl.String).alias(c) for c in columns))
    rows = rows.with_columns(source_file=pl.lit(open_shoes.CARRIED),
                             log_row=pl.int_range(pl.len(), dtype=pl.Int64) - pl.len())
    return spark.createDataFrame(pa.Table.from_batches(list(_to_batches(rows))))


def _open_shoes(replayable, carry: pl.DataFrame | None, as_rounds: _Rounds) -> pl.DataFrame | None:
    """Each table's last shoe at the end of the log (`open_shoes`): found by Spark, the table's shoe of
    its last replayed row, and every row of it brought to the driver, prepared, after the rows carried in
    (`carry`) as the polars engine holds them (`open_shoes.OpenShoes`)."""
    from pyspark.sql import functions as F

    rows = replayable.where(F.col("shoe_id").isNotNull()).withColumn("_table", F.coalesce("table_id", F.lit("")))
    last = rows.groupBy("_table").agg(F.max_by("shoe_id", "log_row").alias("shoe_id"))
    found = _prepared(rows.join(last, ["_table", "shoe_id"], "left_semi").drop("_table").toArrow(),
                      as_rounds).sort("log_row").collect()
    held = open_shoes.OpenShoes()
    if carry is not None:
        held.add(open_shoes.carried(carry, found.schema))
    held.add(found)
    return held.table()


def _copies(rows, column: str) -> pa.Table:
    """The rows of `rows` whose id in `column` is on more than one of them, brought to the driver: Spark's
    group-by is on the polars engine's key of the id (`ids.id_key`: a hash of the id in NFKC, without
    format characters), made in a task, so it pairs ids as the polars engine does; the copies are then
    counted by the ids themselves (a hash two ids share is no duplicate)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType

    def task(batches):
        for batch in batches:
            yield from _to_batches(pl.from_arrow(batch).with_columns(
                id_key=id_key(pl.col(column)).reinterpret(signed=True)))  # Spark has no unsigned 64 bits
    keyed = rows.mapInArrow(task, StructType([*rows.schema.fields, StructField("id_key", LongType())]))
    repeated = keyed.groupBy("id_key").count().filter(F.col("count") > 1).select("id_key")
    return keyed.join(repeated, "id_key", "left_semi").drop("id_key").toArrow()


def _view(text, present: frozenset[str], contract_name: str):
    """The contract's view of a log (`contract.view`, made by polars in each task) as a Spark DataFrame,
    set-valued columns as text (Spark has no categoricals)."""
    def shown(frame: pl.LazyFrame) -> pl.LazyFrame:
        return contract.view(frame, present, contract_name, whole_ids=True).with_columns(
            pl.col(pl.Categorical).cast(pl.String))

    def task(batches):
        for batch in batches:
            yield from _to_batches(shown(_from_spark(batch)).collect())
    schema = dict(shown(_from_spark(_empty(text.columns))).collect_schema())
    return text.mapInArrow(task, _ddl(schema))


def _rows_explained(spark, text, found: pl.DataFrame, as_rounds: _Rounds) -> pl.DataFrame:
    """The round rows the evidence explains (see `evidence.gather`), fetched from Spark and prepared:
    the first findings of each check, and every row of the rounds their bets were placed on. Bet rows
    are read by `evidence.gather` itself, on the driver."""
    from pyspark.sql import functions as F

    places, round_ids = evidence.rounds_wanted(found.lazy())
    places = places.with_columns(pl.col("source_row").cast(pl.Int64))
    round_ids = round_ids.to_list()
    at = text.join(spark.createDataFrame(places.to_arrow(), "source_file string, source_row bigint"),
                   ["source_file", "source_row"], "left_semi") if places.height else text.limit(0)
    rows = at.unionByName(text.where(F.col("round_id").isin(round_ids))) if round_ids else at
    return _prepared(rows.toArrow(), as_rounds).unique(["source_file", "source_row"]).collect()


def require() -> None:
    """Fail with one line when Spark cannot run here."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise InputError("--engine spark needs pyspark: pip install -e '.[spark]' (and Java 17+)") from None
