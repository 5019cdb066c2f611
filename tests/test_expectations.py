"""The contract evaluated by polars (`pipeline.checks.expectations`) gives every expectation the counts Great
Expectations' own validation gives it, on generated logs with faults of every kind the suites test."""

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from baccarat_audit.checks import contract, expectations
from baccarat_audit import generate
from baccarat_audit.engines import run
from baccarat_audit.inputs import ingest
from baccarat_audit.tuning import Tuning

WINDOWS = [contract.Window(), contract.Window(datetime(2026, 11, 1, 19, tzinfo=UTC), None),
           contract.Window(datetime(2026, 11, 1, 18, tzinfo=UTC), datetime(2026, 11, 1, 20, tzinfo=UTC))]


def _spoilt(folder: Path) -> dict[str, Path]:
    """A generated log and its bets, each column the suites test given bad values on a few rows."""
    paths = generate.write(generate.generate(3000, seed=31, fault_rate=0.05, with_bets=True), folder)
    rounds = pl.read_csv(paths["csv"], infer_schema=False)
    at = pl.int_range(pl.len())
    bad = {
        # An id outside ASCII but visible (R\u00e99) is not an invisible character.
        "round_id": pl.when(at == 3).then(None).when(at == 5).then(pl.lit("R\u200b5")).when(at == 9).then(pl.lit("R\u00e99"))
        .when(at % 400 == 7)
        .then(pl.lit("SAME")).otherwise(pl.col("round_id")),
        "player_card_1": pl.when(at == 11).then(pl.lit("XX")).when(at == 12).then(None).otherwise(pl.col("player_card_1")),
        # Not a card the audit reads, yet upper-cased (the long s to S) a spelling the set holds.
        "player_card_2": pl.when(at == 14).then(pl.lit("k\u017f")).otherwise(pl.col("player_card_2")),
        "banker_card_3": pl.when(at == 13).then(pl.lit("<b>11Z</b>")).otherwise(pl.col("banker_card_3")),
        "player_total": pl.when(at == 17).then(pl.lit("15")).otherwise(pl.col("player_total")),
        "outcome": pl.when(at == 19).then(pl.lit("dragon")).when(at == 20).then(pl.lit("p")).otherwise(pl.col("outcome")),
        "dealt_at": pl.when(at == 23).then(pl.lit("yesterday")).when(at == 24).then(pl.lit("1960-01-01T00:00:00Z"))
        .otherwise(pl.col("dealt_at")),
    }
    rounds.with_columns(**bad).write_csv(folder / "spoilt.csv")
    placed = pl.read_csv(paths["bets_csv"], infer_schema=False)
    placed.with_columns(
        bet_id=pl.when(at == 2).then(None).when(at % 500 == 9).then(pl.lit("B-SAME")).when(at == 3)
        .then(pl.lit("B\ufeff3")).when(at == 5).then(pl.lit("B\u00e95")).otherwise(pl.col("bet_id")),
        bet_type=pl.when(at == 4).then(pl.lit("martingale")).otherwise(pl.col("bet_type")),
        stake=pl.when(at == 6).then(pl.lit("-5")).when(at == 7).then(pl.lit("0")).when(at == 8).then(pl.lit("abc"))
        .otherwise(pl.col("stake")),
        paid=pl.when(at == 10).then(pl.lit("-0")).when(at == 11).then(pl.lit("-1.5")).otherwise(pl.col("paid")),
    ).write_csv(folder / "spoilt_bets.csv")
    return {"round_log": folder / "spoilt.csv", "bet_log": folder / "spoilt_bets.csv"}


@pytest.fixture(scope="module")
def spoilt(tmp_path_factory) -> dict[str, Path]:
    return _spoilt(tmp_path_factory.mktemp("spoilt"))


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("name", ["round_log", "bet_log"])
def test_polars_and_great_expectations_count_every_expectation_alike(spoilt, tmp_path, name, window):
    log = ingest.scan(spoilt[name], name)
    subject = contract.Subject(name, log.path, log.columns, list(log.pieces(1000)), sum(log.rows_per_file))
    by_gx = contract.validate([subject], tmp_path, window)[name]
    by_polars = expectations.evaluate([subject], window)[name]
    assert by_polars["success"] == by_gx["success"] is False
    fields = ("type", "column", "skipped", "success", "unexpected_count", "element_count")
    for ours, theirs in zip(by_polars["expectations"], by_gx["expectations"], strict=True):
        assert {k: ours.get(k) for k in fields} == {k: theirs.get(k) for k in fields}
        if not ours.get("skipped") and ours["type"] != "expect_column_values_to_be_unique":
            assert ours["examples"] == theirs["examples"], ours["type"]
    unmet = [e for e in by_polars["expectations"] if e.get("success") is False]
    assert len(unmet) >= (8 if name == "round_log" else 4)


def test_the_audit_counts_the_contract_on_its_way_as_great_expectations_does(spoilt, tmp_path):
    """The audit counts each log's expectations as it reads it (the rounds in the one read, the bets
    as they are settled beside them), a few hundred rows at a time: every count and example equals
    Great Expectations' own validation of the whole log."""
    result = run.audit(spoilt["round_log"], tmp_path / "out",
                       run.Options(bets=spoilt["bet_log"], tuning=Tuning(piece_rows=700, read_rows=300, bet_rows=300)))
    fields = ("type", "column", "skipped", "success", "unexpected_count", "element_count", "examples")
    for role, name in (("rounds", "round_log"), ("bets", "bet_log")):
        log = ingest.scan(spoilt[name], name)
        subject = contract.Subject(name, log.path, log.columns, list(log.pieces(1000)), sum(log.rows_per_file))
        by_gx = contract.validate([subject], tmp_path / name, contract.Window())[name]
        for ours, theirs in zip(result.summary["contract"][role]["expectations"], by_gx["expectations"], strict=True):
            compared = fields[:-1] if ours["type"] == "expect_column_values_to_be_unique" else fields
            assert {k: ours.get(k) for k in compared} == {k: theirs.get(k) for k in compared}, ours["type"]
