"""The Great Expectations contract: suites in schemas/, results in summary.json, Data Docs, mappings."""

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings, strategies as st
from typer.testing import CliRunner

from conftest import ASSETS, amount_like
from baccarat_audit.engines import run
from baccarat_audit.rules import bets, cards
from baccarat_audit.checks import contract, settlement
from baccarat_audit.inputs import ingest
from baccarat_audit.cli import app
from baccarat_audit.errors import InputError
from baccarat_audit.inputs.timestamps import timestamp
from baccarat_audit.tuning import Tuning

runner = CliRunner()
DATA = ASSETS.parent.parent / "data"


def _by_column(result: dict) -> dict:
    return {(e["type"].removeprefix("expect_"), e["column"]): e for e in result["expectations"]}


def test_the_suites_state_the_same_vocabulary_as_the_engine():
    suite = {e["kwargs"].get("column"): e for e in ingest.contract("round_log")["expectations"]
             if e["type"] == "expect_column_values_to_be_in_set"}
    assert set(suite["player_card_1"]["kwargs"]["value_set"]) == {s.upper() for s in cards.SPELLINGS}
    assert set(suite["outcome"]["kwargs"]["value_set"]) == set(ingest.outcome_spellings())
    (bet_types,) = (e["kwargs"]["value_set"] for e in ingest.contract("bet_log")["expectations"]
                    if e["kwargs"].get("column") == "bet_type")
    assert tuple(bet_types) == bets.BET_TYPES
    ranges = [e for name in ("round_log", "bet_log") for e in ingest.contract(name)["expectations"]
              if e["type"] == "expect_column_values_to_be_between"]
    assert len(ranges) == 4 and all(str(contract.UNREADABLE) in e["meta"]["why"] for e in ranges)


def test_every_audit_runs_the_contract_and_writes_data_docs_when_asked(tmp_path):
    plain = run.audit(ASSETS / "mixed_notation.csv", tmp_path / "plain",
                        run.Options(bets=ASSETS / "mixed_notation_bets.csv"))
    assert not (tmp_path / "plain" / "contract").exists()
    result = run.audit(ASSETS / "mixed_notation.csv", tmp_path,
                         run.Options(bets=ASSETS / "mixed_notation_bets.csv", data_docs=True))
    assert plain.summary["contract"] == result.summary["contract"]
    rounds = _by_column(result.summary["contract"]["rounds"])
    assert rounds["column_values_to_be_unique", "round_id"]["unexpected_count"] == 2
    assert rounds["column_values_to_be_in_set", "player_card_1"]["examples"] == ["XX"]
    assert rounds["column_values_to_be_in_set", "player_total"]["examples"] == ["15"]
    assert rounds["column_values_to_be_in_set", "outcome"]["examples"] == ["DRAGON"]
    assert rounds["column_values_to_be_in_set", "banker_card_1"]["success"] is True
    assert rounds["column_values_to_be_between", "dealt_at"]["skipped"] == "skipped: the log has no dealt_at column"
    placed = _by_column(result.summary["contract"]["bets"])
    assert placed["column_values_to_be_in_set", "bet_type"]["examples"] == ["FOO"]
    # Read as the settlement reads them: a negative amount and one that is not an amount break the
    # contract too (as null, they passed it), and the examples show amounts, not integers of 1/10,000.
    stake, paid = placed["column_values_to_be_between", "stake"], placed["column_values_to_be_between", "paid"]
    assert (stake["unexpected_count"], stake["examples"]) == (2, ["-5.00", "0.00"])  # B21, B23
    assert (paid["unexpected_count"], paid["examples"]) == (1, ["unreadable"])  # B22's 'abc'
    assert result.summary["contract"]["rounds"]["success"] is False
    assert (tmp_path / "contract" / "index.html").is_file()
    assert list((tmp_path / "contract" / "validations").rglob("*.html"))
    assert json.loads((tmp_path / "summary.json").read_text())["contract"] == result.summary["contract"]


def test_a_clean_log_meets_the_contract_inside_its_window(clean_log, tmp_path):
    inside = contract.Window(*(pl.Series([t]).str.to_datetime(time_zone="UTC")[0]
                               for t in ("2026-11-01T17:00:00", "2026-11-03T18:00:00")))
    result = run.audit(clean_log["csv"], tmp_path, run.Options(window=inside))
    assert result.summary["contract"]["rounds"]["success"] is True
    assert result.exit_code == 0


def test_validate_checks_the_window_alone(tmp_path):
    args = ["validate", DATA / "rounds.csv", "--window-start", "2026-11-01T18:00:00",
            "--window-end", "2026-11-01T19:00:00", "--json"]
    outside = runner.invoke(app, [str(a) for a in args])
    assert outside.exit_code == 1
    window = _by_column(json.loads(outside.output))["column_values_to_be_between", "dealt_at"]
    dealt = pl.read_csv(DATA / "rounds.csv").select(timestamp(pl.col("dealt_at")).alias("t"))
    late = dealt.filter(pl.col("t") > pl.datetime(2026, 11, 1, 19, time_zone="UTC")).height
    assert window["unexpected_count"] == late > 0
    assert len(window["examples"]) == 3 and all(  # times as ISO 8601 text, not epoch seconds
        datetime.fromisoformat(t) > datetime(2026, 11, 1, 19, tzinfo=UTC) for t in window["examples"])
    inside = runner.invoke(app, ["validate", str(DATA / "bets.csv"), "--bets", "--docs", str(tmp_path / "docs")])
    assert inside.exit_code == 0, inside.output
    assert (tmp_path / "docs" / "index.html").is_file()


def test_validate_replaces_its_data_docs_only_once_they_are_complete(tmp_path, monkeypatch):
    """`validate --docs` writes beside the folder and moves its pages in at the end: a run that fails
    partway leaves the earlier run's Data Docs whole and nothing of its own; one that completes
    replaces them."""
    docs = tmp_path / "docs"
    args = ["validate", str(DATA / "rounds.csv"), "--docs", str(docs)]
    assert runner.invoke(app, args).exit_code == 1  # the sample's duplicated round_id
    earlier = {p.relative_to(docs): p.read_bytes() for p in docs.rglob("*") if p.is_file()}
    assert Path("index.html") in earlier
    real = contract.validate

    def fails_partway(subjects, scratch, window, docs_folder):
        (docs_folder / "index.html").write_text("half a run")
        raise InputError(f"{subjects[0].label}: could not be read to the end (a disk error)")

    monkeypatch.setattr(contract, "validate", fails_partway)
    failed = runner.invoke(app, args)
    assert failed.exit_code == 2 and "a disk error" in failed.output
    assert {p.relative_to(docs): p.read_bytes() for p in docs.rglob("*") if p.is_file()} == earlier
    assert sorted(tmp_path.iterdir()) == [tmp_path / ".baccarat-audit.json", docs]  # the manifest: `owned`
    monkeypatch.setattr(contract, "validate", real)
    bets = runner.invoke(app, ["validate", str(DATA / "bets.csv"), "--bets", "--docs", str(docs)])
    assert bets.exit_code == 0 and sorted(tmp_path.iterdir()) == [tmp_path / ".baccarat-audit.json", docs]
    assert not any("round_log" in str(p) for p in docs.rglob("*")) and (docs / "index.html").is_file()


def test_validate_does_not_replace_a_folder_that_holds_more_than_data_docs(tmp_path, monkeypatch):
    """The Data Docs replace the folder `--docs` names whole: one holding anything this tool did not
    write there (a user's notes), a file, or the working folder is refused with exit 2 before anything
    is run, and kept."""
    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "notes.txt").write_text("mine")
    (tmp_path / "a-file").write_text("mine")
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    for docs, message in ((tmp_path / "reports", "notes.txt: not written by baccarat-audit"),
                          (tmp_path / "a-file", "a-file: is a file, not a folder for the Data Docs"),
                          (Path("."), "is the working folder")):
        result = runner.invoke(app, ["validate", str(DATA / "bets.csv"), "--bets", "--docs", str(docs)])
        assert result.exit_code == 2 and message in result.output, result.output
    assert [p.name for p in (tmp_path / "reports").iterdir()] == ["notes.txt"]
    assert (tmp_path / "a-file").read_text() == "mine" and list((tmp_path / "here").iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "here", "reports"]


def test_a_mapped_provider_log_is_audited_like_the_original(tmp_path):
    mapped = run.audit(DATA / "provider_b_rounds.csv", tmp_path / "mapped",
                         run.Options(mapping=ingest.load_mapping("provider-b"), validate=False))
    original = pl.read_csv(DATA / "rounds.csv", infer_schema=False).head(300)
    original.write_csv(tmp_path / "original.csv")
    run.audit(tmp_path / "original.csv", tmp_path / "plain", run.Options(validate=False))
    columns = ["source_row", "round_id", "check", "expected", "recorded"]
    found = pl.read_parquet(tmp_path / "mapped" / "findings.parquet").select(columns)
    assert found.height > 0
    assert found.equals(pl.read_parquet(tmp_path / "plain" / "findings.parquet").select(columns))
    assert mapped.summary["inputs"][0]["mapping"]["path"].endswith("provider-b.json")


def test_unknown_mapping_is_exit_2():
    result = runner.invoke(app, ["audit", str(DATA / "provider_b_rounds.csv"), "--out", "x", "--mapping", "nope"])
    assert result.exit_code == 2


@pytest.mark.parametrize(("mapping", "message"), [
    # Held to schemas/mapping.schema.json: what is wrong, and where in the file.
    ({"colums": {"P1": "player_card_1"}}, "not a valid mapping file (Additional properties are not allowed ('colums'"),
    ({"columns": ["round"]}, "not a valid mapping file (['round'] is not of type 'object' at $.columns)"),
    ({"values": {"outcome": "PLAYER"}}, "not a valid mapping file ('PLAYER' is not of type 'object' at $.values.outcome)"),
    ([], "not a valid mapping file ([] is not of type 'object')"),
    ({"cards": {"player": {"field": "P", "rank": "r"}}}, "not a valid mapping file ('suit' is a dependency of 'rank' at $.cards.player)"),
    # And to the contract: each column filled once, by a name it has.
    ({"columns": {"round": "round_id", "P1": "round_id"}},
     "not a valid mapping file (columns round and columns P1 both fill round_id)"),
    ({"columns": {"P": "player_card_1"}, "cards": {"player": {"field": "P", "separator": " "}}},
     "not a valid mapping file (columns P and cards player both fill player_card_1)"),
    # A column the contract lacks: the log's time would be passed over, and TIMESTAMP skipped, unsaid.
    ({"columns": {"time": "dealt_time"}}, "columns names 'dealt_time', not a column of the round_log contract"),
    ({"constants": {"table": "T7"}}, "constants names 'table', not a column of the round_log contract"),
    ({"values": {"winner": {"Tie": "TIE"}}}, "values names 'winner', neither a column of the contract nor a pattern"),
    ({"values": {"*_crd_*": {"x": None}}}, "values names '*_crd_*', neither a column of the contract nor a pattern"),
])
def test_a_mapping_file_that_is_not_a_mapping_is_exit_2_naming_what_is_wrong(tmp_path, mapping, message):
    (tmp_path / "m.json").write_text(json.dumps(mapping))
    result = runner.invoke(app, ["audit", str(DATA / "provider_b_rounds.csv"), "--out", str(tmp_path / "out"),
                                 "--mapping", str(tmp_path / "m.json")])
    assert result.exit_code == 2
    assert f"m.json: {message}" in result.output
    assert not (tmp_path / "out").exists()


def test_an_unreadable_dealt_at_breaks_the_contract():
    result = json.loads(runner.invoke(app, ["validate", str(ASSETS / "integrity.csv"), "--json"]).output)
    readable, window = [e for e in result["expectations"] if e["column"] == "dealt_at"]
    assert (readable["success"], readable["unexpected_count"], readable["examples"]) == (False, 1, ["unreadable"])
    assert window["skipped"].startswith("skipped: no window given")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), amount_like, amount_like.map("-{}".format)), min_size=1, max_size=40))
def test_the_contract_holds_amounts_to_what_the_settlement_settles(texts):
    """The bet contract's stake above 0 and paid not negative break exactly where the settlement
    cannot take the amount: as null, a negative or unreadable one passed GX's range checks unseen."""
    shown = contract.view(pl.LazyFrame({"stake": texts, "paid": texts}, schema={"stake": pl.String, "paid": pl.String}),
                          frozenset({"stake", "paid"}), "bet_log").collect()
    for text, stake, paid in zip(texts, shown["stake"], shown["paid"], strict=True):
        amount = settlement.parse_amount(text)
        if text is None:  # not recorded: the not-null expectations' business
            assert stake is None and paid is None
        else:
            assert (stake > 0, paid >= 0) == (amount is not None and amount > 0, amount is not None), text


def test_a_mapped_round_is_explained_like_the_original():
    mapped = runner.invoke(app, ["explain", str(DATA / "provider_b_rounds.csv"), "T01-S0001-C002",
                                 "--mapping", "provider-b", "--json"])
    plain = runner.invoke(app, ["explain", str(DATA / "rounds.csv"), "T01-S0001-C002", "--json"])
    assert mapped.exit_code == plain.exit_code == 0, mapped.output
    assert _but_file_and_profile(mapped.output) == _but_file_and_profile(plain.output)


def _but_file_and_profile(output: str) -> list[dict]:
    """The logs are two files, and the mapped one has no profile column, so its rounds take the
    default: compare the rest."""
    return [{k: v for k, v in e.items() if k not in ("source_file", "profile")} for e in json.loads(output)]


def test_the_contract_run_batch_by_batch_adds_up_to_one_run(tmp_path):
    """GX checks a log a batch of rows at a time, and an id's uniqueness a part of the ids at a time:
    where the cuts fall changes no count, no example and no verdict (the duplicate ids of this log
    fall in different pieces)."""
    options = run.Options(bets=ASSETS / "mixed_notation_bets.csv", data_docs=True)
    whole = run.audit(ASSETS / "mixed_notation.csv", tmp_path / "whole", options)
    cut = run.audit(ASSETS / "mixed_notation.csv", tmp_path / "cut",
                    replace(options, tuning=Tuning(piece_rows=4, batch_rows=3)))
    assert cut.summary["contract"] == whole.summary["contract"]
    pages = {folder.name: len(list(folder.rglob("*.html")))
             for folder in (tmp_path / "cut" / "contract" / "validations").iterdir()}
    rounds, bets = whole.summary["rows_read"], whole.summary["bets_read"]

    def batches(rows: int) -> int:  # each piece of 4 rows cut in batches of 3
        return sum(-(-min(4, rows - start) // 3) for start in range(0, rows, 4))
    assert pages == {"round_log": batches(rounds), "round_log round_id unique": -(-rounds // 3),
                     "bet_log": batches(bets), "bet_log bet_id unique": -(-bets // 3)}


def test_a_points_log_is_held_to_the_points_its_mapping_declares(tmp_path):
    """data/layouts/points.csv with the points mapping: every card column meets the contract's card set,
    by the audit's count and by Great Expectations' run (`validate`) alike; a card written as a card is
    unexpected."""
    log = tmp_path / "points.csv"
    text = (DATA / "layouts" / "points.csv").read_text().splitlines()
    text[1] = text[1].replace(",5,0,,8,0,,", ",KS,0,,8,0,,")  # player_card_1: a card, not points
    log.write_text("\n".join(text) + "\n")
    audited = CliRunner().invoke(app, ["audit", str(log), "--mapping", "points", "--out", str(tmp_path / "out"),
                                       "--json"])
    validated = CliRunner().invoke(app, ["validate", str(log), "--mapping", "points", "--json"])
    for result in (json.loads(audited.stdout)["contract"]["rounds"], json.loads(validated.stdout)):
        in_set = {e["column"]: e for e in result["expectations"]
                  if e["type"] == "expect_column_values_to_be_in_set" and "_card_" in e["column"]}
        assert {c: e["unexpected_count"] for c, e in in_set.items()} == {
            "player_card_1": 1, "player_card_2": 0, "player_card_3": 0,
            "banker_card_1": 0, "banker_card_2": 0, "banker_card_3": 0}
        assert in_set["player_card_1"]["examples"] == ["KS"]
