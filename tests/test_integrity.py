"""Integrity across rounds and fairness statistics, on generated shoes and hand-written logs."""

import json
import math
from collections import Counter
from dataclasses import replace
from datetime import UTC, datetime

import polars as pl
import pytest
from hypothesis import given, settings, strategies as st
from polars.testing import assert_frame_equal

from conftest import ASSETS, cli
from baccarat_audit.engines import run
from baccarat_audit.rules import cards, coup
from baccarat_audit.inputs import profile_files
from baccarat_audit.checks import fairness
from baccarat_audit import generate
from baccarat_audit.inputs import ingest
from baccarat_audit.inputs.selection import Selection
from baccarat_audit.inputs.timestamps import timestamp
from baccarat_audit.tuning import Tuning

QUICK = run.Options(validate=False)
INTEGRITY = ("CARD_COUNT", "SHOE_SEQUENCE", "TIMESTAMP")


def _findings(out, codes=INTEGRITY):
    return pl.read_parquet(out / "findings.parquet").filter(pl.col("check").is_in(codes))


def test_clean_shoes_have_no_integrity_findings(clean_log, tmp_path):
    result = run.audit(clean_log["parquet"], tmp_path, QUICK)
    assert _findings(tmp_path, (*INTEGRITY, "TABLE_STATS")).height == 0
    assert {result.summary["checks"][c] for c in (*INTEGRITY, "TABLE_STATS")} == {"ran"}


def test_each_injected_integrity_fault_is_flagged_on_its_round(tmp_path):
    log = generate.generate(8000, seed=31, fault_rate=0.03)
    paths = generate.write(log, tmp_path / "log")
    run.audit(paths["parquet"], tmp_path / "out", QUICK)
    faults = pl.read_csv(paths["faults"]).filter(pl.col("check").is_in(INTEGRITY))
    assert set(faults["check"]) == set(INTEGRITY)
    found = _findings(tmp_path / "out")
    assert sorted(found.select("round_id", "check").iter_rows()) == sorted(faults.select("round_id", "check").iter_rows())


def test_finding_texts_name_the_card_the_gap_and_the_time(tmp_path):
    log = generate.generate(8000, seed=31, fault_rate=0.03)
    run.audit(generate.write(log, tmp_path / "log")["csv"], tmp_path / "out", QUICK)
    found = _findings(tmp_path / "out")
    card = found.filter(pl.col("check") == "CARD_COUNT").row(0, named=True)
    assert card["expected"] == "at most 8" and card["recorded"].startswith("9 ")
    assert "appears for the 9th time in shoe" in card["detail"]
    gap = found.filter(pl.col("check") == "SHOE_SEQUENCE").row(0, named=True)
    assert gap["detail"].endswith(" missing (not in the log, or quarantined).")
    assert int(gap["recorded"]) == int(gap["expected"]) + 1
    late = found.filter(pl.col("check") == "TIMESTAMP").row(0, named=True)
    assert "is earlier than the hand before it in shoe" in late["detail"]


def test_a_gap_names_the_hands_missing_from_it(tmp_path):
    """Hands 3 to 5 (not "3-5": hand numbers may be negative in a broken log, and "-2-3" reads as a sum)."""
    rows = [f"{shoe}-{hand},{shoe},{hand},KS,9H,5D,QC,," for shoe, hand in
            (("S1", 1), ("S1", 2), ("S1", 6), ("S1", 8), ("S2", -3), ("S2", 3))]
    (tmp_path / "gaps.csv").write_text("round_id,shoe_id,hand_no,player_card_1,banker_card_1,player_card_2,"
                                       "banker_card_2,player_card_3,banker_card_3\n" + "\n".join(rows) + "\n")
    run.audit(tmp_path / "gaps.csv", tmp_path / "out", QUICK)
    assert _findings(tmp_path / "out").select("round_id", "expected", "detail").rows() == [
        ("S1-6", "3", "hand_no 6 follows 2 in shoe S1: 3 to 5 missing (not in the log, or quarantined)."),
        ("S1-8", "7", "hand_no 8 follows 6 in shoe S1: 7 missing (not in the log, or quarantined)."),
        ("S2-3", "-2", "hand_no 3 follows -3 in shoe S2: -2 to 2 missing (not in the log, or quarantined).")]


def test_burned_cards_count_and_bad_times_are_found(tmp_path):
    rows = pl.read_csv(ASSETS / "integrity.csv", infer_schema=False)
    result = run.audit(ASSETS / "integrity.csv", tmp_path, QUICK)
    found = _findings(tmp_path).select("round_id", "check", "recorded").rows()
    assert found == [("S1-2", "CARD_COUNT", "9 KS"),
                     ("S1-2", "TIMESTAMP", "yesterday"),
                     ("S1-4", "TIMESTAMP", "2099-01-01T00:00:00Z")]
    assert result.summary["rows_read"] == rows.height


def test_checks_without_their_columns_or_suits_are_skipped(tmp_path):
    rank_only = pl.read_csv(ASSETS / "integrity.csv", infer_schema=False).with_columns(
        pl.col("^.*_card_.$").str.slice(0, pl.col("^.*_card_.$").str.len_chars() - 1)).drop("dealt_at", "hand_no")
    rank_only.write_csv(tmp_path / "rank_only.csv")
    result = run.audit(tmp_path / "rank_only.csv", tmp_path / "out", QUICK)
    assert result.summary["checks"]["CARD_COUNT"] == "skipped: the log records no suits"
    assert result.summary["checks"]["SHOE_SEQUENCE"] == "skipped: the log has no hand_no column"
    assert result.summary["checks"]["TIMESTAMP"] == "skipped: the log has no dealt_at column"
    assert result.summary["checks"]["TABLE_STATS"] == "skipped: the log has no table_id column"


@pytest.mark.parametrize("seed", [41, 42, 43])
def test_a_stacked_table_is_flagged_and_honest_tables_are_not(seed, tmp_path):
    log = generate.generate(12000, seed=seed, tables=4, stacked=("T03",))
    result = run.audit(generate.write(log, tmp_path / "log")["parquet"], tmp_path / "out", QUICK)
    assert result.summary["fairness"]["tables_flagged"] == ["T03"]
    stats = _findings(tmp_path / "out", ("TABLE_STATS",)).row(0, named=True)
    assert stats["table_id"] == "T03" and "Benjamini-Hochberg corrected p" in stats["detail"]
    honest = generate.generate(12000, seed=seed, tables=4)
    clean = run.audit(generate.write(honest, tmp_path / "honest")["parquet"], tmp_path / "clean", QUICK)
    assert clean.summary["fairness"]["tables_flagged"] == []


def test_table_findings_come_last_after_the_rounds_and_the_bets(tmp_path):
    """findings.parquet in its documented order: each round's, integrity's, the bets', the tables'."""
    log = generate.generate(4000, seed=41, fault_rate=0.02, tables=2, stacked=("T02",), with_bets=True)
    paths = generate.write(log, tmp_path / "log")
    run.audit(paths["parquet"], tmp_path / "out", run.Options(validate=False, bets=paths["bets_parquet"]))
    checks = pl.read_parquet(tmp_path / "out" / "findings.parquet")["check"].to_list()
    blocks = [code for i, code in enumerate(checks) if i == 0 or checks[i - 1] != code]
    assert blocks[-2:] == ["SETTLEMENT", "TABLE_STATS"] and checks.count("TABLE_STATS") == 1
    assert blocks.count("SETTLEMENT") == 1 and checks.count("SETTLEMENT") > 1
    assert {"BANKER_DRAW", "DUPLICATE_ROUND", "CARD_COUNT", "TIMESTAMP"} <= set(checks[:checks.index("SETTLEMENT")])


def test_fairness_rows_compare_with_exact_probabilities(clean_log, tmp_path):
    run.audit(clean_log["parquet"], tmp_path, QUICK)
    table = pl.read_parquet(tmp_path / "fairness.parquet")
    assert set(table["level"]) == {"table", "shoe"}
    t01 = {r["test"]: r for r in table.filter((pl.col("group") == "T01")).iter_rows(named=True)}
    p = fairness.probabilities(8)
    assert t01["banker_wins"]["expected"] == pytest.approx(t01["banker_wins"]["rounds"] * p["banker_wins"])
    assert p["player_pairs"] == pytest.approx(31 / 415)
    assert t01["outcome_chi_square"]["p_adjusted"] >= t01["outcome_chi_square"]["p_value"]
    # The tails in closed form: chi-square with 2 degrees of freedom is exp(-x/2); the binomial's summed term by term.
    chi = t01["outcome_chi_square"]
    assert chi["method"] == "chi-square"
    assert chi["p_value"] == pytest.approx(math.exp(-chi["statistic"] / 2), rel=1e-12)
    for test in ("banker_wins", "naturals", "player_pairs"):
        row = t01[test]
        assert row["method"] == "exact binomial"
        assert row["p_value"] == pytest.approx(_binomial_two_sided(int(row["observed"]), row["rounds"], p[test]),
                                               rel=1e-9)


def _binomial_two_sided(k: int, n: int, p: float) -> float:
    """Twice the smaller tail of Binomial(n, p) at k, at most 1, summed term by term in logarithms."""
    def term(i: int) -> float:
        return math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1)
                        + i * math.log(p) + (n - i) * math.log1p(-p))
    return min(1.0, 2 * min(sum(term(i) for i in range(k + 1)), sum(term(i) for i in range(k, n + 1))))


def test_honest_tables_small_and_large_are_not_flagged(tmp_path):
    """An honest night of 3,000 tables of two rounds and four of 5,000: a table whose two rounds both hold
    a Player pair (chance 0.56%, about 17 of them) is chance, not a flag. Exact tests, corrected over
    every table, flag none; the small tables' outcomes are tested by the exact multinomial test."""
    small = pl.read_parquet(generate.write(generate.generate(6000, seed=7, tables=3000), tmp_path / "small")["parquet"])
    large = pl.read_parquet(generate.write(generate.generate(20000, seed=8, tables=4), tmp_path / "large")["parquet"])
    large = large.with_columns(pl.col("round_id", "table_id", "shoe_id").map_batches(lambda c: "L" + c))
    pl.concat([small, large]).write_parquet(tmp_path / "night.parquet")
    result = run.audit(tmp_path / "night.parquet", tmp_path / "out", QUICK)
    tables = pl.read_parquet(tmp_path / "out" / "fairness.parquet").filter(pl.col("level") == "table")
    doubled = tables.filter((pl.col("test") == "player_pairs") & (pl.col("observed") == 2) & (pl.col("rounds") == 2))
    assert doubled.height >= 5 and doubled["p_value"].min() > 0.01
    assert result.summary["fairness"]["tables_flagged"] == [] and result.summary["findings"]["TABLE_STATS"] == 0
    methods = dict(tables.filter(pl.col("test") == "outcome_chi_square").group_by("rounds").agg(
        pl.col("method").unique()).iter_rows())
    assert methods == {2: ["exact multinomial"], 5000: ["chi-square"]}


def test_a_table_with_many_rows_quarantined_is_not_tested(tmp_path):
    """A mapping that forgot that "x" means "not dealt" quarantines every round of T01 without a third
    card: what is left of T01 holds no natural. Its tests say why they were not made, no finding accuses
    it, and the summary, the terminal and the report say so; the other tables are tested as before."""
    rounds = pl.read_parquet(generate.write(generate.generate(6000, seed=12, tables=4), tmp_path / "log")["parquet"])
    unmarked = (pl.col("table_id") == "T01") & pl.col("player_card_3").is_null()
    rounds.with_columns(player_card_3=pl.when(unmarked).then(pl.lit("x")).otherwise("player_card_3")) \
        .write_csv(tmp_path / "unmarked.csv")
    done = cli("audit", tmp_path / "unmarked.csv", "--out", tmp_path / "out", "--no-contract")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    share = rounds.filter(pl.col("table_id") == "T01").select(pl.col("player_card_3").is_null().mean()).item()
    why = f"skipped: {round(share * 100, 1)}% of its rows quarantined"
    assert summary["findings"]["TABLE_STATS"] == 0 and summary["fairness"]["tables_skipped"] == {"T01": why}
    tables = pl.read_parquet(tmp_path / "out" / "fairness.parquet").filter(pl.col("level") == "table")
    t01 = tables.filter(pl.col("group") == "T01")
    assert t01["skipped"].unique().to_list() == [why] and t01["p_value"].is_null().all() and not t01["flagged"].any()
    assert tables.filter(pl.col("group") != "T01")["skipped"].is_null().all()
    assert f"Fairness of table T01 not tested ({why})" in done.stdout
    assert f"Table T01 is not tested ({why})" in (tmp_path / "out" / "report.html").read_text()


def test_recorded_outcomes_are_tested_beside_the_replayed_and_their_disagreement_said(clean_log, tmp_path):
    """An engine whose recorded results differ from its cards (stale fields): the cards of T01 are fair,
    but a third of its Player wins were recorded, and paid, as Banker wins. The recorded tests fail for
    T01 alone, corrected apart; TABLE_STATS stays the replay's; the summary and the report say the two
    disagree."""
    rounds = pl.read_parquet(clean_log["parquet"]).with_row_index("n")
    stale = (pl.col("table_id") == "T01") & (pl.col("outcome") == "PLAYER") & (pl.col("n") % 3 == 0)
    rounds.with_columns(outcome=pl.when(stale).then(pl.lit("BANKER")).otherwise(pl.col("outcome"))).drop("n") \
        .write_parquet(tmp_path / "stale.parquet")
    done = run.audit(tmp_path / "stale.parquet", tmp_path / "out", QUICK)
    table = pl.read_parquet(tmp_path / "out" / "fairness.parquet").filter(pl.col("level") == "table")
    t01 = {r["test"]: r for r in table.filter(pl.col("group") == "T01").iter_rows(named=True)}
    played = rounds.filter(pl.col("table_id") == "T01")
    assert t01["recorded_banker_wins"]["observed"] == played.filter(
        (pl.col("outcome") == "BANKER") | stale).height
    assert t01["banker_wins"]["observed"] == played.filter(pl.col("outcome") == "BANKER").height  # the cards'
    assert t01[fairness.RECORDED_TEST]["flagged"] and not t01["outcome_chi_square"]["flagged"]
    outcomes = done.summary["fairness"]["outcomes"]
    assert (outcomes["recorded_flagged"], outcomes["replayed_flagged"], outcomes["disagree"]) == (["T01"], [], ["T01"])
    assert done.summary["findings"]["OUTCOME"] == rounds.filter(stale).height
    assert "T01" not in done.summary["fairness"]["tables_flagged"]  # the records flag no table
    page = (tmp_path / "out" / "report.html").read_text()
    assert "The two disagree for T01</b>" in page
    clean = run.audit(clean_log["parquet"], tmp_path / "clean", QUICK).summary["fairness"]["outcomes"]
    assert clean["disagree"] == [] and clean["recorded_flagged"] == []


@pytest.mark.parametrize("sizes", [Tuning(chunk_groups=7), Tuning(chunk_groups=7, cells_per_part=40)])
def test_fairness_tests_a_chunk_of_shoes_at_a_time_are_those_of_all_at_once(faulted_log, tmp_path, sizes):
    """Chunks of 7 shoes, and their cells in parts of 40 (a part of the shoes and dealers, by hash,
    at a time; merged back in order): the rows, their order, every figure and the table level's
    correction are the same, to the last bit."""
    run.audit(faulted_log["parquet"], tmp_path / "whole", QUICK)
    result = run.audit(faulted_log["parquet"], tmp_path / "chunked", replace(QUICK, tuning=sizes))
    whole, chunked = (pl.read_parquet(tmp_path / out / "fairness.parquet") for out in ("whole", "chunked"))
    assert whole.filter(pl.col("level") == "shoe")["group"].n_unique() > 3 * 7
    assert whole["level"].unique(maintain_order=True).to_list() == ["shoe", "table"]
    for level in ("shoe", "table"):  # each level's rows by group, then test
        placed = whole.filter(pl.col("level") == level).select("group", "test")
        assert_frame_equal(placed, placed.sort("group", "test"))
    assert_frame_equal(whole, chunked, check_exact=True)
    tables = whole.filter(pl.col("level") == "table")
    assert result.summary["fairness"]["tables_tested"] == tables["group"].n_unique() == 4


def test_group_counts_do_not_depend_on_the_order_of_the_cells():
    """A table dealt under two profiles: its expectation sums rounds x p over both, and the same cells
    in any order give the same floats, to the last bit (a group-by hands the cells over in no set order)."""
    import random

    rng = random.Random(3)
    cells = pl.DataFrame([{"table_id": f"T0{t}", "shoe_id": f"T0{t}-S{s}", "profile": profile, "rounds": rounds,
                           "quarantined": 0, "recorded_rounds": rounds,
                           **{f"{stat}_observed": rng.randint(0, rounds // 2)
                              for stat in (*fairness.STATISTICS, *fairness.RECORDED)}}
                          for t in (1, 2) for s in range(40) for profile, rounds in
                          (("standard", rng.randint(60, 90)), ("six-deck", rng.randint(60, 90)))])
    decks_of = {"standard": 8, "six-deck": 6}
    counts = fairness.group_counts(cells, decks_of, ["table_id", "shoe_id"])
    for _ in range(5):
        assert_frame_equal(fairness.group_counts(cells.sample(fraction=1.0, shuffle=True, seed=rng.randint(0, 99)),
                                                 decks_of, ["table_id", "shoe_id"]), counts, check_exact=True)
    t01 = counts.filter(pl.col("group") == "T01").row(0, named=True)
    by_profile = cells.filter(pl.col("table_id") == "T01").group_by("profile").agg(pl.col("rounds").sum())
    expected = sum(n * fairness.probabilities(decks_of[profile])["ties"] for profile, n in by_profile.iter_rows())
    assert t01["ties_expected"] == pytest.approx(expected, rel=1e-15)
    assert t01["rounds"] == by_profile["rounds"].sum()


def test_benjamini_hochberg_matches_the_textbook_example():
    p_values = [0.01, 0.04, 0.03, 0.005]
    assert fairness.benjamini_hochberg(p_values) == pytest.approx([0.02, 0.04, 0.04, 0.02])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.floats(min_value=0, max_value=1), st.sampled_from([0.0, 1e-300, 0.5, 1.0])),
                min_size=1, max_size=60))
def test_benjamini_hochberg_equals_scipys_on_drawn_p_values(p_values):
    """Drawn p-values, ties and extremes among them: the correction equals scipy's own
    (`scipy.stats.false_discovery_control`, Benjamini-Hochberg), written apart from ours."""
    from scipy.stats import false_discovery_control

    assert fairness.benjamini_hochberg(p_values) == pytest.approx(
        list(false_discovery_control(p_values, method="bh")), rel=1e-12, abs=1e-300)


def test_shifts_in_shoe_order_equal_windows_over_each_shoe():
    """The integrity checks replace windows over shoes by shifts on sorted rows; on random shoes with
    repeated, missing and unordered hand numbers, both give the same previous hand and running total."""
    import random

    from baccarat_audit.checks import integrity

    rng = random.Random(5)
    rows = 5000
    frame = pl.LazyFrame({
        "log_row": list(range(rows)),
        "shoe": [rng.randrange(40) for _ in range(rows)],
        "hand": [rng.randrange(1, 60) for _ in range(rows)],
        "in_coup": [rng.choice((4, 5, 6)) for _ in range(rows)],
    }, schema={"log_row": pl.UInt32, "shoe": pl.UInt32, "hand": pl.Int64, "in_coup": pl.Int32})
    by_shifts = integrity.in_shoe_order(frame.collect()).lazy().select(
        "log_row", previous=pl.when(integrity.SAME_SHOE).then(pl.col("hand").shift(1)),
        dealt=integrity.running_total(pl.col("in_coup"))).sort("log_row").collect()
    order = ["hand", "log_row"]
    by_windows = frame.select(
        "log_row", previous=pl.col("hand").shift(1).over("shoe", order_by=order),
        dealt=pl.col("in_coup").cum_sum().over("shoe", order_by=order)).sort("log_row").collect()
    assert by_shifts.equals(by_windows)


def test_integrity_finds_the_same_on_rounds_out_of_log_order(tmp_path):
    """A Spark task hands its rounds over in no particular order; the checks put them back in log
    order before shoe order. Here hand 2 is logged twice, the second copy earlier than the first:
    only in log order is the second copy the one dealt before the hand before it."""
    from datetime import UTC, datetime

    from baccarat_audit.checks import integrity

    path = tmp_path / "rounds.csv"
    path.write_text("round_id,shoe_id,hand_no,dealt_at,player_card_1,banker_card_1,player_card_2,banker_card_2,"
                    "player_card_3,banker_card_3\n"
                    "A,S1,1,2026-11-01T10:00:00Z,2S,9H,5D,QC,,\n"
                    "B,S1,2,2026-11-01T10:02:00Z,3S,9H,5D,QC,,\n"
                    "C,S1,2,2026-11-01T10:01:00Z,4S,9H,5D,QC,,\n"
                    "D,S1,3,2026-11-01T10:03:00Z,6S,9H,5D,QC,,\n")
    log = ingest.scan(path, "round_log")
    rounds = run.prepared(log.frame.with_row_index("log_row"), "standard").collect()
    decks = {"standard": 8}

    def found(rows: pl.DataFrame) -> list[tuple]:
        return integrity.integrity_findings([rows.lazy()], decks, log.columns, datetime(2026, 11, 30, tzinfo=UTC),
                                            lambda query: query.collect()).sort(integrity.IN_ORDER).select(
            "round_id", "check", "recorded").collect().rows()
    expected = [("C", "SHOE_SEQUENCE", "copy 2"), ("C", "TIMESTAMP", "2026-11-01T10:01:00Z")]
    assert found(rounds) == expected
    assert found(rounds.reverse()) == expected


@pytest.mark.parametrize("back", [1, 17, 30])
def test_a_shoe_that_comes_back_after_many_others_is_one_shoe(tmp_path, back):
    """Thirty shoes dealt one after another, two hands each, read two rows at a time; then one of
    them (the first, one in the middle, the last but one) deals its third hand. Read as it comes,
    that hand would open a shoe of its own and be a gap; the audit sees the shoe come back, however
    long ago its run of rows ended, and checks it whole: no finding."""
    rows = [(f"S{shoe}", hand) for shoe in range(1, 31) for hand in (1, 2)] + [(f"S{back}", 3)]
    path = tmp_path / "rounds.csv"
    path.write_text("round_id,shoe_id,hand_no,dealt_at,player_card_1,banker_card_1,player_card_2,banker_card_2,"
                    "player_card_3,banker_card_3\n" + "".join(
                        f"R{i},{shoe},{hand},2026-11-01T10:{i // 60:02d}:{i % 60:02d}Z,4H,KS,5D,QC,,\n"
                        for i, (shoe, hand) in enumerate(rows)))
    result = run.audit(path, tmp_path / "out", replace(QUICK, tuning=Tuning(piece_rows=2, read_rows=2)))
    assert result.summary["checks"]["SHOE_SEQUENCE"] == "ran"
    assert _findings(tmp_path / "out").height == 0


def test_a_window_that_begins_mid_shoe_is_not_a_gap_at_the_start_of_the_shoe(tmp_path):
    """Narrowed by --since, a shoe's first hand in the window follows hands outside it, not missing ones;
    gaps inside the window are still found, as the whole audit finds them."""
    paths = generate.write(generate.generate(8000, seed=31, fault_rate=0.03), tmp_path / "log")
    log = pl.read_parquet(paths["parquet"]).with_columns(at=timestamp(pl.col("dealt_at")))
    since = log["at"][1000]
    first_kept = log.filter(pl.col("at") >= since).group_by("shoe_id").agg(pl.col("hand_no").cast(pl.Int64).min())
    assert first_kept["hand_no"].max() > 1  # the window cuts shoes
    run.audit(paths["parquet"], tmp_path / "whole", QUICK)
    run.audit(paths["parquet"], tmp_path / "narrowed",
                run.Options(validate=False, selection=Selection(since=since)))
    gaps = {out: set(_findings(tmp_path / out, ("SHOE_SEQUENCE",)).select("round_id", "detail").iter_rows())
            for out in ("whole", "narrowed")}
    assert gaps["narrowed"] and gaps["narrowed"] <= gaps["whole"]
    assert not any("follows the start of the shoe" in detail for _, detail in gaps["narrowed"])


def _integrity_by_hand(rows: list[dict], decks: int, started: datetime) -> set[tuple]:
    """The integrity findings of a log, worked out shoe by shoe in plain Python from the README's
    rules, apart from the batch path: (row, check, expected, recorded) for each."""
    found = set()
    for row in rows:
        if row["dealt_at"] is not None and row["at"] is None:
            found.add((row["row"], "TIMESTAMP", "an ISO 8601 date-time", row["dealt_at"]))
        elif row["at"] is not None and row["at"] > started:
            found.add((row["row"], "TIMESTAMP", f"before {started:%Y-%m-%dT%H:%M:%SZ}", row["dealt_at"]))
        if row["shoe_id"] is not None and row["hand_no"] is not None and row["hand"] is None:
            found.add((row["row"], "SHOE_SEQUENCE", "a whole number", row["hand_no"]))
    for shoe in {row["shoe_id"] for row in rows} - {None}:
        # Hand_no order, file order breaking ties; a hand_no that is not a number comes first.
        dealt = sorted((row for row in rows if row["shoe_id"] == shoe),
                       key=lambda row: (row["hand"] is not None, row["hand"] or 0, row["row"]))
        timed = [row for row in dealt if row["at"] is not None]
        for before, row in zip(timed, timed[1:]):
            if row["at"] < before["at"]:
                found.add((row["row"], "TIMESTAMP", f"not before {before['at']:%Y-%m-%dT%H:%M:%SZ}", row["dealt_at"]))
        numbered, copies, cards_dealt = [row for row in dealt if row["hand"] is not None], Counter(), 0
        for previous, row in zip([None, *numbered], numbered):
            copies[row["hand"]] += 1
            expected = 1 if previous is None else previous["hand"] + 1
            if copies[row["hand"]] > 1:
                found.add((row["row"], "SHOE_SEQUENCE", "once per shoe", f"copy {copies[row['hand']]}"))
            elif row["hand"] > expected:
                found.add((row["row"], "SHOE_SEQUENCE", str(expected), row["hand_no"]))
            cards_dealt += len(row["cards"])
            if cards_dealt > 52 * decks >= cards_dealt - len(row["cards"]):
                found.add((row["row"], "SHOE_SEQUENCE", f"at most {52 * decks} cards", f"{cards_dealt} cards"))
        seen = Counter()
        for row in dealt:
            for card in row["cards"]:
                seen[card] += 1
                if seen[card] == decks + 1:
                    found.add((row["row"], "CARD_COUNT", f"at most {decks}", f"{decks + 1} {card}"))
    return found


# Twelve cards, dealt from one deck (a profile of this test's), so that a shoe shows one of them too
# often and deals more cards than it holds within a few dozen hands.
FEW_CARDS = ["KS", "9H", "5D", "AC", "2S", "10H", "QD", "7C", "3H", "8S", "4D", "6C"]


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(
    st.sampled_from(["S1", "S1", "S1", "S2", ""]),
    st.one_of(st.integers(min_value=0, max_value=9).map(str), st.sampled_from(["", "x", "2.5"])),
    st.one_of(st.integers(min_value=0, max_value=40), st.just(None), st.just(-1)),  # minutes, empty, unreadable
    st.lists(st.sampled_from(FEW_CARDS), min_size=4, max_size=4),
    st.lists(st.one_of(st.none(), st.sampled_from(FEW_CARDS)), min_size=2, max_size=2)), min_size=25, max_size=60),
    st.sampled_from([4, 7, 1000]), st.sampled_from(["as drawn", "shoe by shoe", "hand by hand"]))
def test_integrity_finds_what_working_each_shoe_out_by_hand_finds(tmp_path_factory, drawn, piece_rows, order):
    """Drawn logs of a few shoes (hand numbers repeated, missing, out of order or not numbers; times
    going backwards, empty or unreadable; few distinct cards, so that some shoe shows one too often),
    audited in pieces of a few rows (shoes cut across pieces, cards counted a few rows at a time) or
    whole: CARD_COUNT, SHOE_SEQUENCE and TIMESTAMP find exactly what working each shoe out by hand
    finds. The rows come as drawn (shoes mixed), shoe by shoe (each shoe one run of rows, its hands as
    drawn), or hand by hand (in shoe order already): the audit takes contiguous shoes piece by piece,
    others by their code."""
    def hand_order(row: tuple) -> tuple:  # as the audit orders hands: a hand_no that is not a number first
        return (row[1].isdigit(), int(row[1]) if row[1].isdigit() else 0)
    if order != "as drawn":
        drawn = sorted(drawn, key=lambda row: (row[0], *(hand_order(row) if order == "hand by hand" else ())))
    path = tmp_path_factory.mktemp("shoes") / "log.csv"
    lines = ["round_id,shoe_id,hand_no,dealt_at,player_card_1,banker_card_1,player_card_2,banker_card_2,"
             "player_card_3,banker_card_3"]
    rows = []  # each round as the hand-worked checks read it
    for i, (shoe, hand, minute, opening, thirds) in enumerate(drawn):
        dealt_at = "" if minute is None else "noon" if minute < 0 else f"2025-06-01T12:{minute:02d}:00Z"
        lines.append(",".join([f"R{i}", shoe, hand, dealt_at, *opening, *(third or "" for third in thirds)]))
        replayed = coup.replay(*(cards.value_of(cards.parse(card)) for card in opening),
                               *(None if third is None else cards.value_of(cards.parse(third)) for third in thirds))
        # Cards as dealt: a third card given where the tableau says stand still came out of the shoe.
        dealt = [*opening, *(third for third in thirds if third is not None)]
        assert len(dealt) == 4 + replayed.player_drew + replayed.banker_drew
        at = None if minute is None or minute < 0 else datetime(2025, 6, 1, 12, minute, tzinfo=UTC)
        rows.append({"row": i + 1, "shoe_id": shoe or None, "hand_no": hand or None,
                     "hand": int(hand) if hand.isdigit() else None, "dealt_at": dealt_at or None, "at": at,
                     "cards": dealt})
    path.write_text("\n".join(lines) + "\n")
    shipped = profile_files.SCHEMAS, profile_files.PROFILES
    profile_files.SCHEMAS = path.parent / "schemas"
    profile_files.PROFILES = profile_files.SCHEMAS / "profiles"
    profile_files.PROFILES.mkdir(parents=True)
    (profile_files.PROFILES / "standard.toml").write_text((shipped[1] / "standard.toml").read_text())
    (profile_files.PROFILES / "one-deck.toml").write_text('name = "one-deck"\nbase = "standard"\ndecks = 1\n')
    profile_files.load.cache_clear()
    try:
        sizes = Tuning(piece_rows=piece_rows, read_rows=max(1, piece_rows // 2))
        result = run.audit(path, path.parent / "out", run.Options(validate=False, profile="one-deck", tuning=sizes))
    finally:
        profile_files.SCHEMAS, profile_files.PROFILES = shipped
        profile_files.load.cache_clear()
    started = datetime.fromisoformat(result.summary["started_at"])  # every drawn time is before it
    findings = pl.read_parquet(path.parent / "out" / "findings.parquet").filter(
        pl.col("check").is_in(["CARD_COUNT", "SHOE_SEQUENCE", "TIMESTAMP"]))
    assert set(findings.select("source_row", "check", "expected", "recorded").iter_rows()) == \
        _integrity_by_hand(rows, 1, started)


def test_a_p_value_past_what_a_float_holds_is_said_below_1e_300_not_0(tmp_path):
    """A table whose 9,000 rounds were all Banker wins (a log kept of them alone): its p-values are below
    the smallest float; the finding and the report say "< 1e-300", never "p = 0"."""
    rounds = pl.read_parquet(generate.write(generate.generate(20000, seed=3, tables=1), tmp_path / "log")["parquet"])
    rounds.filter(pl.col("outcome") == "BANKER").write_parquet(tmp_path / "banker.parquet")
    run.audit(tmp_path / "banker.parquet", tmp_path / "out", QUICK)
    (stats,) = _findings(tmp_path / "out", ("TABLE_STATS",)).iter_rows(named=True)
    assert stats["recorded"] == "< 1e-300" and stats["detail"].endswith("Benjamini-Hochberg corrected p < 1e-300.")
    page = (tmp_path / "out" / "report.html").read_text()
    assert '<td class="num">&lt; 1e-300</td>' in page and '<td class="num">0</td><td class="num">0</td>' not in page


@pytest.mark.parametrize("order", ["table after table", "tables mixed by time"])
def test_three_nights_cut_mid_shoe_and_chained_with_after_find_what_one_audit_of_them_finds(order, tmp_path):
    """Each night's log cut while every table deals a shoe: chained by --after, each night carries the
    shoes open at the end of the one before, and the three find what one audit of the three together
    finds (fairness aside, which is per night). Unchained, the second night flags each shoe that starts
    past its first hand, saying how to chain. Both ways of checking shoes: in log order, and keyed."""
    log = generate.generate(6000, seed=12, fault_rate=0.02, tables=4)
    rows = pl.read_csv(generate.write(log, tmp_path / "log")["csv"], infer_schema=False)
    if order != "table after table":
        rows = rows.sort("dealt_at", maintain_order=True)
    cuts = [rows.slice(0, 2000), rows.slice(2000, 2500), rows.slice(4500)]
    options = replace(QUICK, as_of=datetime(2027, 1, 1, tzinfo=UTC))
    rows.write_csv(tmp_path / "all.csv")
    run.audit(tmp_path / "all.csv", tmp_path / "all", options)
    found, before, carried = [], None, 0
    for night, cut in enumerate(cuts, start=1):
        cut.write_csv(tmp_path / f"night{night}.csv")
        done = run.audit(tmp_path / f"night{night}.csv", tmp_path / f"out{night}", replace(options, after=before))
        found.append(pl.read_parquet(tmp_path / f"out{night}" / "findings.parquet"))
        # Each table's last shoe, the ones carried in too where the night deals no other after them.
        tables = pl.concat([rows.slice(0, 0), *cuts[:night]]).group_by("table_id").agg(pl.col("shoe_id").last())
        open_shoes = done.summary["open_shoes"]
        assert sorted(s["shoe_id"] for s in open_shoes["shoes"]) == sorted(tables["shoe_id"])
        if before is not None:
            assert done.summary["after"]["shoes_carried"] == carried and len(done.summary["after"]["sha256"]) == 64
        before, carried = tmp_path / f"out{night}", open_shoes["count"]
    key = ["round_id", "check", "detail"]
    every = pl.read_parquet(tmp_path / "all" / "findings.parquet")
    chained = pl.concat(found).filter(pl.col("check") != "TABLE_STATS").select(key).sort(key)
    assert chained.equals(every.filter(pl.col("check") != "TABLE_STATS").select(key).sort(key))
    assert {"CARD_COUNT", "SHOE_SEQUENCE", "TIMESTAMP"} <= set(chained["check"])
    run.audit(tmp_path / "night2.csv", tmp_path / "alone", options)
    starts = pl.read_parquet(tmp_path / "alone" / "findings.parquet").filter(
        pl.col("detail").str.contains("follows the start of the shoe"))
    cut_in = cuts[1].group_by("shoe_id").agg(pl.col("hand_no").cast(pl.Int64).min()).filter(pl.col("hand_no") > 1)
    assert starts.height == cut_in.height > 0
    chained_starts = found[1].filter(pl.col("detail").str.contains("follows the start of the shoe"))
    assert starts.join(chained_starts, on="round_id").height == 0  # chained, each follows its hand before the cut
    assert starts["detail"].str.ends_with("Its first hands may be in the previous log: audit this one with --after "
                                          "and that log's output folder, which carries the shoes open at its end.").all()


@pytest.mark.parametrize("read_rows", [10_000, 40])
def test_a_shoe_its_table_comes_back_to_is_carried_whole_however_the_log_is_cut(read_rows, tmp_path):
    """A table that deals some hands of a shoe, then another shoe, then the rest of the first, ends the
    night on the first: every row of it is carried, as the next night's checks would read it in one log,
    whether the read holds the whole log at once or the pieces cut it between the shoes."""
    rows = pl.read_csv(ASSETS.parent.parent / "data" / "rounds.csv", infer_schema=False).filter(
        pl.col("table_id") == "T01")
    first, second = (rows.filter(pl.col("shoe_id") == shoe) for shoe in rows["shoe_id"].unique(maintain_order=True)[:2])
    pl.concat([first.head(30), second, first.slice(30)]).write_csv(tmp_path / "night.csv")
    run.audit(tmp_path / "night.csv", tmp_path / "out", replace(QUICK, tuning=Tuning(read_rows=read_rows)))
    carried = pl.read_parquet(tmp_path / "out" / "open_shoes.parquet")
    assert first.height > 30 and carried["round_id"].to_list() == first["round_id"].to_list()  # every hand, in order


def test_after_a_folder_that_holds_no_audit_is_exit_2(tmp_path):
    (tmp_path / "empty").mkdir()
    done = cli("audit", ASSETS.parent.parent / "data" / "rounds.csv", "--out", tmp_path / "out", "--after",
               tmp_path / "empty")
    assert done.returncode == 2
    assert done.stderr == (f"error: {tmp_path / 'empty'}: not an audit output directory (no summary.json of "
                           "baccarat-audit in it); --after takes the previous night's --out\n")
