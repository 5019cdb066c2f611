"""The Spark engine gives the polars engine's findings, row for row (Spark in local mode)."""

import contextlib
import json
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from conftest import ASSETS, output
from baccarat_audit.engines import run
from baccarat_audit import generate
from baccarat_audit.inputs import ingest
from baccarat_audit.errors import InputError
from baccarat_audit.inputs.selection import Selection

pytest.importorskip("pyspark", reason="the spark extra is not installed (.ci/run installs it)")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java 17+", allow_module_level=True)

from baccarat_audit.engines import spark  # noqa: E402
from baccarat_audit.tuning import Tuning  # noqa: E402
from test_golden import GOLDEN, TABLES, _comparable, _logs, _summary  # noqa: E402

def test_spark_and_polars_give_the_same_outputs(tmp_path):
    """Every check the Spark engine runs (per round, duplicates, integrity, fairness, settlement, the
    contract) gives the polars engine's results row for row, on a generated log (several Arrow batches, shoe
    partitions and parts of the round_ids per task, faults of every kind, a stacked table) and the hand-written one
    (rows and bets that cannot be used, mixed notation)."""
    log = generate.generate(25_000, seed=51, fault_rate=0.02, tables=3, with_bets=True, stacked=("T02",))
    paths = generate.write(log, tmp_path / "log")
    inputs = [str(paths["parquet"]), str(ASSETS / "mixed_notation.csv")]
    statuses = {"B1": "void", "B2": "VOIDED", "B6": "PENDING", "B19": "CANCELLED"}  # see test_settlement
    hand_written = pl.read_csv(ASSETS / "mixed_notation_bets.csv", infer_schema=False)
    # Bets recorded twice: one within this file, one whose bet_id is the generated log's too.
    twice = pl.concat([hand_written.filter(pl.col("bet_id") == "B4"),
                       hand_written.filter(pl.col("bet_id") == "B7").with_columns(bet_id=pl.lit(log.bets[0]["bet_id"]))])
    pl.concat([hand_written, twice]).with_columns(
        status=pl.col("bet_id").replace_strict(statuses, default=None)).write_csv(tmp_path / "bets.csv")
    options = run.Options(bets=[paths["bets_parquet"], tmp_path / "bets.csv"], data_docs=True)
    on_spark = spark.audit(inputs, tmp_path / "spark", options, master="local[2]").summary
    on_polars = run.audit(inputs, tmp_path / "polars", options).summary
    assert json.loads((tmp_path / "spark" / "evidence.json").read_text()) == json.loads(
        (tmp_path / "polars" / "evidence.json").read_text())
    assert (tmp_path / "spark" / "report.html").stat().st_size > 0
    for name in ("flagged_rounds.csv", "flagged_bets.csv"):  # from findings equal row for row: the same bytes
        assert (tmp_path / "spark" / name).read_bytes() == (tmp_path / "polars" / name).read_bytes(), name
    for name in ("findings.parquet", "quarantine.parquet", "bets_quarantine.parquet"):
        expected = output(tmp_path / "polars" / name)
        assert output(tmp_path / "spark" / name).equals(expected), name
        assert expected.height > 0, name
    # Expected counts are float sums over cells, whose order a group-by does not fix: equal to rounding.
    assert_frame_equal(pl.read_parquet(tmp_path / "spark" / "fairness.parquet"),
                       pl.read_parquet(tmp_path / "polars" / "fairness.parquet"), check_exact=False, rel_tol=1e-12)
    for key in ("rows_read", "rounds_audited", "rows_quarantined", "rounds_flagged", "findings", "checks", "inputs",
                "bets_read", "bets_settled", "bets_quarantined", "bets_flagged", "overpaid", "underpaid", "money",
                "exit_code"):
        assert on_spark[key] == on_polars[key], key
    assert all(on_spark["findings"][code] > 0 for code in ("DUPLICATE_ROUND", "CARD_COUNT", "SHOE_SEQUENCE",
                                                            "TIMESTAMP", "PLAYER_DRAW", "BANKER_DRAW", "SETTLEMENT",
                                                            "DUPLICATE_BET", "TABLE_STATS"))
    # A uniqueness expectation's examples are some of the repeated ids, in whichever order GX meets them.
    found = pl.read_parquet(tmp_path / "polars" / "findings.parquet")
    repeated = {*found.filter(pl.col("check") == "DUPLICATE_ROUND")["round_id"],
                *found.filter(pl.col("check") == "DUPLICATE_BET")["bet_id"]}
    (unique_bet_id,) = (e for e in on_polars["contract"]["bets"]["expectations"]
                        if e["type"] == "expect_column_values_to_be_unique")
    assert on_polars["findings"]["DUPLICATE_BET"] == unique_bet_id["unexpected_count"] == 4  # every copy, both
    for role in ("rounds", "bets"):
        for met_on_spark, met_on_polars in zip(on_spark["contract"][role]["expectations"],
                                               on_polars["contract"][role]["expectations"], strict=True):
            if met_on_spark["type"] == "expect_column_values_to_be_unique":
                assert set(met_on_spark.pop("examples")) | set(met_on_polars.pop("examples")) <= repeated
            assert met_on_spark == met_on_polars
    assert on_spark["contract"]["rounds"]["success"] is False  # the hand-written log breaks it
    assert on_spark["tool"]["engine"] == "spark" and (tmp_path / "spark" / "contract" / "index.html").is_file()


def _same_outputs(spark_dir, polars_dir) -> None:
    for name in ("findings.parquet", "quarantine.parquet", "bets_quarantine.parquet"):
        if name == "bets_quarantine.parquet" and not (polars_dir / name).exists():
            continue
        assert output(spark_dir / name).equals(output(polars_dir / name)), name
    on_spark, on_polars = (json.loads((d / "summary.json").read_text()) for d in (spark_dir, polars_dir))
    for key in ("rows_read", "rows_quarantined", "rounds_flagged", "findings", "checks", "inputs", "inputs_not_read",
                "selection", "bets_read", "bets_quarantined", "bets_flagged", "money"):
        assert on_spark.get(key) == on_polars.get(key), key


def test_spark_reads_mapped_narrowed_and_hive_logs_as_polars_does(tmp_path):
    """A provider's mapping, a selection, and a Hive folder that names the table: Spark sees the same rows."""
    data = ASSETS.parent.parent / "data"
    narrowed = run.Options(validate=False, mapping=ingest.load_mapping("provider-b"),
                           selection=Selection(shoes=("T01-S0001", "T01-S0003"),
                                               since=datetime(2026, 11, 1, 18, 20, tzinfo=UTC),
                                               until=datetime(2026, 11, 1, 19, 30, tzinfo=UTC)))
    for engine, audit_with in (("spark", lambda out, o: spark.audit([str(data / "provider_b_rounds.csv")], out, o)),
                               ("polars", lambda out, o: run.audit([str(data / "provider_b_rounds.csv")], out, o))):
        audit_with(tmp_path / f"narrowed_{engine}", narrowed)
    _same_outputs(tmp_path / "narrowed_spark", tmp_path / "narrowed_polars")
    assert 0 < json.loads((tmp_path / "narrowed_spark" / "summary.json").read_text())["rows_read"] < 300

    rounds = pl.read_parquet(data / "rounds.parquet")
    for (table,), rows in rounds.group_by("table_id"):
        folder = tmp_path / "hive" / f"table_id={table.replace('0', '%30')}"  # escaped as Hive escapes: T03
        folder.mkdir(parents=True)
        rows.drop("table_id").write_parquet(folder / "rounds.parquet")
    closed = tmp_path / "hive" / "table_id=T09"  # a table closed for the night: headers, no rows
    closed.mkdir()
    rounds.drop("table_id").head(0).write_parquet(closed / "rounds.parquet")
    rounds.drop("table_id").head(0).write_csv(closed / "rounds.csv")
    plain = run.Options(validate=False)
    spark.audit(tmp_path / "hive", tmp_path / "hive_spark", plain)
    run.audit(tmp_path / "hive", tmp_path / "hive_polars", plain)
    _same_outputs(tmp_path / "hive_spark", tmp_path / "hive_polars")
    assert set(pl.read_parquet(tmp_path / "hive_spark" / "findings.parquet")["table_id"]) <= set(rounds["table_id"])
    inputs = json.loads((tmp_path / "hive_spark" / "summary.json").read_text())["inputs"]
    assert [i["rows"] for i in inputs if "T09" in i["path"]] == [0, 0]
    # T01's folder unread; only the bets of T02's rounds settled.
    one_table = run.Options(validate=False, selection=Selection(tables=("T02",)), bets=data / "bets.parquet")
    spark.audit(tmp_path / "hive", tmp_path / "table_spark", one_table)
    run.audit(tmp_path / "hive", tmp_path / "table_polars", one_table)
    _same_outputs(tmp_path / "table_spark", tmp_path / "table_polars")
    assert set(pl.read_parquet(tmp_path / "table_spark" / "findings.parquet")["table_id"]) == {"T02"}
    bets_read = json.loads((tmp_path / "table_spark" / "summary.json").read_text())["bets_read"]
    assert bets_read == pl.read_parquet(data / "bets.parquet").filter(pl.col("round_id").str.starts_with("T02")).height


def test_spark_reads_and_numbers_csv_and_parquet_rows_as_polars_does(tmp_path):
    """Files Spark cuts into splits, read by several tasks, keep polars' row numbers (file, then row),
    files of one shape being read together, wherever they are in the log and whatever their names hold;
    and a CSV's broken rows (fields too many or too few, bytes that are not UTF-8) are read and numbered
    as polars reads them, with the same reasons, and a blank line is no row, yet counted in the numbers of
    the rows after it (Spark's CSV reader would number them one short)."""
    log = generate.generate(3_000, seed=5, fault_rate=0.0, tables=2)
    paths = generate.write(log, tmp_path / "log")
    pl.read_parquet(paths["parquet"]).write_parquet(tmp_path / "groups.parquet", row_group_size=200)
    header = ",".join(ingest.CARD_COLUMNS[:3] + ("round_id",) + ingest.CARD_COLUMNS[3:])
    (tmp_path / "broken.csv").write_bytes(
        f"{header}\nKS,9H,,R1,5D,QC,\nKS,9H,,R2,5D,QC,,extra\n\nKS,9H\n".encode()
        + b"K\xffS,9H,,R5,5D,QC,\n\"R6,x\",9H,,R6,5D,QC,\n")
    (tmp_path / "a b%").mkdir()
    shutil.copy(paths["csv"], tmp_path / "a b%" / "again.csv")
    # Names, not patterns: read as patterns they would match night1.csv and groups1.parquet instead. A ':'
    # in a file's name made Hadoop's local file system fail on its checksum file's (`.T01 22:00.csv.crc`).
    for name in ("night[1].csv", "night1.csv", "T01 22:00.csv"):
        shutil.copy(tmp_path / "broken.csv", tmp_path / name)
    pl.read_parquet(paths["parquet"]).head(5).write_parquet(tmp_path / "groups1.parquet")
    # A column of its own, and its columns in another order: read in one Spark read with groups.parquet.
    groups = pl.read_parquet(tmp_path / "groups.parquet").with_columns(note=pl.lit("x"))
    groups.select(reversed(groups.columns)).write_parquet(tmp_path / "groups[1].parquet", row_group_size=200)
    files = (paths["csv"], tmp_path / "groups.parquet", tmp_path / "broken.csv", tmp_path / "a b%" / "again.csv",
             tmp_path / "night[1].csv", tmp_path / "groups[1].parquet", tmp_path / "T01 22:00.csv")
    session = spark.session("local[2]")
    try:
        session.conf.set("spark.sql.files.maxPartitionBytes", "16384")
        session.conf.set("spark.sql.files.openCostInBytes", "0")
        for path in files[:2]:  # each file really is read in several splits
            splits = session.read.parquet(str(path)) if path.suffix == ".parquet" else session.read.text(str(path))
            assert splits.select("_metadata.file_block_start").distinct().count() >= 4, path
        columns = ["source_file", "source_row", "log_row", "malformed", "round_id", "player_card_1", "player_card_3"]
        log = ingest.scan([str(p) for p in files], "round_log")
        assert len({one.shape for one in log.opened if one.file_format == "parquet"}) == 1
        on_spark = pl.from_arrow(spark._read(session, log).select(*columns).toArrow()).sort("log_row")
    finally:
        session.stop()
    on_polars = log.frame.collect()
    log_row = pl.col("source_row").cast(pl.Int64) + pl.col("source_file").replace_strict(
        {str(path): i << 32 for i, path in enumerate(files)}, return_dtype=pl.Int64)
    assert on_spark.height == 12_015  # the three copies of broken.csv less their blank line
    assert on_spark.equals(on_polars.with_columns(log_row=log_row).select(columns).cast(on_spark.schema))
    # Rows 2, 4 and 5 have too many or too few fields or bytes that are not UTF-8; line 3, blank, is no row.
    assert on_spark.filter(pl.col("malformed").is_not_null())["source_row"].to_list() == [2, 4, 5] * 3
    assert 3 not in on_spark.filter(pl.col("source_file") == str(files[2]))["source_row"].to_list()
    assert on_spark.filter(pl.col("source_row") == 1)["source_file"].to_list() == [str(path) for path in files]


@pytest.mark.parametrize(("selection", "bets", "message"), [
    (Selection(), "span.csv", r"span\.csv: row 2 opens a quoted field that its line does not close"),
    (Selection(tables=("NO-SUCH-TABLE",)), None, r"no row is in the selection \(--table NO-SUCH-TABLE\)"),
])
def test_spark_stops_with_the_polars_engines_one_line(tmp_path, selection, bets, message):
    """Input the polars engine cannot audit stops the Spark engine with the same InputError (exit 2), not
    with a task's failure: a CSV bet record that spans lines (counted on the driver first) and a narrowing
    that keeps no row."""
    (tmp_path / "span.csv").write_text('round_id,bet_id,bet_type,stake,paid\nR1,B1,PLAYER,10,20\n"R\n1",B2,TIE,10,0\n')
    options = run.Options(validate=False, selection=selection, bets=bets and tmp_path / bets)
    with pytest.raises(InputError, match=message):
        spark.audit(ASSETS.parent.parent / "data" / "rounds.csv", tmp_path / "out", options, master="local[2]")


def test_a_path_spark_cannot_take_is_one_line(tmp_path):
    """Spark's reader takes `[]{}*?\\` as a pattern unless escaped, and a pattern's parts as names, which
    Hadoop cannot parse when they hold a ':'; such a path stops the run (exit 2), before Spark reads."""
    (tmp_path / "22:00").mkdir()
    shutil.copy(ASSETS / "mixed_notation.csv", tmp_path / "22:00" / "night[1].csv")
    with pytest.raises(InputError, match=r"night\[1\]\.csv: Spark's reader cannot take a path with both ':' "
                                         r"and one of \[\]\{\}\*\?\\; rename it, or audit it with --engine polars"):
        spark.audit(tmp_path / "22:00", tmp_path / "out", run.Options(validate=False), "local[1]")


def test_a_master_url_spark_cannot_take_is_one_line(tmp_path):
    """Spark's JVM would refuse it with a Java stack trace; the run stops first, with exit 2. (An
    unreachable master makes Spark give up after a minute; that one line is in the README.)"""
    with pytest.raises(InputError, match=r"--spark-master spark:/head:7077: expected local, local\[N\], spark://"):
        spark.audit(ASSETS / "mixed_notation.csv", tmp_path / "out", run.Options(validate=False), "spark:/head:7077")


def test_spark_reads_typed_columns_as_the_polars_engine_does(tmp_path):
    """Whole floats and decimals as whole numbers, NaN as not recorded, other floats as they are, and
    timestamps as ISO text in UTC (`ingest.as_text`)."""
    log = pl.read_csv(ASSETS / "mixed_notation.csv", infer_schema=False)
    hands = [1.0, 2.0, 2.5, float("nan"), 3.0, 5.0, None, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]
    dealt = [datetime(2026, 11, 1, 18, i, 0, 250000 * (i % 2), tzinfo=UTC) for i in range(log.height)][::-1]
    log.with_columns(pl.col("player_total").cast(pl.Float64, strict=False),
                     banker_total=pl.when(pl.int_range(pl.len()) == 0).then(pl.lit("9.50")).otherwise("banker_total")
                     .cast(pl.Decimal(38, 10), strict=False), shoe_id=pl.lit("S1"),
                     hand_no=pl.Series(hands[:log.height]), dealt_at=pl.Series(dealt)
                     ).write_parquet(tmp_path / "typed.parquet")
    options = run.Options(validate=False)
    spark.audit(tmp_path / "typed.parquet", tmp_path / "spark", options, master="local[2]")
    run.audit(tmp_path / "typed.parquet", tmp_path / "polars", options)
    for name in ("findings.parquet", "quarantine.parquet"):
        assert output(tmp_path / "spark" / name).equals(output(tmp_path / "polars" / name)), name
    findings = pl.read_parquet(tmp_path / "polars" / "findings.parquet")
    assert {("SHOE_SEQUENCE", "2.5"), ("BANKER_TOTAL", "9.5")} <= set(findings.select("check", "recorded").rows())
    assert not findings["recorded"].str.ends_with(".0").any()
    backwards = set(findings.filter(pl.col("check") == "TIMESTAMP")["recorded"])  # the text; dealt_at is a time
    assert {"2026-11-01T18:01:00.250000Z", "2026-11-01T18:02:00Z"} <= backwards


def _descendants(pid: int) -> set[int]:
    """The processes started, at any depth, by `pid` (from /proc)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def _is_java(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/exe").resolve().name == "java"
    return False


def test_a_stop_by_signal_ends_the_spark_driver_and_its_jvm(tmp_path):
    """`stops` ends the driver with os._exit, without stopping the session: Spark's JVM, started by the
    driver, must end with it (it does when its stdin closes), and the staging folder must be removed.
    (`communicate` returns only once the JVM, which shares the driver's stderr, has closed it too.)"""
    out = tmp_path / "out"
    log = ASSETS.parent.parent / "data" / "rounds.parquet"
    running = subprocess.Popen([sys.executable, "-m", "baccarat_audit", "audit", str(log), "--out", str(out),
                                "--engine", "spark", "--quiet", "--no-contract"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    started = time.monotonic()
    while running.poll() is None and not any(map(_is_java, _descendants(running.pid))):
        assert time.monotonic() - started < 120, "no JVM was started"
        time.sleep(0.1)
    time.sleep(3)  # the session under way
    jvm = _descendants(running.pid)
    running.send_signal(signal.SIGTERM)
    _, stderr = running.communicate(timeout=120)
    assert running.returncode == 2
    # Ours is the one line of the tool; a JVM still starting may add its own log after it.
    assert [line for line in stderr.splitlines() if line.startswith(("error:", "Traceback"))] == [
        "error: stopped by SIGTERM before the run completed"], stderr
    assert list(out.iterdir()) == []
    while jvm & {int(p.name) for p in Path("/proc").glob("[0-9]*")}:
        assert time.monotonic() - started < 240, "Spark's JVM outlived its driver"
        time.sleep(0.5)


#: Every file of data/layouts and the mapping it is read with; the bet log's rounds are a round layout.
LAYOUTS = {"nested_rounds.jsonl": "nested-json", "card_lists.json": "card-lists", "card_text.csv": "card-text",
           "card_json_text.csv": "card-json-text", "headerless.csv": "headerless", "one_table.csv": "one-table",
           "shoe_report.txt": "shoe-report", "card_events.csv": "card-events", "points.csv": "points",
           "no_ids.csv": "no-ids", "burn_records.jsonl": "burn-records", "bets_net.csv": "net-paid"}
AS_OF = datetime(2027, 1, 1, tzinfo=UTC)


def _same_as_polars(audit_of, out: Path) -> None:
    """`audit_of(engine, folder)` on both engines: the same outputs row for row, the same evidence and
    summary counts, and the same contract (a uniqueness expectation's examples aside: see the first test)."""
    audit_of(spark.audit, out / "spark")
    audit_of(run.audit, out / "polars")
    _same_outputs(out / "spark", out / "polars")
    for name in ("evidence.json", "flagged_rounds.csv"):
        assert (out / "spark" / name).read_bytes() == (out / "polars" / name).read_bytes(), name
    summaries = [json.loads((out / engine / "summary.json").read_text()) for engine in ("spark", "polars")]
    for summary in summaries:
        for role in summary.get("contract", {}).values():
            for met in role["expectations"]:
                met.pop("examples", None)
    assert summaries[0].get("contract") == summaries[1].get("contract")
    assert summaries[0]["tool"]["engine"] == "spark"


@pytest.mark.parametrize("sample", sorted(LAYOUTS))
def test_spark_reads_every_shipped_layout_with_its_mapping_as_the_polars_engine_does(tmp_path, sample):
    """A layout Spark's readers cannot take (JSON, card lists, a text report, card events, ids derived from
    the columns, payouts written net...) is read in Spark's tasks by the polars engine's reader, a span of
    a file each: the same rows, reasons and findings."""
    layouts = ASSETS.parent.parent / "data" / "layouts"
    assert {path.name for path in layouts.iterdir()} == set(LAYOUTS)  # a new layout needs its case here
    rounds, mapping = (layouts / "card_text.csv", "card-text") if sample == "bets_net.csv" else (layouts / sample,
                                                                                              LAYOUTS[sample])
    bets = {"bets": layouts / sample, "bets_mapping": ingest.load_mapping(LAYOUTS[sample], "bet_log")} \
        if sample == "bets_net.csv" else {}
    # The contract's view is made of the rows read (the first test holds it equal): asked of one log below.
    options = run.Options(mapping=ingest.load_mapping(mapping), as_of=AS_OF, validate=False, **bets)
    _same_as_polars(lambda engine, out: engine(rounds, out, options), tmp_path)
    found = pl.read_parquet(tmp_path / "spark" / "findings.parquet")
    assert {"BANKER_DRAW", "TIMESTAMP"} <= set(found["check"])  # faults seeded in every layout
    if bets:
        assert "SETTLEMENT" in set(found["check"])


def test_spark_reads_compressed_logs_and_json_lines_as_the_polars_engine_does(tmp_path):
    """A log of files compressed or not, CSV and JSON Lines, without a mapping: read in Spark's tasks by
    the polars engine's reader (through its decompressed copies), each file numbered by its lines."""
    import gzip

    rounds = pl.read_csv(ASSETS.parent.parent / "data" / "rounds.csv", infer_schema=False)
    night = tmp_path / "nights"
    night.mkdir()
    (night / "a.csv.gz").write_bytes(gzip.compress(rounds.head(150).write_csv().encode()))
    (night / "b.jsonl.gz").write_bytes(gzip.compress(rounds.slice(150, 150).write_ndjson().encode()))
    rounds.slice(300).write_ndjson(night / "c.jsonl")
    options = run.Options(as_of=AS_OF)
    _same_as_polars(lambda engine, out: engine(night, out, options), tmp_path)
    summary = json.loads((tmp_path / "spark" / "summary.json").read_text())
    assert summary["rows_read"] == rounds.height and summary["findings"]["DUPLICATE_ROUND"] > 0
    assert summary["contract"]["rounds"]["expectations"]


def test_spark_pairs_ids_that_differ_only_invisibly_as_the_polars_engine_does(tmp_path):
    """Copies of a round_id or a bet_id in another Unicode form (fullwidth, one id in NFKC) or with a
    zero-width space are one id on Spark too: its group-by is on the polars engine's id key, so the
    same DUPLICATE_ROUND and DUPLICATE_BET findings, and the same contract."""
    data = ASSETS.parent.parent / "data"
    rounds = pl.read_csv(data / "rounds.csv", infer_schema=False).head(300)
    bets = pl.read_csv(data / "bets.csv", infer_schema=False).filter(pl.col("round_id").is_in(rounds["round_id"].implode()))

    def wide(text: str) -> str:  # the fullwidth form of ASCII text, which NFKC makes ASCII again
        return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)
    round_ids, bet_ids = rounds["round_id"].to_list(), bets["bet_id"].to_list()
    round_ids[10], round_ids[20], bet_ids[3] = wide(round_ids[5]), round_ids[15] + "\u200b", wide(bet_ids[2])
    rounds.with_columns(round_id=pl.Series(round_ids)).write_csv(tmp_path / "rounds.csv")
    bets.with_columns(bet_id=pl.Series(bet_ids)).write_csv(tmp_path / "bets.csv")
    options = run.Options(bets=tmp_path / "bets.csv", as_of=AS_OF)
    _same_as_polars(lambda engine, out: engine(tmp_path / "rounds.csv", out, options), tmp_path)
    found = pl.read_parquet(tmp_path / "spark" / "findings.parquet")
    assert {*round_ids[5:21:5], round_ids[10]} <= set(found.filter(pl.col("check") == "DUPLICATE_ROUND")["round_id"])
    assert set(bet_ids[2:4]) <= set(found.filter(pl.col("check") == "DUPLICATE_BET")["bet_id"])


def test_nights_chained_by_after_on_spark_carry_and_find_what_the_polars_engine_does(tmp_path):
    """Three nights cut while every table deals a shoe, chained by --after, on each engine, and on both in
    turn (a night on Spark after one on polars, and the other way): each night's findings and open shoes
    are the polars engine's, and the chain finds the shoes' faults across the cuts."""
    log = generate.generate(3000, seed=12, fault_rate=0.02, tables=3)
    rows = pl.read_csv(generate.write(log, tmp_path / "log")["csv"], infer_schema=False).sort("dealt_at",
                                                                                          maintain_order=True)
    for night, cut in enumerate([rows.slice(0, 1000), rows.slice(1000, 1300), rows.slice(2300)], start=1):
        cut.write_csv(tmp_path / f"night{night}.csv")
    engines = {"spark": spark.audit, "polars": run.audit}
    for chain in (("spark", "spark", "spark"), ("polars", "spark", "polars")):
        before = None
        for night, engine in enumerate(chain, start=1):
            out = tmp_path / "-".join(chain) / f"night{night}"
            engines[engine](tmp_path / f"night{night}.csv", out, run.Options(validate=False, as_of=AS_OF, after=before))
            before = out
    for night in (1, 2, 3):
        outs = [tmp_path / "-".join(chain) / f"night{night}" for chain in (("spark",) * 3, ("polars", "spark", "polars"))]
        polars = tmp_path / "polars-only" / f"night{night}"
        run.audit(tmp_path / f"night{night}.csv", polars, run.Options(
            validate=False, as_of=AS_OF, after=night > 1 and tmp_path / "polars-only" / f"night{night - 1}" or None))
        for out in outs:
            assert output(out / "findings.parquet").equals(output(polars / "findings.parquet")), (out, night)
            expected = pl.read_parquet(polars / "open_shoes.parquet").drop("log_row")
            assert pl.read_parquet(out / "open_shoes.parquet").select(expected.columns).cast(expected.schema).equals(
                expected), (out, night)
            on_spark, on_polars = (json.loads((d / "summary.json").read_text()) for d in (out, polars))
            assert on_spark["open_shoes"] == on_polars["open_shoes"]
            assert on_spark.get("after", {}).get("shoes_carried") == on_polars.get("after", {}).get("shoes_carried")
    chained = pl.concat(pl.read_parquet(tmp_path / "spark-spark-spark" / f"night{n}" / "findings.parquet")
                        for n in (1, 2, 3))
    assert {"CARD_COUNT", "SHOE_SEQUENCE", "TIMESTAMP"} <= set(chained["check"])


def test_a_parquet_file_whose_pages_are_damaged_is_bad_input_on_spark_too(tmp_path):
    """Spark fails reading tests/assets/damaged_pages.parquet; the run names the file as the polars
    engine does (tests/test_trust.py), not as the tool's own failure."""
    log = tmp_path / "night.parquet"
    log.write_bytes((ASSETS / "damaged_pages.parquet").read_bytes())
    with pytest.raises(InputError, match=f"{log}: not a readable parquet file \\(Number of decoded rep"):
        spark.audit(log, tmp_path / "out", run.Options(validate=False))
    assert not (tmp_path / "out" / "summary.json").exists()


def test_spark_gives_the_golden_outputs_in_arrow_batches_of_a_few_rows(tmp_path):
    """The golden logs (tests/test_golden.py) audited on Spark, each Arrow batch 64 rows: a shoe's
    rounds come in many batches, and its findings are written up from columns in many chunks."""
    rounds, bets = _logs("parquet in row groups", tmp_path)
    spark.audit(rounds, tmp_path / "out", run.Options(bets=bets, tuning=Tuning(spark_batch_rows=64)))
    for name in TABLES:
        found = _comparable(pl.read_parquet(tmp_path / "out" / f"{name}.parquet"))
        assert_frame_equal(found, pl.read_csv(GOLDEN / f"expected_{name}.csv", schema=found.schema), check_exact=True)
    assert _summary(tmp_path / "out") == json.loads((GOLDEN / "expected_summary.json").read_text())
