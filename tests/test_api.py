"""The library as a notebook or an orchestrator calls it: `baccarat_audit.audit`, `explain` and `odds`."""

import json
from datetime import UTC, datetime
import tempfile
from fractions import Fraction
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import baccarat_audit
from baccarat_audit.outputs import explanation
from baccarat_audit.cli import app

DATA = Path(__file__).resolve().parent.parent / "data"
AS_OF = "2026-12-01T00:00:00+00:00"


def _placed(frame: pl.DataFrame) -> pl.DataFrame:
    """Findings as two runs of the same rows compare: without the run's id and the file's name."""
    return frame.drop("run_id", "source_file", strict=False)


def test_audit_of_paths_returns_its_outputs_as_frames_and_writes_them_where_asked(tmp_path):
    done = baccarat_audit.audit(DATA / "rounds.parquet", bets=DATA / "bets.parquet", out_dir=tmp_path / "out")
    assert done.exit_code == 1 and done.out_dir == tmp_path / "out"  # the sample's seeded faults
    assert done.summary == json.loads((tmp_path / "out" / "summary.json").read_text())
    for name in ("findings", "quarantine", "bets_quarantine", "fairness"):
        assert getattr(done, name).equals(pl.read_parquet(tmp_path / "out" / f"{name}.parquet")), name
    assert done.findings.height == sum(done.summary["findings"].values())
    assert {"SETTLEMENT", "PLAYER_DRAW"} <= set(done.findings["check"])
    assert done.quarantine.height == done.summary["rows_quarantined"]
    assert done.findings.schema["hand_no"] == pl.Int64  # typed, as findings.parquet is


def test_audit_of_frames_finds_what_the_audit_of_their_files_finds(tmp_path):
    rounds, bets = pl.read_parquet(DATA / "rounds.parquet"), pl.read_parquet(DATA / "bets.parquet")
    of_frames = baccarat_audit.audit(rounds.lazy(), bets=bets, contract=False)
    of_files = baccarat_audit.audit(DATA / "rounds.parquet", bets=DATA / "bets.parquet", contract=False)
    assert of_frames.out_dir is None and of_frames.summary["rows_read"] == rounds.height
    assert _placed(of_frames.findings).equals(_placed(of_files.findings))
    assert _placed(of_frames.quarantine).equals(_placed(of_files.quarantine))
    assert _placed(of_frames.bets_quarantine).equals(_placed(of_files.bets_quarantine))
    assert of_frames.summary["findings"] == of_files.summary["findings"]
    assert "contract" not in of_frames.summary


def test_a_row_that_cannot_be_replayed_comes_back_quarantined_and_fail_on_chooses_what_flags_the_run():
    rounds = pl.read_parquet(DATA / "rounds.parquet").with_row_index()
    rounds = rounds.with_columns(player_card_1=pl.when(pl.col("index") == 6).then(pl.lit("ZZ"))
                                 .otherwise(pl.col("player_card_1"))).drop("index")
    quarantined = baccarat_audit.audit(rounds, fail_on=("quarantine",), contract=False)
    assert quarantined.exit_code == 1 and quarantined.summary["rows_quarantined"] == 1
    assert quarantined.quarantine.select("source_row", "reason").row(0) == (7, "player_card_1 'ZZ' is not a card")
    assert quarantined.bets_quarantine is None  # no bets were given, none audited
    neither = baccarat_audit.audit(rounds, fail_on=(), contract=False)
    assert neither.findings.height > 0 and neither.exit_code == 0


def test_a_bad_log_raises_the_error_the_command_line_prints_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(baccarat_audit.InputError, match="rounds.parquet: required column round_id, player_card_1"):
        baccarat_audit.audit(pl.DataFrame({"table_id": ["T1"]}))
    baccarat_audit.audit(pl.read_parquet(DATA / "rounds.parquet"), contract=False)
    assert not list(tmp_path.iterdir())


def test_explain_gives_what_explain_json_prints():
    flagged = baccarat_audit.audit(DATA / "rounds.parquet", contract=False).findings
    round_id = flagged.filter(pl.col("check") == "BANKER_DRAW")["round_id"][0]
    explained = baccarat_audit.explain(DATA / "rounds.csv", round_id, bets=DATA / "bets.csv")
    printed = CliRunner().invoke(app, ["explain", str(DATA / "rounds.csv"), round_id, "--json",
                                       "--bets", str(DATA / "bets.csv")])
    assert printed.exit_code == 1 and json.loads(printed.output) == explained
    assert [entry["round_id"] for entry in explained] == [round_id]
    banker = next(c for c in explained[0]["comparisons"] if c["field"] == "Banker draw")
    assert banker["agrees"] is False and explained[0]["bets"]
    as_frame = baccarat_audit.explain(pl.read_csv(DATA / "rounds.csv", infer_schema=False), round_id)
    assert [entry["comparisons"] for entry in as_frame] == [entry["comparisons"] for entry in explained]
    with pytest.raises(baccarat_audit.InputError, match="no row has round_id 'nowhere'"):
        baccarat_audit.explain(DATA / "rounds.csv", "nowhere")


def test_odds_are_exact_fractions_of_the_published_figures():
    figures = baccarat_audit.odds("standard")
    assert figures.decks == 8 and isinstance(figures.outcomes["BANKER"], Fraction)
    assert f"{float(figures.outcomes['BANKER']):.6f}" == "0.458597"
    assert f"{float(figures.house_edge['BANKER']) * 100:.4f}" == "1.0579"
    assert baccarat_audit.odds("standard", decks=1).decks == 1


def test_explain_names_every_finding_across_the_shoe_that_the_audit_gives_the_round():
    """CARD_COUNT, SHOE_SEQUENCE and TIMESTAMP look across a shoe: explain reads the round's shoe whole
    and gives the round the same findings, word for word, as the audit of the whole log."""
    as_of = datetime(2026, 12, 1, tzinfo=UTC)
    found = baccarat_audit.audit(DATA / "rounds.csv", contract=False, as_of=as_of).findings
    across = found.filter(pl.col("check").is_in(["CARD_COUNT", "SHOE_SEQUENCE", "TIMESTAMP"]))
    assert set(across["check"]) == {"CARD_COUNT", "SHOE_SEQUENCE", "TIMESTAMP"}  # the sample's seeded faults
    for round_id in across["round_id"].unique().sort():
        explained = baccarat_audit.explain(DATA / "rounds.csv", round_id, as_of=as_of)
        given = [(entry["source_row"], finding["check"], finding["expected"], finding["recorded"], finding["detail"])
                 for entry in explained for finding in entry["across_rounds"]]
        expected = across.filter(pl.col("round_id") == round_id).select(
            "source_row", "check", "expected", "recorded", "detail").rows()
        assert sorted(given) == sorted(expected), round_id
        assert explanation.found_anything(explained)
    unflagged = (pl.read_csv(DATA / "rounds.csv", infer_schema=False)
                 .filter(~pl.col("round_id").is_in(found["round_id"].implode()))["round_id"][0])
    assert [entry["across_rounds"] for entry in baccarat_audit.explain(DATA / "rounds.csv", unflagged)] == [[]]


def test_fail_on_takes_a_kind_kinds_or_a_list_and_refuses_an_unknown_kind():
    rounds = pl.read_parquet(DATA / "rounds.parquet")
    assert baccarat_audit.audit(rounds, fail_on="findings", contract=False).exit_code == 1
    assert baccarat_audit.audit(rounds, fail_on="quarantine,findings", contract=False).exit_code == 1
    assert baccarat_audit.audit(rounds, fail_on=["findings"], contract=False).exit_code == 1
    assert baccarat_audit.audit(rounds, fail_on=["quarantine"], contract=False).exit_code == 0
    for wrong in (["bogus"], "finding", "", ",", [None], 1):
        with pytest.raises(baccarat_audit.InputError, match="fail_on .*: expected some of findings, quarantine, contract"):
            baccarat_audit.audit(rounds, fail_on=wrong, contract=False)


def test_as_of_is_text_or_a_datetime_and_anything_else_is_an_input_error():
    rounds = pl.read_parquet(DATA / "rounds.parquet").head(200)
    as_text = baccarat_audit.audit(rounds, as_of="2026-12-01T00:00:00Z", contract=False)
    as_moment = baccarat_audit.audit(rounds, as_of=datetime(2026, 12, 1, tzinfo=UTC), contract=False)
    assert as_text.summary["as_of"] == as_moment.summary["as_of"] == "2026-12-01T00:00:00+00:00"
    assert baccarat_audit.explain(DATA / "rounds.parquet", rounds["round_id"][0], as_of="2026-12-01")
    with pytest.raises(baccarat_audit.InputError, match="as_of 'yesterday': expected an ISO 8601 date or date-time"):
        baccarat_audit.audit(rounds, as_of="yesterday")


@pytest.mark.parametrize("column", [pl.Series("round_id", [object()] * 3, dtype=pl.Object),
                                    pl.Series("hand_no", [1, 2, 3], dtype=pl.Int128)])
def test_a_frame_with_a_column_no_log_can_hold_is_an_input_error(column):
    rounds = pl.read_parquet(DATA / "rounds.parquet").head(3).with_columns(column)
    with pytest.raises(baccarat_audit.InputError, match=f"the rounds frame: column {column.name} is of type"):
        baccarat_audit.audit(rounds)
