"""Settlement in exact money: hand-checked bets, every shipped profile, both case evaluators, and the
batch path's money held to its scalar twins on values hypothesis draws."""

import dataclasses
import itertools
from dataclasses import replace
import json
from decimal import Decimal, localcontext

import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

from conftest import ASSETS, amount_like, output
from baccarat_audit.engines import run
from baccarat_audit.rules import bets, profiles
from baccarat_audit.inputs import profile_files
from baccarat_audit.outputs import explanation
from baccarat_audit import generate
from baccarat_audit.inputs import ingest
from baccarat_audit.checks import settlement
from baccarat_audit.errors import InputError
from baccarat_audit.tuning import Tuning

ROUNDS, BETS = ASSETS / "mixed_notation.csv", ASSETS / "mixed_notation_bets.csv"


def test_case_evaluators_agree_on_every_finish_and_bet_type():
    rows = []
    for pf, bf, pc, bc, natural, pp, bp in itertools.product(
        range(10), range(10), (2, 3), (2, 3), (False, True), (False, True), (False, True)
    ):
        coup = bets.facts(pf, bf, pc, bc, natural, pp, bp)
        rows += [coup | {"bet_type": bet, "scalar": bets.case_of(bet, coup)} for bet in bets.BET_TYPES]
    frame = pl.DataFrame(rows).with_columns(vectorized=bets.case_expr(pl.col("bet_type")))
    assert frame.height == 3200 * len(bets.BET_TYPES)
    assert frame.filter(pl.col("scalar") != pl.col("vectorized")).height == 0
    assert frame["vectorized"].null_count() == 0


def test_cases_looked_up_equal_the_chain_on_every_finish_and_bet_type():
    """The batch path gathers cases from a table instead of running case_expr's chain on every bet;
    on every bet type and finish, and an unknown bet type, both give the same. A round without facts
    (a bet on a round not in the log, quarantined) has no case; the chain's catch-all said "lose"."""
    finishes = [bets.facts(*values) for values in itertools.product(*bets.FINISH.values())]
    rows = [coup | {"bet_type": bet} for coup in finishes for bet in (*bets.BET_TYPES, "KENO")]
    looked_up = pl.lit(pl.Series(bets.CASE_NAMES)).gather(bets.case_code(bets.bet_type_code(pl.col("bet_type"))))
    frame = pl.DataFrame(rows).with_columns(chain=bets.case_expr(pl.col("bet_type")), looked_up=looked_up)
    assert frame.height == bets.FINISHES * (len(bets.BET_TYPES) + 1)
    assert frame.filter(pl.col("chain").ne_missing(pl.col("looked_up"))).height == 0
    assert frame["looked_up"].null_count() == bets.FINISHES  # the unknown bet type's
    no_facts = pl.DataFrame([{fact: None for fact in finishes[0]} | {"bet_type": "TIE"}], schema=frame.drop(
        "chain", "looked_up").schema)
    assert no_facts.select(looked_up).item() is None


def _settlement(out):
    findings = pl.read_parquet(out / "findings.parquet").filter(pl.col("check") == "SETTLEMENT")
    return {bet: (expected, recorded) for bet, expected, recorded in
            findings.select("bet_id", "expected", "recorded").iter_rows()}


def test_money_is_summed_within_a_currency_only(tmp_path):
    """Euros and pounds wrongly paid are not added up: the totals are per currency (its code in any case)."""
    pounds = pl.col("bet_id").is_in(["B8", "B13", "B14"])
    currency = pl.when(pounds).then(pl.lit("GBP")).when(pl.col("bet_id") == "B5").then(pl.lit(" eur ")).otherwise(
        pl.lit("EUR"))
    pl.read_csv(BETS, infer_schema=False).with_columns(currency=currency).write_csv(tmp_path / "bets.csv")
    s = run.audit(ROUNDS, tmp_path / "out", run.Options(bets=tmp_path / "bets.csv", validate=False)).summary
    assert s["money"] == [{"currency": "EUR", "overpaid": "61.00", "underpaid": "0.00"},
                          {"currency": "GBP", "overpaid": "20.00", "underpaid": "10.00"}]
    assert (s["overpaid"], s["underpaid"]) == (None, None)  # 81.00 and 10.00 in two currencies
    assert settlement.in_currencies(s["money"], "overpaid") == "61.00 EUR, 20.00 GBP"
    assert "<td class=\"num\">61.00 EUR, 20.00 GBP</td>" in (tmp_path / "out" / "report.html").read_text()


def test_money_is_shown_to_its_currencys_decimals_and_kept_exact_in_the_summary(tmp_path):
    """Yen have no decimals and dinars three (ISO 4217, from CLDR): a person reads 1,500 JPY and 12.500 BHD;
    summary.json keeps the exact text. One currency: the report's money per table is written so too."""
    for code in ("JPY", "BHD", "EUR"):
        bets = pl.read_csv(BETS, infer_schema=False).with_columns(currency=pl.lit(code))
        bets.write_csv(tmp_path / f"{code}.csv")
        out = tmp_path / code
        s = run.audit(ROUNDS, out, run.Options(bets=tmp_path / f"{code}.csv", validate=False)).summary
        over, under = s["money"][0]["overpaid"], s["money"][0]["underpaid"]
        assert (over, under) == ("81.00", "10.00")  # exact decimal text, as ever
        written = {"JPY": ("81", "10"), "BHD": ("81.000", "10.000"), "EUR": ("81.00", "10.00")}[code]
        assert settlement.in_currencies(s["money"], "overpaid") == f"{written[0]} {code}"
        page = (out / "report.html").read_text()
        assert f'<td class="num">{written[1]} {code}</td>' in page and f'<td class="num">{written[0]}</td>' in page
        assert settlement.grouped("1500.50", code) == {"JPY": "1,500.5", "BHD": "1,500.500", "EUR": "1,500.50"}[code]


def test_a_void_bet_returns_its_stake_and_an_open_one_is_not_settled(tmp_path):
    """Status VOID (any case): the stake is returned whatever the cards, even without the round; OPEN
    (or PENDING): quarantined; any other status: settled by the cards. Explained the same way."""
    status = {"B1": "void", "B2": "VOIDED", "B3": "SETTLED", "B6": "PENDING", "B19": "CANCELLED"}
    paid = {"B1": "10", "B2": "0", "B19": "10.00"}  # B2's stake of 10 not returned
    log = pl.read_csv(BETS, infer_schema=False).with_columns(
        status=pl.col("bet_id").replace_strict(status, default=None),
        paid=pl.col("bet_id").replace_strict(paid, default=pl.col("paid")))
    log.write_csv(tmp_path / "bets.csv")
    run.audit(ROUNDS, tmp_path / "out", run.Options(bets=tmp_path / "bets.csv", validate=False))
    settled = _settlement(tmp_path / "out")
    assert settled["B2"] == ("10.00", "0") and settled["B3"] == ("0.00", "60") and "B1" not in settled
    b2 = pl.read_parquet(tmp_path / "out" / "findings.parquet").filter(pl.col("bet_id") == "B2")["detail"].item()
    assert b2 == "B2 BANKER bet: the bet is VOIDED: its stake is returned whatever the cards; stake 10, expected 10.00, paid 0."
    quarantine = pl.read_parquet(tmp_path / "out" / "bets_quarantine.parquet")
    assert ("B6", "PENDING", "bet status 'PENDING' is not settled yet") in quarantine.select(
        "bet_id", "status", "reason").rows()
    assert "B19" not in quarantine["bet_id"].to_list()  # void: settled without its round (R99, not in the log)
    round_row = ingest.rows_for_round(ROUNDS, "round_log", "R2")[0] | {"profile": "standard"}
    (explained,) = explanation.settle_bets(explanation.explain(round_row),
                                           ingest.rows_for_round(tmp_path / "bets.csv", "bet_log", "R2"))[1:2]
    assert explained["steps"][0] == "The bet is VOIDED: its stake is returned whatever the cards."
    assert (explained["expected"], explained["agrees"]) == ("10.00", False)


def test_the_evidence_of_a_void_bet_not_returned_settles_it_without_its_round(tmp_path):
    """A void bet needs no cards: one on a round missing from the log, or on a round on two rows, is
    flagged when its stake is not returned, and the report's evidence settles it step by step."""
    pl.DataFrame({"round_id": ["R99", "R1"], "bet_id": ["B1", "B2"], "bet_type": "PLAYER", "stake": "10",
                  "paid": "0", "status": "VOID"}).write_csv(tmp_path / "bets.csv")
    run.audit(ROUNDS, tmp_path / "out", run.Options(bets=tmp_path / "bets.csv", validate=False))
    evidence = json.loads((tmp_path / "out" / "evidence.json").read_text())["SETTLEMENT"]
    assert [(e["bet_id"], [b["steps"] for b in e["bets"]]) for e in evidence] == [
        (bet, [["The bet is VOID: its stake is returned whatever the cards.", "Expected 10.00, paid 0: WRONG."]])
        for bet in ("B1", "B2")]
    assert "<li>Expected 10.00, paid 0: WRONG.</li>" in (tmp_path / "out" / "report.html").read_text()


def test_hand_checked_bets_under_the_standard_profile(tmp_path):
    result = run.audit(ROUNDS, tmp_path, run.Options(bets=BETS, validate=False))
    assert _settlement(tmp_path) == {
        "B3": ("0.00", "60"),  # K-5 is no pair
        "B5": ("19.50", "20.00"),  # commission not taken
        "B8": ("0.00", "10"),  # Banker Dragon Bonus lost
        "B13": ("10.00", "0"),  # push not honoured on a tie
        "B14": ("90.00", "100"),  # tie paid 9:1 on an 8:1 table
        "B25": ("19.50", "20"),
    }
    # 10.01 on Banker at 0.95:1 is exactly 19.5195 returned, and B4 paid exactly that.
    quarantine = pl.read_parquet(tmp_path / "bets_quarantine.parquet")
    assert quarantine.select("bet_id", "reason").rows() == [
        ("B17", "round 'R1' is on 2 rows of the round log"),
        ("B18", "round 'R6' is quarantined in the round log"),
        ("B19", "round 'R99' is not in the round log"),
        ("B20", "bet type 'DRAGON_7' is not offered under profile standard"),
        ("B21", "stake '-5' is negative"),
        ("B22", "paid 'abc' is not an amount (digits, up to 4 decimals)"),
        ("B23", "stake '0' is not more than 0"),
        ("B24", "bet type 'FOO' is not offered under profile standard"),
    ]
    s = result.summary
    assert (s["bets_read"], s["bets_settled"], s["bets_quarantined"], s["bets_flagged"]) == (25, 17, 8, 6)
    assert (s["overpaid"], s["underpaid"]) == ("81.00", "10.00")
    assert s["money"] == [{"currency": None, "overpaid": "81.00", "underpaid": "10.00"}]
    b5 = pl.read_parquet(tmp_path / "findings.parquet").filter(pl.col("bet_id") == "B5").row(0, named=True)
    assert b5["detail"] == ("B5 BANKER bet: Banker won: pays 1:1 less 5% commission (standard profile); "
                            "stake 10, expected 19.50, paid 20.00.")
    assert (b5["source"], b5["source_row"], b5["round_id"]) == ("bets", 5, "R3")


def test_the_profile_changes_what_is_owed(tmp_path):
    run.audit(ROUNDS, tmp_path / "s6", run.Options(bets=BETS, profile="super-6", validate=False))
    owed = _settlement(tmp_path / "s6")
    assert owed["B25"] == ("15.00", "20")  # Banker won with 6: 0.5:1
    assert "B5" not in owed and owed["B4"] == ("20.02", "19.5195")  # no commission
    detail = pl.read_parquet(tmp_path / "s6" / "findings.parquet").filter(pl.col("bet_id") == "B25")["detail"][0]
    assert "Banker won with 6: pays 0.5:1 (super-6 profile); stake 10, expected 15.00, paid 20." in detail
    run.audit(ROUNDS, tmp_path / "chips", run.Options(bets=BETS, profile="floor-chips", validate=False))
    # 19.5195 rounded up (in the player's favour) to the 0.25 chip.
    assert _settlement(tmp_path / "chips")["B4"] == ("19.75", "19.5195")


@pytest.mark.parametrize("profile", profile_files.available())
def test_correctly_paid_log_has_no_settlement_findings(profile, tmp_path):
    log = generate.generate(800, seed=21, profile_names=(profile,), with_bets=True)
    paths = generate.write(log, tmp_path / "log")
    result = run.audit(paths["parquet"], tmp_path / "out", run.Options(bets=paths["bets_csv"], validate=False))
    offered = set(bets.offered(profile_files.load(profile)))
    assert {b["bet_type"] for b in log.bets} == offered
    s = result.summary
    assert s["bets_read"] == s["bets_settled"] == len(log.bets)
    assert (s["bets_flagged"], s["bets_quarantined"], result.exit_code) == (0, 0, 0)


def test_injected_payout_faults_on_a_mixed_profile_log_are_flagged_on_exactly_their_bets(tmp_path):
    log = generate.generate(4000, seed=22, fault_rate=0.03, tables=5, profile_names=tuple(profile_files.available()),
                            with_bets=True)
    paths = generate.write(log, tmp_path / "log")
    result = run.audit(paths["csv"], tmp_path / "out", run.Options(bets=paths["bets_parquet"], validate=False))
    faults = pl.read_csv(paths["faults"])
    findings = pl.read_parquet(tmp_path / "out" / "findings.parquet").filter(pl.col("check") == "SETTLEMENT")
    expected = faults.filter(pl.col("check") == "SETTLEMENT")["bet_id"]
    assert expected.len() > 50
    assert sorted(findings["bet_id"]) == sorted(expected)
    quarantined = pl.read_parquet(tmp_path / "out" / "bets_quarantine.parquet")
    assert sorted(quarantined["bet_id"]) == sorted(faults.filter(pl.col("check") == "BET_QUARANTINED")["bet_id"])
    s = result.summary
    assert s["bets_read"] == s["bets_settled"] + s["bets_quarantined"] == len(log.bets)
    assert set(pl.read_csv(paths["csv"])["profile"]) == set(profile_files.available())


def test_unknown_profile_in_the_log_stops_the_run(tmp_path):
    log = pl.read_csv(ROUNDS, infer_schema=False).with_columns(profile=pl.lit("baccarat-royale"))
    log.write_csv(tmp_path / "rounds.csv")
    with pytest.raises(InputError, match="rounds.csv: column profile: unknown rules profile 'baccarat-royale'"):
        run.audit(tmp_path / "rounds.csv", tmp_path / "out", run.Options(validate=False))
    with pytest.raises(InputError, match="unknown rules profile 'nope'"):
        run.audit(ROUNDS, tmp_path / "out", run.Options(profile="nope"))


def test_a_profile_is_a_file(tmp_path, monkeypatch):
    (tmp_path / "house.toml").write_text('name = "house"\nbase = "standard"\n[pays]\nTIE = "7"\n')
    (tmp_path / "standard.toml").write_text((profile_files.PROFILES / "standard.toml").read_text())
    monkeypatch.setattr(profile_files, "PROFILES", tmp_path)
    profile_files.load.cache_clear()
    try:
        house = profile_files.load("house")
        assert house.pays["TIE"] == 7 and house.commission == profiles.Decimal("0.05")
        assert bets.returns(house)["TIE", "win"].per_unit == 8
    finally:
        profile_files.load.cache_clear()


def test_a_bet_recorded_twice_is_flagged_on_every_copy_with_the_contract_or_without(tmp_path):
    """Both copies are paid right, so no SETTLEMENT: the bet may still have been paid twice. The contract
    counts such rows (with three examples); DUPLICATE_BET lists every one, and flags the run without it."""
    (tmp_path / "rounds.csv").write_text(
        "round_id,player_card_1,banker_card_1,player_card_2,banker_card_2,player_card_3,banker_card_3\n"
        "R1,9S,KH,KD,3C,,\nR2,KS,9H,KD,KC,,\n")  # naturals: Player wins R1, Banker wins R2
    once = "round_id,bet_id,bet_type,stake,paid\nR1,B1,PLAYER,10,20\nR2,B2,BANKER,10,19.50\n"
    (tmp_path / "once.csv").write_text(once)
    (tmp_path / "twice.csv").write_text(once + "R1,B1,PLAYER,10,20\n")
    clean = run.audit(tmp_path / "rounds.csv", tmp_path / "clean", run.Options(bets=tmp_path / "once.csv"))
    assert clean.exit_code == 0 and clean.summary["findings"]["DUPLICATE_BET"] == 0
    for options in (run.Options(bets=tmp_path / "twice.csv"), run.Options(validate=False, bets=tmp_path / "twice.csv")):
        result = run.audit(tmp_path / "rounds.csv", tmp_path / "out", options)
        assert (result.exit_code, result.summary["bets_flagged"]) == (1, 0)
        found = pl.read_parquet(tmp_path / "out" / "findings.parquet")
        assert found.select("source_row", "bet_id", "check", "recorded", "detail").rows() == [
            (row, "B1", "DUPLICATE_BET", "2 rows", "bet_id B1 appears on 2 rows of the bet log.") for row in (1, 3)]
        if options.validate:  # the contract's count of the same rows
            (unique,) = (e for e in result.summary["contract"]["bets"]["expectations"]
                         if e["type"] == "expect_column_values_to_be_unique")
            assert (unique["unexpected_count"], unique["examples"]) == (2, ["B1", "B1"])


def test_a_bet_is_settled_on_the_round_its_id_names_exactly(tmp_path):
    """Ids alike but for an invisible character are one round twice to DUPLICATE_ROUND, but a bet names
    one of them exactly: it is settled on that row. An id on two rows (R1) leaves its bets unsettled."""
    rounds = pl.read_csv(ROUNDS, infer_schema=False)
    again = rounds.filter(pl.col("round_id") == "R2").with_columns(round_id=pl.lit("R2\u200b"), outcome=pl.lit("B"))
    pl.concat([rounds, again]).write_csv(tmp_path / "rounds.csv")
    bets_log = pl.read_csv(BETS, infer_schema=False)
    pl.concat([bets_log, bets_log.filter(pl.col("bet_id") == "B3").with_columns(
        round_id=pl.lit("R2\u200b"), bet_id=pl.lit("B3-copy"))]).write_csv(tmp_path / "bets.csv")
    for bets_file, out in ((BETS, "plain"), (tmp_path / "bets.csv", "twinned")):
        run.audit(tmp_path / "rounds.csv", tmp_path / out, run.Options(bets=bets_file, validate=False))
    findings = pl.read_parquet(tmp_path / "twinned" / "findings.parquet")
    assert sorted(findings.filter(pl.col("check") == "DUPLICATE_ROUND")["round_id"]) == ["R1", "R1", "R2", "R2\u200b"]
    quarantine = pl.read_parquet(tmp_path / "twinned" / "bets_quarantine.parquet")
    assert not quarantine.filter(pl.col("round_id").str.starts_with("R2")).height
    assert quarantine.filter(pl.col("round_id") == "R1")["reason"].to_list() == ["round 'R1' is on 2 rows of the round log"]
    # The copy of B3 (a pair paid on no pair) on the invisible twin is flagged as B3 is, on the same cards.
    assert _settlement(tmp_path / "twinned") == _settlement(tmp_path / "plain") | {
        "B3-copy": _settlement(tmp_path / "plain")["B3"]}


def test_bets_settled_in_parts_give_the_same_outputs(tmp_path):
    """Bets are settled beside their rounds as both logs are read in order, a piece of each at a time,
    and those left over (of rounds missing, quarantined, on several rows, or too far from the bets)
    at once, or a part of their round_ids at a time when they are more than a piece: the pieces, the
    parts, the duplicated and quarantined rounds among them, and bets recorded twice (their copies
    pieces apart), must change nothing; nor must a bet log in no order."""
    log = generate.generate(3000, seed=23, fault_rate=0.05, profile_names=("standard", "super-6"), with_bets=True)
    paths = generate.write(log, tmp_path / "log")
    placed = pl.read_parquet(paths["bets_parquet"])
    # Five bets at the end again, and the last one under the 101st bet's id: 12 rows with a copy.
    pl.concat([placed, placed.head(5), placed.tail(1).with_columns(bet_id=pl.lit(placed["bet_id"][100]))]
              ).write_parquet(tmp_path / "bets_twice.parquet")
    options = run.Options(validate=False, bets=tmp_path / "bets_twice.parquet")
    whole = run.audit(paths["parquet"], tmp_path / "whole", options)
    # 6 pieces of rounds, up to 4 * 6000 / 500 parts of bets; then 96 parts filed in buckets of 24,
    # integrity's 6 groups in 2s.
    cut = run.audit(paths["parquet"], tmp_path / "cut", replace(options, tuning=Tuning(piece_rows=500)))
    bucketed = run.audit(paths["parquet"], tmp_path / "bucketed",
                         replace(options, tuning=Tuning(piece_rows=500, fan_out=4)))
    # 12 pieces of 250 rounds, and of 250 bets: the rounds held beside the bets move along the log.
    beside = run.audit(paths["parquet"], tmp_path / "beside",
                       replace(options, tuning=Tuning(read_rows=250, bet_rows=250)))
    assert whole.summary["bets_flagged"] > 0 and whole.summary["bets_quarantined"] > 0
    assert whole.summary["findings"]["DUPLICATE_BET"] == 12
    # In no order, the bets are found beside their rounds whole, and mostly left over in pieces.
    pl.read_parquet(tmp_path / "bets_twice.parquet").sample(fraction=1, shuffle=True, seed=5).write_parquet(
        tmp_path / "bets_shuffled.parquet")
    shuffled = replace(options, bets=tmp_path / "bets_shuffled.parquet")
    shuffled_whole = run.audit(paths["parquet"], tmp_path / "shuffled_whole", shuffled)
    shuffled_cut = run.audit(paths["parquet"], tmp_path / "shuffled_cut",
                             replace(shuffled, tuning=Tuning(piece_rows=500, read_rows=250, bet_rows=250)))
    keys = ("bets_read", "bets_settled", "bets_quarantined", "bets_flagged", "overpaid", "underpaid", "findings")
    for other in (cut, bucketed, beside, shuffled_whole, shuffled_cut):
        for key in keys:
            assert whole.summary[key] == other.summary[key], key
    for name in ("findings.parquet", "bets_quarantine.parquet"):
        for first, other in (("whole", "cut"), ("whole", "bucketed"), ("whole", "beside"),
                             ("shuffled_whole", "shuffled_cut")):
            assert output(tmp_path / first / name).equals(output(tmp_path / other / name)), name


# Property-based: amounts, money text and chip rounding have far too many values to enumerate, so
# hypothesis draws them, and the batch path's expressions are held to their scalar twins (as the
# replay's two evaluators are on every coup). Each example is a batch, evaluated in one frame.


@settings(max_examples=60, deadline=None)
@given(st.lists(amount_like, min_size=1, max_size=40))
def test_amounts_are_read_by_the_batch_path_as_by_the_scalar_one(texts):
    read = pl.DataFrame({"text": texts}, schema={"text": pl.String}).select(
        settlement.amount_e4(pl.col("text")))["text"].to_list()
    scalar = [None if (amount := settlement.parse_amount(text)) is None else int(amount * 10**4) for text in texts]
    assert read == scalar


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10**30), min_size=1, max_size=40))
def test_money_is_written_by_the_batch_path_as_by_the_scalar_one(amounts_e12):
    written = pl.DataFrame({"e12": amounts_e12}, schema={"e12": pl.Int128}).select(
        settlement.money_text(pl.col("e12")))["e12"].to_list()
    assert written == [settlement.e12_text(amount) for amount in amounts_e12]


stakes = st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("999999999999.9999"), places=4)
# Returns per unit staked: 41 for a pay of 40:1, and far past it, as a profile may state any.
returns = st.decimals(min_value=Decimal(0), max_value=Decimal(10**10), places=8)
units = st.sampled_from([Decimal(u) for u in ("0.0001", "0.01", "0.05", "0.25", "1", "5", "25")])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["exact", "house", "player", "nearest"]), units,
       st.lists(st.tuples(stakes, returns), min_size=1, max_size=40))
def test_an_expected_payout_is_rounded_by_the_batch_path_as_by_the_scalar_one(mode, unit, bets_drawn):
    profile = dataclasses.replace(profile_files.load("standard"), rounding_mode=mode, rounding_unit=unit)
    frame = pl.DataFrame(
        {"stake_e4": [int(stake * 10**4) for stake, _ in bets_drawn],
         "per_unit_e8": [int(per_unit * 10**8) for _, per_unit in bets_drawn],
         "rounding_mode": mode, "rounding_unit_e12": int(unit * 10**12)},
        schema={"stake_e4": pl.Int64, "per_unit_e8": pl.Int64, "rounding_mode": pl.String,
                "rounding_unit_e12": pl.Int128})
    batch = frame.select(settlement.rounded(pl.col("stake_e4").cast(pl.Int128) * pl.col("per_unit_e8")))
    paid = [bets.expected_paid(profile, stake, per_unit) for stake, per_unit in bets_drawn]  # in the default context
    with localcontext(prec=60):  # whose 28 digits would round the amounts compared here
        scalar = [amount * 10**12 for amount in paid]
        assert all(amount == amount.to_integral_value() for amount in scalar)
    assert batch.to_series().to_list() == [int(amount) for amount in scalar]


#: Kinds of line a CSV bet log holds, each as written (for bet i, on round R1 of a one-round log where
#: Player wins 5 to 3) and the reason it is quarantined, if any; settled ones say whether paid right.
BET_LINES = {
    "paid right": (lambda i: f"R1,B{i},PLAYER,10,20,", None),
    "paid wrong": (lambda i: f"R1,B{i},PLAYER,10,19.99,", None),
    "quoted": (lambda i: f'"R1","B{i}","banker","10.50",0,', None),
    "void": (lambda i: f"R9,B{i},TIE,5,5,VOID", None),
    "blank": (lambda i: "", None),  # not a bet: a line skipped
    "too few fields": (lambda i: f"R1,B{i},PLAYER", "the row has 3 fields, the header 6"),
    "too many fields": (lambda i: f"R1,B{i},PLAYER,10,20,,x", "the row has 7 fields, the header 6"),
    "no bet_id": (lambda i: "R1,,PLAYER,10,20,", "bet_id is empty"),
    "a stake of 0": (lambda i: f"R1,B{i},PLAYER,0,0,", "stake '0' is not more than 0"),
    "a comma in the stake": (lambda i: f'R1,B{i},PLAYER,"1,000",2000,', "stake '1,000' is not an amount"),
    "not in the log": (lambda i: f"R7,B{i},PLAYER,10,20,", "round 'R7' is not in the round log"),
    "open": (lambda i: f"R1,B{i},PLAYER,10,0,PENDING", "bet status 'PENDING' is not settled yet"),
}


@settings(max_examples=12, deadline=None)
@given(st.lists(st.sampled_from(sorted(BET_LINES)), min_size=1, max_size=12), st.booleans(), st.booleans())
def test_every_line_of_a_csv_bet_log_is_settled_or_quarantined_with_its_reason(tmp_path_factory, kinds, crlf, ends):
    """Drawn bet logs of lines settled (paid right or not, void) and lines that cannot be, with Windows
    line ends or not and a last line ended or not: every line is a bet, settled or quarantined with
    the reason its kind gives, the wrongly paid ones flagged, and the counts add up."""
    if kinds[-1] == "blank":  # an unended blank last line is no line at all
        ends = True
    folder = tmp_path_factory.mktemp("bets")
    (folder / "rounds.csv").write_text("round_id,player_card_1,banker_card_1,player_card_2,banker_card_2,"
                                       "player_card_3,banker_card_3\nR1,3S,KH,2D,3C,,\n")
    end = "\r\n" if crlf else "\n"
    lines = (BET_LINES[kind][0](i) for i, kind in enumerate(kinds))
    text = end.join(["round_id,bet_id,bet_type,stake,paid,status", *lines])
    (folder / "bets.csv").write_bytes((text + (end if ends else "")).encode())
    blank = kinds.count("blank")
    if blank == len(kinds):
        with pytest.raises(InputError, match="the header has no rows under it"):
            run.audit(folder / "rounds.csv", folder / "out", run.Options(bets=folder / "bets.csv", validate=False))
        return
    summary = run.audit(folder / "rounds.csv", folder / "out", run.Options(bets=folder / "bets.csv", validate=False,
                                                                            across_rounds=False)).summary
    quarantine = pl.read_parquet(folder / "out" / "bets_quarantine.parquet")
    reasons = {row: reason.split("; ")[0] for row, reason in quarantine.select("source_row", "reason").iter_rows()}
    expected = {i + 1: BET_LINES[kind][1] for i, kind in enumerate(kinds) if BET_LINES[kind][1]}
    assert {row: reasons.get(row, "")[:len(why)] for row, why in expected.items()} == expected, (text, reasons)
    assert set(reasons) == set(expected)
    flagged = set(pl.read_parquet(folder / "out" / "findings.parquet").filter(pl.col("source") == "bets")["source_row"])
    assert flagged == {i + 1 for i, kind in enumerate(kinds) if kind == "paid wrong"}
    assert (summary["bets_read"], summary["bets_quarantined"]) == (len(kinds) - blank, len(expected))
    assert summary["bets_settled"] == len(kinds) - blank - len(expected)
