"""The audit run on real files: generated shoes, and a hand-written log with every notation."""

import json
import os
import shutil
import subprocess
import sys
from dataclasses import replace

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from conftest import ASSETS, output
from datetime import UTC, datetime

from baccarat_audit.engines import run
from baccarat_audit.engines.staging import Queries, sink_in_log_order
from baccarat_audit import api, generate, tuning
from baccarat_audit.inputs import discover, ingest
from baccarat_audit.tuning import Tuning
from baccarat_audit.checks.round_checks import PER_ROUND
from baccarat_audit.checks.findings import in_log_order
from baccarat_audit.errors import InputError
from baccarat_audit.inputs.selection import Selection

QUICK = run.Options(validate=False)  # the contract has tests of its own (test_contract.py)
CUT = replace(QUICK, tuning=Tuning(piece_rows=777))  # a small log in many pieces


def _findings(out):
    return output(out / "findings.parquet")


def test_clean_shoe_faithful_log_has_no_findings(clean_log, tmp_path):
    result = run.audit(clean_log["parquet"], tmp_path, QUICK)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == result.summary
    assert summary["rows_read"] == summary["rounds_audited"] == 6000
    assert summary["rows_quarantined"] == summary["rounds_flagged"] == 0
    assert set(summary["findings"].values()) == {0}
    assert _findings(tmp_path).height == 0
    assert pl.read_parquet(tmp_path / "quarantine.parquet").height == 0
    assert result.exit_code == 0


@pytest.mark.parametrize("form", ["csv", "parquet"])
def test_faulted_rounds_are_flagged_exactly_with_their_codes(faulted_log, tmp_path, form):
    result = run.audit(faulted_log[form], tmp_path, QUICK)
    faults = pl.read_csv(faulted_log["faults"])
    findings = _findings(tmp_path)
    assert faults.height > 200
    assert set(faults.select("round_id", "check").iter_rows()) == set(findings.select("round_id", "check").iter_rows())
    # Every copy of a duplicated round_id is flagged, not only the second.
    duplicates = findings.filter(pl.col("check") == "DUPLICATE_ROUND")
    assert duplicates.height == 2 * faults.filter(pl.col("check") == "DUPLICATE_ROUND").height
    assert findings.filter(pl.col("check") != "DUPLICATE_ROUND").height == faults.height - duplicates.height // 2
    assert result.exit_code == 1
    assert result.summary["findings"] == dict(findings.group_by("check").len().iter_rows()) | {
        code: 0 for code in result.summary["findings"] if code not in set(findings["check"])
    }


def test_csv_and_parquet_give_identical_findings(faulted_log, tmp_path):
    run.audit(faulted_log["csv"], tmp_path / "csv", QUICK)
    run.audit(faulted_log["parquet"], tmp_path / "parquet", QUICK)
    assert _findings(tmp_path / "csv").drop("source_file").equals(_findings(tmp_path / "parquet").drop("source_file"))


def test_hand_written_log_with_every_notation(tmp_path):
    result = run.audit(ASSETS / "mixed_notation.csv", tmp_path, QUICK)
    findings = _findings(tmp_path)
    assert sorted(findings.select("source_row", "round_id", "check").iter_rows()) == [
        (1, "R1", "DUPLICATE_ROUND"),
        (2, "R2", "BANKER_DRAW"),
        (3, "R3", "OUTCOME"),
        (4, "R4", "PLAYER_DRAW"),
        (4, "R4", "PLAYER_TOTAL"),
        (5, "R5", "OUTCOME"),
        (10, "R1", "DUPLICATE_ROUND"),
        (12, "R11", "PLAYER_DRAW"),
    ]
    r4_total = findings.filter(pl.col("check") == "PLAYER_TOTAL").row(0, named=True)
    assert (r4_total["expected"], r4_total["recorded"]) == ("4", "15")
    r2 = findings.filter(pl.col("round_id") == "R2").row(0, named=True)
    assert r2["detail"].startswith("Player's third card 2S counts 2 and Banker opened on 4")
    assert r2["detail"].endswith("Banker must draw, but stood.")

    quarantine = pl.read_parquet(tmp_path / "quarantine.parquet")
    assert quarantine.select("source_row", "reason").rows() == [
        (6, "player_card_1 'XX' is not a card"),
        (7, "round_id is empty"),
        (8, "banker_card_1 is empty"),
        (9, "player_card_3 'ZZ' is not a card"),
    ]
    assert quarantine["player_card_1"].to_list() == ["XX", "9S", "9S", "2S"]
    s = result.summary
    assert (s["rows_read"], s["rounds_audited"], s["rows_quarantined"], s["rounds_flagged"]) == (13, 9, 4, 7)
    assert s["rows_read"] == s["rounds_audited"] + s["rows_quarantined"]
    assert s["findings"] == {"PLAYER_DRAW": 2, "BANKER_DRAW": 1, "PLAYER_TOTAL": 1, "BANKER_TOTAL": 0,
                             "OUTCOME": 2, "DUPLICATE_ROUND": 2, "CARD_COUNT": 0, "SHOE_SEQUENCE": 0,
                             "TIMESTAMP": 0, "TABLE_STATS": 0}
    assert s["checks"]["CARD_COUNT"] == "skipped: the log has no shoe_id column"


@pytest.mark.parametrize("outcome, agrees", [
    ("BANKER", True), ("banker", True), ("bAnKeR", True), ("b", True), ("Player", False), ("dragon", False),
    ("\uff22\uff21\uff2e\uff2b\uff25\uff32", False),  # fullwidth letters: no spelling
    ("b\u0430nker", False),  # a Cyrillic a
])
def test_a_recorded_outcome_is_read_in_any_case_alike_by_the_audit_and_explain(tmp_path, outcome, agrees):
    """Banker wins R1 on a natural 9, and a tie on two natural 9s is R2's, recorded as "t\u0131e" (a
    dotless i upper-cases to I): the audit's OUTCOME check and explain's comparison say the same of
    each spelling, in ASCII and outside it, side by side in one log."""
    log = tmp_path / "outcomes.csv"
    log.write_text("round_id,player_card_1,banker_card_1,player_card_2,banker_card_2,player_card_3,banker_card_3,"
                   f"outcome\nR1,KS,9H,5D,QC,,,{outcome}\nR2,9S,9H,KD,QC,,,t\u0131e\n", encoding="utf-8")
    run.audit(log, tmp_path / "out", QUICK)
    flagged = _findings(tmp_path / "out").filter(pl.col("check") == "OUTCOME")["round_id"].to_list()
    assert flagged == ([] if agrees else ["R1"])
    for round_id, expected in (("R1", agrees), ("R2", True)):
        [explained] = api.explain(log, round_id)
        assert [c["agrees"] for c in explained["comparisons"] if c["field"] == "outcome"] == [expected]


def test_checks_without_their_column_are_reported_as_skipped(tmp_path):
    log = pl.read_csv(ASSETS / "mixed_notation.csv", infer_schema=False).drop("outcome", "banker_total")
    log.write_parquet(tmp_path / "no_outcome.parquet")
    result = run.audit(tmp_path / "no_outcome.parquet", tmp_path / "out", QUICK)
    assert result.summary["checks"]["OUTCOME"] == "skipped: the log has no outcome column"
    assert result.summary["checks"]["BANKER_TOTAL"] == "skipped: the log has no banker_total column"
    assert result.summary["checks"]["PLAYER_TOTAL"] == "ran"
    assert result.summary["findings"]["OUTCOME"] == 0


def test_rerun_into_the_same_directory_replaces_the_result(faulted_log, clean_log, tmp_path):
    run.audit(faulted_log["parquet"], tmp_path, run.Options(data_docs=True))  # writes contract/
    run.audit(clean_log["parquet"], tmp_path, QUICK)
    assert _findings(tmp_path).height == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [".baccarat-audit.json", "evidence.json", "fairness.parquet",
                                                          "findings.parquet", "flagged_rounds.csv", "open_shoes.parquet",
                                                          "quarantine.parquet", "report.html", "summary.json"]


def test_a_rerun_that_dies_while_publishing_leaves_no_summary_beside_a_mix_of_outputs(
        faulted_log, clean_log, tmp_path, monkeypatch):
    """A nightly job reads summary.json first: a run killed among its moves (here, one that fails
    to move report.html) must not leave the earlier run's summary beside this run's findings."""
    run.audit(faulted_log["parquet"], tmp_path, QUICK)
    moved = os.replace

    def dies_at_the_report(source, target):
        if str(source).endswith("report.html"):
            raise OSError(28, "No space left on device")
        moved(source, target)
    monkeypatch.setattr(os, "replace", dies_at_the_report)
    with pytest.raises(OSError):
        run.audit(clean_log["parquet"], tmp_path, QUICK)
    assert _findings(tmp_path).height == 0  # this run's findings were moved in
    assert not (tmp_path / "summary.json").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".audit-")] == []


def _hive_folders(tmp_path) -> pl.DataFrame:
    """tmp_path/logs/table_id=T0n/date=2026-11-01/{a.parquet,b.csv}: tables T01 and T02 of the sample
    log, without their table_id column (200 rows in a.parquet, the rest in b.csv); returns the log."""
    log = pl.read_csv(ASSETS.parent.parent / "data" / "rounds.csv", infer_schema=False)
    for table in ("T01", "T02"):
        folder = tmp_path / "logs" / f"table_id={table}" / "date=2026-11-01"
        folder.mkdir(parents=True)
        part = log.filter(pl.col("table_id") == table).drop("table_id")
        part.head(200).write_parquet(folder / "a.parquet")
        part.slice(200).write_csv(folder / "b.csv")
    return log


def test_a_directory_of_hive_folders_is_one_log(tmp_path):
    """table_id comes from the folder names; every file is an input with its rows and SHA-256."""
    log = _hive_folders(tmp_path)
    whole = run.audit(tmp_path / "logs", tmp_path / "out", QUICK)
    alone = log.filter(pl.col("table_id").is_in(["T01", "T02"]))
    alone.write_csv(tmp_path / "alone.csv")
    single = run.audit(tmp_path / "alone.csv", tmp_path / "single", QUICK)
    assert whole.summary["rows_read"] == single.summary["rows_read"] == alone.height
    assert whole.summary["findings"] == single.summary["findings"]
    assert [i["rows"] for i in whole.summary["inputs"]] == [200, 300, 200, 300]
    tables = set(pl.read_parquet(tmp_path / "out" / "findings.parquet")["table_id"].drop_nulls())
    assert tables <= {"T01", "T02"} and tables


def test_a_table_selection_reads_only_the_hive_folders_of_that_table(tmp_path):
    """--table on Hive folders: the other tables' files are not read at all, and the audit is the one
    of that table's files alone; a table no folder names leaves one empty piece to audit."""
    _hive_folders(tmp_path)
    wanted = Selection(tables=("T02",))
    log = ingest.scan(tmp_path / "logs", "round_log", selection=wanted)
    read = set(pl.concat([piece.select("source_file").collect() for piece in log.pieces(1_000)])["source_file"])
    folder = tmp_path / "logs" / "table_id=T02" / "date=2026-11-01"
    assert read == {str(folder / "a.parquet"), str(folder / "b.csv")}
    assert log.rows_per_file[:2] == (0, 0) and all(log.rows_per_file[2:])
    narrowed = run.audit(tmp_path / "logs", tmp_path / "narrowed", run.Options(validate=False, selection=wanted))
    alone = run.audit(str(tmp_path / "logs" / "table_id=T02" / "*" / "*"), tmp_path / "alone", QUICK)
    assert narrowed.summary["rows_read"] == alone.summary["rows_read"] > 0
    assert narrowed.summary["findings"] == alone.summary["findings"]
    assert [i["rows_selected"] for i in narrowed.summary["inputs"]] == [0, 0, *(i["rows"] for i in alone.summary["inputs"])]
    # Each file's own rows beside its SHA-256: from the footer of a Parquet file ruled out unread, a CSV one's not counted.
    assert [i["rows"] for i in narrowed.summary["inputs"]] == [200, None, *(i["rows"] for i in alone.summary["inputs"])]
    nothing = ingest.scan(tmp_path / "logs", "round_log", selection=Selection(tables=("T09",)))
    assert [piece.collect().height for piece in nothing.pieces(1_000)] == [0]


def _nights(tmp_path) -> list:
    """tmp_path/nights/: the sample log dealt again on each of five nights, one Parquet file a night
    (2026-10-01 to 2026-10-05). The first night's file holds one round dealt on the third, stored with a
    space before it; the last night's one written "2026-10-3", which sorts after "2026-10-05"."""
    log = pl.read_parquet(ASSETS.parent.parent / "data" / "rounds.parquet")
    files = []
    for night in range(1, 6):
        dealt = log.with_columns(dealt_at=pl.lit(f"2026-10-0{night}") + pl.col("dealt_at").str.slice(10),
                                 round_id=pl.col("round_id") + f"-{night}", shoe_id=pl.col("shoe_id") + f"-{night}")
        stray = {1: " 2026-10-03T04:00:00Z", 5: "2026-10-3T05:00:00Z"}.get(night)
        if stray:
            dealt = dealt.with_columns(dealt_at=pl.when(pl.int_range(pl.len()) == 7).then(pl.lit(stray))
                                       .otherwise("dealt_at"))
        files.append(tmp_path / "nights" / f"2026-10-0{night}.parquet")
        files[-1].parent.mkdir(exist_ok=True)
        dealt.write_parquet(files[-1])
    return files


def test_a_time_window_reads_only_the_files_that_hold_rounds_in_it(tmp_path):
    """--since/--until over a folder of nightly files: the files with no round in the window are not
    read (Parquet files before it are skipped by their statistics), files with a stray round in it
    are, and the audit is that of the same files as CSV, each of which is parsed once to be tested
    (Parquet files: the few columns tested) and only those kept are read again and counted."""
    files = _nights(tmp_path)
    third = Selection(since=datetime(2026, 10, 3, tzinfo=UTC), until=datetime(2026, 10, 3, 23, 59, 59, tzinfo=UTC))
    log = ingest.scan(tmp_path / "nights", "round_log", selection=third)
    assert log.files_read == (files[0], files[2], files[4])
    assert [rows > 0 for rows in log.rows_per_file] == [True, False, True, False, True]
    (tmp_path / "csv").mkdir()
    for path in files:
        pl.read_parquet(path).write_csv(tmp_path / "csv" / path.with_suffix(".csv").name)
    csv_log = ingest.scan(tmp_path / "csv", "round_log", selection=third)
    assert [path.stem for path in csv_log.files_read] == [files[i].stem for i in (0, 2, 4)]
    assert [rows > 0 for rows in csv_log.rows_per_file] == [True, False, True, False, True]
    narrowed = run.audit(tmp_path / "nights", tmp_path / "narrowed", run.Options(validate=False, selection=third))
    every_row = run.audit(tmp_path / "csv", tmp_path / "every_row", run.Options(validate=False, selection=third))
    assert narrowed.summary["rows_read"] == every_row.summary["rows_read"] == 2000 + 2
    assert narrowed.summary["findings"] == every_row.summary["findings"]
    assert [i["rows_selected"] for i in narrowed.summary["inputs"]] == [1, 0, 2000, 0, 1]
    assert [i["rows"] for i in narrowed.summary["inputs"]] == [pl.read_parquet(path).height for path in files]
    assert _findings(tmp_path / "narrowed").drop("source_file").equals(_findings(tmp_path / "every_row").drop("source_file"))


def test_a_selection_reads_mapped_parquet_files_as_it_reads_the_mapped_csv(tmp_path):
    """A mapping renames the columns the test on stored text reads (table, time): the Parquet file
    with no round since 20:00 is ruled out, the other narrowed, and the audit is the CSV log's."""
    provider = pl.read_csv(ASSETS.parent.parent / "data" / "provider_b_rounds.csv", infer_schema=False)
    (tmp_path / "logs").mkdir()
    provider.head(100).write_parquet(tmp_path / "logs" / "a.parquet")  # dealt 18:00 to 19:22
    provider.slice(100).write_parquet(tmp_path / "logs" / "b.parquet")
    evening = Selection(tables=("T01",), since=datetime(2026, 11, 1, 20, tzinfo=UTC))
    options = run.Options(validate=False, mapping=ingest.load_mapping("provider-b"), selection=evening)
    assert ingest.scan(tmp_path / "logs", "round_log", options.mapping, evening).ruled_out == (True, False)
    parquet = run.audit(tmp_path / "logs", tmp_path / "parquet", options)
    csv = run.audit(ASSETS.parent.parent / "data" / "provider_b_rounds.csv", tmp_path / "csv", options)
    expected = provider.filter(pl.col("time") >= "2026-11-01T20:00:00Z").height
    assert parquet.summary["rows_read"] == csv.summary["rows_read"] == expected > 0
    same = ["round_id", "check", "expected", "recorded"]
    assert _findings(tmp_path / "parquet").select(same).equals(_findings(tmp_path / "csv").select(same))
    assert parquet.summary["rounds_flagged"] > 0


def test_a_selection_narrows_the_log_before_the_audit(tmp_path):
    data = ASSETS.parent.parent / "data"
    narrowed = run.audit(str(data / "round*.parquet"), tmp_path, run.Options(
        validate=False, selection=Selection(tables=("T02",), until=datetime(2026, 11, 1, 20, tzinfo=UTC))))
    expected = pl.read_parquet(data / "rounds.parquet").filter(
        (pl.col("table_id") == "T02") & (pl.col("dealt_at") <= "2026-11-01T20:00:00Z")).height
    assert narrowed.summary["rows_read"] == expected > 0
    assert narrowed.summary["selection"]["tables"] == ["T02"]


@pytest.mark.parametrize("file_format", ["parquet", "csv"])
def test_a_log_staged_in_pieces_gives_the_same_outputs(faulted_log, file_format, tmp_path):
    """Logs are read in pieces of `Tuning.piece_rows` rows; where the cuts fall must change nothing."""
    whole = run.audit(faulted_log[file_format], tmp_path / "whole", QUICK)
    cut = run.audit(faulted_log[file_format], tmp_path / "cut", CUT)
    assert whole.summary["findings"] == cut.summary["findings"] and cut.summary["rounds_flagged"] > 0
    for name in ("findings.parquet", "quarantine.parquet"):
        assert output(tmp_path / "whole" / name).equals(output(tmp_path / "cut" / name))
    # Expected counts are summed in a fixed order (fairness.group_counts): equal to the last bit.
    assert_frame_equal(pl.read_parquet(tmp_path / "whole" / "fairness.parquet"),
                       pl.read_parquet(tmp_path / "cut" / "fairness.parquet"), check_exact=True)


@pytest.mark.parametrize("file_format", ["parquet", "csv"])
def test_a_narrowed_log_read_in_pieces_gives_the_same_outputs(faulted_log, file_format, tmp_path):
    """A narrowed Parquet piece is cut by row number in its filter, not by a slice: where the cuts fall
    must change nothing, and the rows kept are those the narrowing keeps."""
    table = pl.read_parquet(faulted_log["parquet"]).filter(pl.col("table_id").is_not_null())["table_id"][0]
    narrowed = run.Options(validate=False, selection=Selection(tables=(table,)))
    whole = run.audit(faulted_log[file_format], tmp_path / "whole", narrowed)
    cut = run.audit(faulted_log[file_format], tmp_path / "cut", replace(narrowed, tuning=CUT.tuning))
    expected = pl.read_parquet(faulted_log["parquet"]).filter(pl.col("table_id").str.strip_chars() == table).height
    assert whole.summary["rows_read"] == cut.summary["rows_read"] == expected > 0
    assert whole.summary["findings"] == cut.summary["findings"] and cut.summary["rounds_flagged"] > 0
    for name in ("findings.parquet", "quarantine.parquet"):
        assert output(tmp_path / "whole" / name).equals(output(tmp_path / "cut" / name))


@pytest.mark.parametrize("quarantined", [0, 2])
def test_a_log_whose_every_round_is_found_gives_the_same_outputs_in_pieces(faulted_log, quarantined, tmp_path):
    """A table that logs one hand_no for every hand: every round is a SHOE_SEQUENCE finding. Found rounds
    are written up a piece at a time and put in order a few at a time (more than `filing_rows` a piece,
    so the pieces sorted are smaller than the log's), one piece of the log wholly quarantined (the
    third: found rounds are filed by a binary search of the pieces' starts, where an empty piece must
    not break the order): the outputs are those of the log in one piece."""
    log = pl.read_parquet(faulted_log["parquet"]).with_columns(hand_no=pl.lit("1"))
    log = log.with_columns(player_card_1=pl.when(pl.int_range(pl.len()) // 777 == quarantined)
                           .then(pl.lit("ZZ")).otherwise("player_card_1"))
    log.write_parquet(tmp_path / "rounds.parquet")
    whole = run.audit(tmp_path / "rounds.parquet", tmp_path / "whole", QUICK)
    cut = run.audit(tmp_path / "rounds.parquet", tmp_path / "cut",
                    replace(QUICK, tuning=Tuning(piece_rows=777, filing_rows=100)))
    assert whole.summary["findings"]["SHOE_SEQUENCE"] > 100 * log.height // 777
    assert whole.summary["rows_quarantined"] >= 776
    assert whole.summary["findings"] == cut.summary["findings"]
    # Counted at once in one, a part of the rows at a time in the other (more findings than a piece).
    assert whole.summary["rounds_flagged"] == cut.summary["rounds_flagged"] < sum(cut.summary["findings"].values())
    for name in ("findings.parquet", "quarantine.parquet"):
        assert output(tmp_path / "whole" / name).equals(output(tmp_path / "cut" / name)), name


def test_a_log_exported_twice_gives_the_same_outputs_in_pieces(faulted_log, tmp_path):
    """Two files of the same rounds: every card of every shoe is over its decks, so CARD_COUNT puts every
    card in deal order, a group of cards at a time (one group in one piece, sixteen in pieces of 777)."""
    (tmp_path / "logs").mkdir()
    for name in ("a.parquet", "b.parquet"):
        shutil.copy(faulted_log["parquet"], tmp_path / "logs" / name)
    whole = run.audit(tmp_path / "logs", tmp_path / "whole", QUICK)
    cut = run.audit(tmp_path / "logs", tmp_path / "cut", CUT)
    shoes = pl.read_parquet(faulted_log["parquet"])["shoe_id"].n_unique()
    assert whole.summary["findings"]["CARD_COUNT"] > 20 * shoes
    assert whole.summary["findings"] == cut.summary["findings"]
    for name in ("findings.parquet", "quarantine.parquet"):
        assert output(tmp_path / "whole" / name).equals(output(tmp_path / "cut" / name)), name


@pytest.mark.parametrize("plans", [None, 2])
def test_many_small_files_share_pieces_and_audit_as_the_log_they_were_cut_from(faulted_log, plans, tmp_path):
    """Files smaller than a piece are read together (a few queries per piece, not per file), larger ones
    are cut; CSV and Parquet mixed. The findings are the whole log's, file and row aside. With `plans`,
    a piece reads by at most that many plans (see `Tuning.plans`: one per format here, and one per file
    cut), so it is cut in more pieces."""
    whole = run.audit(faulted_log["parquet"], tmp_path / "whole", QUICK)
    log, sizes, start = pl.read_parquet(faulted_log["parquet"]), [50, 300, 1200, 10, 7, 90], 0
    (tmp_path / "logs").mkdir()
    for i in range(10_000):
        if start >= log.height:
            break
        part = log.slice(start, sizes[i % len(sizes)])
        part.write_csv(tmp_path / "logs" / f"{i:03d}.csv") if i % 2 else part.write_parquet(
            tmp_path / "logs" / f"{i:03d}.parquet")
        start += part.height
    sizes = Tuning(piece_rows=777, plans=plans or Tuning().plans)
    files = len(list((tmp_path / "logs").iterdir()))
    with tuning.using(sizes):
        pieces = len(list(ingest.scan(tmp_path / "logs", "round_log").pieces(777)))
    assert (pieces <= 2 * log.height // 777 + 1 < files) if plans is None else (files // plans <= pieces < files)
    cut = run.audit(tmp_path / "logs", tmp_path / "cut", replace(QUICK, tuning=sizes))
    assert cut.summary["findings"] == whole.summary["findings"] and cut.summary["rounds_flagged"] > 0
    for name in ("findings.parquet", "quarantine.parquet"):
        found = [output(tmp_path / out / name).drop("source_file", "source_row").sort(pl.all())
                 for out in ("whole", "cut")]
        assert found[0].equals(found[1]), name
    # Each file's rows in row order, the files by name, across the pieces they were sorted in.
    per_round = pl.read_parquet(tmp_path / "cut" / "findings.parquet").filter(
        pl.col("check").is_in([check.code for check in PER_ROUND]))
    assert per_round["source_file"].n_unique() > 2 and per_round.equals(in_log_order(per_round))


def test_rounds_flagged_counts_rows_of_every_file(clean_log, tmp_path):
    """The same log in two files: every round_id is on two rows, and each row of each file is flagged."""
    for name in ("a", "b"):
        (tmp_path / "logs").mkdir(exist_ok=True)
        (tmp_path / "logs" / f"{name}.parquet").write_bytes(clean_log["parquet"].read_bytes())
    result = run.audit(tmp_path / "logs", tmp_path / "out", QUICK)
    assert result.summary["findings"]["DUPLICATE_ROUND"] == result.summary["rows_read"] == 12000
    assert result.summary["rounds_flagged"] == 12000


def test_a_selection_that_matches_nothing_stops_the_run_rather_than_pass_as_clean(tmp_path):
    data = ASSETS.parent.parent / "data"
    with pytest.raises(InputError, match=r"rounds\.csv: no row is in the selection \(--table NO-SUCH-TABLE\)"):
        run.audit(data / "rounds.csv", tmp_path, run.Options(
            validate=False, selection=Selection(tables=("NO-SUCH-TABLE",))))
    assert list(tmp_path.iterdir()) == []  # no outputs, and the staging folder removed


def test_a_log_of_which_every_row_is_quarantined_audits_no_round(tmp_path):
    log = tmp_path / "rounds.csv"
    log.write_text("round_id,shoe_id,player_card_1,player_card_2,player_card_3,banker_card_1,banker_card_2,banker_card_3\n"
                   "R1,S1,XX,2,,3,4,\n")  # no suits, and no round to tell them by
    result = run.audit(log, tmp_path / "out", run.Options(validate=False))
    assert (result.summary["rows_read"], result.summary["rounds_audited"], result.summary["rows_quarantined"],
            result.exit_code) == (1, 0, 1, 1)
    assert result.summary["checks"]["CARD_COUNT"] == "ran"  # not "the log records no suits"


def test_a_narrowed_audit_settles_the_bets_of_the_rounds_it_keeps_only(tmp_path):
    """The other bets are outside the question, not bets of rounds missing from the log: the narrowed
    audit reports of T01's bets exactly what the whole audit reports of them, and nothing of the rest."""
    data = ASSETS.parent.parent / "data"
    whole = run.audit(data / "rounds.csv", tmp_path / "whole", run.Options(bets=data / "bets.csv"))
    narrowed = run.audit(data / "rounds.csv", tmp_path / "t01", run.Options(
        bets=data / "bets.csv", selection=Selection(tables=("T01",))))
    of_t01 = pl.col("round_id").str.starts_with("T01-")
    bets = pl.read_csv(data / "bets.csv", infer_schema=False)
    assert narrowed.summary["bets_read"] == bets.filter(of_t01).height < whole.summary["bets_read"]
    for name in ("bets_quarantine.parquet", "findings.parquet"):
        found = {out: output(tmp_path / out / name).filter(pl.col("bet_id").is_not_null())
                 for out in ("whole", "t01")}
        assert found["t01"].height and found["t01"].equals(found["whole"].filter(of_t01)), name
    assert narrowed.summary["contract"]["bets"]["expectations"][1]["element_count"] == narrowed.summary["bets_read"]
    # A narrowing that keeps no bet: none read, settled or flagged, and the bet outputs there, empty.
    bets.filter(of_t01).write_csv(tmp_path / "t01_bets.csv")
    none = run.audit(data / "rounds.csv", tmp_path / "t02", run.Options(
        bets=tmp_path / "t01_bets.csv", selection=Selection(tables=("T02",))))
    assert (none.summary["bets_read"], none.summary["bets_settled"], none.summary["bets_flagged"]) == (0, 0, 0)
    assert output(tmp_path / "t02" / "bets_quarantine.parquet").height == 0
    assert not output(tmp_path / "t02" / "findings.parquet").filter(pl.col("bet_id").is_not_null()).height


def test_an_audit_written_into_its_log_folder_is_not_read_as_log_by_the_next(tmp_path):
    """The audit's outputs, in the log's folder or below it, are not logs, even without their
    summary.json (a run killed while publishing); a file merely named findings.parquet still is read."""
    folder = tmp_path / "logs"
    folder.mkdir()
    pl.read_parquet(ASSETS.parent.parent / "data" / "rounds.parquet").write_parquet(folder / "rounds.parquet")
    for out in (folder, folder / "out", folder, folder / "out"):
        result = run.audit(folder, out, run.Options(validate=False))
        assert [entry["path"] for entry in result.summary["inputs"]] == [str(folder / "rounds.parquet")]
    assert discover.expand(f"{folder}/**/*.parquet")[1] == [folder / "rounds.parquet"]
    (folder / "out" / "summary.json").unlink()
    assert discover.expand(folder)[1] == [folder / "rounds.parquet"]
    other = tmp_path / "other"
    other.mkdir()
    (folder / "out" / "findings.parquet").rename(other / "findings.parquet")
    assert discover.expand(tmp_path)[1] == [folder / "rounds.parquet", other / "findings.parquet"]


def test_evidence_holds_the_first_findings_of_each_check_in_the_order_they_occur(tmp_path):
    """evidence.json: per check, in the order checks first occur in findings.parquet, that check's
    first findings there, in order (the rows explained), bets' settlement findings among them."""
    from baccarat_audit.outputs import evidence

    paths = generate.write(generate.generate(3000, seed=23, fault_rate=0.05, with_bets=True), tmp_path / "log")
    run.audit(paths["parquet"], tmp_path / "out", run.Options(validate=False, bets=paths["bets_parquet"]))
    found = _findings(tmp_path / "out").with_row_index("at")
    wanted = found.group_by("check", maintain_order=True).head(evidence.PER_CHECK)
    gathered = json.loads((tmp_path / "out" / "evidence.json").read_text())
    assert list(gathered) == wanted["check"].unique(maintain_order=True).to_list()
    assert "SETTLEMENT" in gathered and len(gathered) > 5
    assert [(e["check"], e["source_file"], e["source_row"], e["bet_id"]) for entries in gathered.values()
            for e in entries] == list(wanted.select("check", "source_file", "source_row", "bet_id").iter_rows())


def test_evidence_read_again_from_pieces_of_the_log_is_the_same_whatever_the_pieces(tmp_path):
    """The rows the evidence explains are read again from the pieces of the log that hold them (the
    staged rows keep no text of cards): cut in pieces of 64 rows, the explained rounds and their bets
    are in many pieces, and evidence.json is the one of a log read in one piece, each round explained."""
    paths = generate.write(generate.generate(3000, seed=23, fault_rate=0.05, with_bets=True), tmp_path / "log")
    gathered = []
    for name, sizes in (("whole", Tuning()), ("pieces", Tuning(read_rows=64, bet_rows=64))):
        run.audit(paths["csv"], tmp_path / name, run.Options(validate=False, bets=paths["bets_csv"], tuning=sizes))
        gathered.append(json.loads((tmp_path / name / "evidence.json").read_text()))
    assert gathered[0] == gathered[1]
    on_rounds = [e for entries in gathered[1].values() for e in entries if e["source"] == "rounds"]
    assert len(on_rounds) > 10 and all(e["explanation"]["round_id"] == e["round_id"] for e in on_rounds)
    settled = gathered[1]["SETTLEMENT"]
    assert settled and all(e["explanation"] is not None and e["bets"] for e in settled)


def test_polars_reads_one_row_group_ahead_during_an_audit_and_as_before_after_it(tmp_path, monkeypatch):
    """The read-ahead is the audit's, not the importer's: set around a run, and a value the
    environment gives wins. Importing the package leaves the environment alone."""
    imported = subprocess.run([sys.executable, "-c", f"import os, baccarat_audit.engines.run, baccarat_audit.cli; "
                               f"print(os.environ.get('{ingest.PREFETCH}'))"],
                              env={k: v for k, v in os.environ.items() if k != ingest.PREFETCH},
                              capture_output=True, text=True, check=True)
    assert imported.stdout.strip() == "None"
    seen, collect = [], ingest.collect
    monkeypatch.setattr(ingest, "collect", lambda *args: seen.append(os.environ.get(ingest.PREFETCH)) or collect(*args))
    rounds = ASSETS.parent.parent / "data" / "rounds.csv"
    monkeypatch.delenv(ingest.PREFETCH, raising=False)
    run.audit(rounds, tmp_path / "a", QUICK)
    assert seen and set(seen) == {"1"}
    assert ingest.PREFETCH not in os.environ
    seen.clear()
    monkeypatch.setenv(ingest.PREFETCH, "4")
    run.audit(rounds, tmp_path / "b", QUICK)
    assert seen and set(seen) == {"4"}
    assert os.environ[ingest.PREFETCH] == "4"


def test_runs_that_overlap_read_one_row_group_ahead_until_the_last_of_them_ends(monkeypatch):
    """Two runs in threads of one process: the first to end leaves the setting to the one still
    running, and the last removes it; a setting the environment gives is left alone."""
    monkeypatch.delenv(ingest.PREFETCH, raising=False)
    first, second = ingest.one_row_group_ahead(), ingest.one_row_group_ahead()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert os.environ.get(ingest.PREFETCH) == "1"
    second.__exit__(None, None, None)
    assert ingest.PREFETCH not in os.environ
    monkeypatch.setenv(ingest.PREFETCH, "4")
    with ingest.one_row_group_ahead():
        assert os.environ[ingest.PREFETCH] == "4"
    assert os.environ[ingest.PREFETCH] == "4"


@pytest.mark.parametrize("filing_rows", [5, 19])
def test_rows_sunk_in_log_order_come_out_once_each_by_file_and_row_wherever_the_pieces_fall(
        tmp_path, filing_rows):
    """Findings are filed by the piece of the log their row is in, a few rows at a time, each piece
    sorted alone, and the pieces joined: every row comes out once, the files by name and each file's
    rows in order, for files cut into several pieces, ending at a piece's end, and sharing a piece with
    the next; grouped first, each group in that order. Rows that fit in one filing are sorted at once."""
    rounds = pl.read_csv(ASSETS.parent.parent / "data" / "rounds.csv", infer_schema=False)
    (tmp_path / "logs").mkdir()
    rounds.head(6).write_csv(tmp_path / "logs" / "b.csv")
    rounds.slice(6, 9).write_parquet(tmp_path / "logs" / "a.parquet")
    rounds.slice(15, 4).write_csv(tmp_path / "logs" / "c.csv")
    log = ingest.scan(tmp_path / "logs", "round_log")
    every = log.frame.select("source_file", "source_row",
                             kind=(pl.col("source_row") * 7 % 3).cast(pl.UInt8)).collect()
    shuffled = every.sample(fraction=1, shuffle=True, seed=1)
    files = [tmp_path / "rows-1.parquet", tmp_path / "rows-2.parquet"]  # filed 5 rows at a time: the first sliced
    shuffled.head(12).write_parquet(files[0])
    shuffled.tail(7).write_parquet(files[1])
    (tmp_path / "staging").mkdir()
    queries = Queries(tmp_path / "staging")
    with tuning.using(Tuning(piece_rows=3, filing_rows=filing_rows)):
        sink_in_log_order(pl.scan_parquet(files), log, "rows.parquet", queries)
        sink_in_log_order(pl.scan_parquet(files), log, "grouped.parquet", queries, first_by="kind")
    assert every.height == 19 and every["kind"].n_unique() == 3
    assert pl.read_parquet(tmp_path / "staging" / "rows.parquet").equals(every.sort("source_file", "source_row"))
    assert pl.read_parquet(tmp_path / "staging" / "grouped.parquet").equals(
        every.sort("kind", "source_file", "source_row").drop("kind"))
    # A row of no file of the log (or past its end) has no piece: the run fails rather than lose it.
    stray = pl.concat([shuffled, every.head(1).with_columns(source_row=pl.lit(99, pl.UInt32))])
    if filing_rows < stray.height:
        with tuning.using(Tuning(piece_rows=3, filing_rows=filing_rows)), pytest.raises(
                RuntimeError, match="1 of 20 rows are not in any piece"):
            sink_in_log_order(stray.lazy(), log, "stray.parquet", queries)


def test_an_output_folder_whose_name_looks_like_a_glob_holds_the_same_outputs(tmp_path):
    """`out[1]` is a name: the audit's own files read back from it as a pattern matched `out1` (here an
    earlier audit's folder), or nothing, and the audit failed. Bets, the contract, pieces, and parts
    filed by bucket read back every kind of file the audit writes for itself."""
    log = generate.write(generate.generate(3000, seed=23, fault_rate=0.05, with_bets=True), tmp_path / "log")
    sizes = Tuning(piece_rows=777, fan_out=3)
    plain = run.audit(log["parquet"], tmp_path / "plain",
                      run.Options(validate=False, bets=log["bets_parquet"], tuning=sizes))
    run.audit(ASSETS / "mixed_notation.csv", tmp_path / "out1", QUICK)
    named = run.audit(log["parquet"], tmp_path / "out[1]",
                      run.Options(bets=log["bets_parquet"], data_docs=True, tuning=sizes)).summary
    assert named["exit_code"] == plain.summary["exit_code"] == 1 and named["bets_settled"] > 0
    for key in ("rows_read", "findings", "bets_flagged", "money"):
        assert named[key] == plain.summary[key], key
    counted = {e.get("element_count") for e in named["contract"]["rounds"]["expectations"]} - {None}
    assert counted == {named["rows_read"]}  # every staged piece read back by the contract
    assert (tmp_path / "out[1]" / "contract" / "index.html").is_file()
    for name in ("findings.parquet", "quarantine.parquet", "bets_quarantine.parquet", "fairness.parquet"):
        kept = output(tmp_path / "out[1]" / name)  # read as a pattern, it would be out1's
        assert kept.equals(output(tmp_path / "plain" / name)), name
    assert (tmp_path / "out[1]" / "report.html").read_text().count("<h2>") == (
        tmp_path / "plain" / "report.html").read_text().count("<h2>")


def test_a_library_that_cannot_be_preloaded_prints_nothing_in_the_background():
    """A failed import in the preloading thread would print a traceback beside the run's one line; the
    import fails again where the module is needed, and is reported there."""
    script = ("from baccarat_audit.engines.preload import preload\n"
              "import sys\n"
              "preload('no_such_library', 'decimal').join()\n"
              "print('decimal' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "True\n", "")


def test_findings_are_typed_and_carry_the_run_id(tmp_path):
    """A scheduler loads findings.parquet as it is: rows and hands as integers, dealt_at as a UTC time,
    each finding with the run_id of summary.json; a hand_no or dealt_at the log spelt wrong is null
    there, and quoted by the finding that says so."""
    rounds = pl.read_csv(ASSETS.parent.parent / "data" / "rounds.csv", infer_schema=False).with_columns(
        hand_no=pl.when(pl.int_range(pl.len()) == 30).then(pl.lit("3rd")).otherwise("hand_no"),
        dealt_at=pl.when(pl.int_range(pl.len()) == 40).then(pl.lit("yesterday")).otherwise("dealt_at"))
    rounds.write_csv(tmp_path / "rounds.csv")
    result = run.audit(tmp_path / "rounds.csv", tmp_path / "out", QUICK)
    found = pl.read_parquet(tmp_path / "out" / "findings.parquet")
    assert {"run_id": pl.String, "source_row": pl.UInt32, "hand_no": pl.Int64,
            "dealt_at": pl.Datetime("us", "UTC")}.items() <= dict(found.schema).items()
    assert found["run_id"].unique().to_list() == [result.summary["run_id"]]
    spelt = found.filter(pl.col("source_row") == 31, pl.col("check") == "SHOE_SEQUENCE")
    assert spelt["hand_no"].to_list() == [None] and spelt["recorded"].to_list() == ["3rd"]
    unreadable = found.filter(pl.col("source_row") == 41, pl.col("check") == "TIMESTAMP")
    assert unreadable["dealt_at"].to_list() == [None] and "yesterday" in unreadable["detail"][0]
    first = found.filter(pl.col("source") == "rounds", pl.col("dealt_at").is_not_null()).row(0, named=True)
    assert first["dealt_at"].strftime("%Y-%m-%dT%H:%M:%SZ") == rounds["dealt_at"][first["source_row"] - 1]


def test_tuning_sizes_are_whole_numbers_of_at_least_one():
    with pytest.raises(ValueError, match="Tuning.piece_rows must be a whole number of at least 1, not 0"):
        Tuning(piece_rows=0)
    with pytest.raises(ValueError, match="Tuning.plans must be a whole number of at least 1, not 2.5"):
        Tuning(plans=2.5)
    assert run.Options().tuning == Tuning()  # a run's sizes are the measured defaults unless given


def test_the_progress_names_each_step_and_counts_the_parts_of_those_done_in_parts(tmp_path):
    """What a person watching a long run sees: each step by name, in order, and the parts of the read and
    of the search for repeated round_ids as they are done (the run sat on "checking across rounds" alone)."""
    said: list[tuple] = []
    data = ASSETS.parent.parent / "data"
    options = run.Options(bets=data / "bets.csv", on_phase=lambda phase, done=None, total=None: said.append(
        (phase, done, total)), tuning=Tuning(read_rows=300, piece_rows=300, fan_out=3))
    run.audit(data / "rounds.csv", tmp_path / "out", options)
    steps = list(dict.fromkeys(phase for phase, _, _ in said))
    assert steps == ["reading and checking each round", "checking across rounds: repeated round_ids",
                     "checking across rounds: shoes (CARD_COUNT, SHOE_SEQUENCE, TIMESTAMP)",
                     "settling the bets beside their rounds", "fairness statistics", "writing the findings in log order",
                     "input contract", "report"]
    for step in steps[:2]:
        parts = [(done, total) for phase, done, total in said if phase == step and total is not None]
        assert len(parts) > 1 and [done for done, _ in parts] == list(range(parts[0][1])), step
