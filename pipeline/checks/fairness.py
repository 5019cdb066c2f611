"""Fairness statistics: each table's (dealer's, shoe's) outcomes against their exact expectations.

Observed counts come from the replay (the cards as dealt), grouped by polars. Each round's expected
probabilities come from the exact enumeration of its profile's shoe (`pipeline.odds`), so a group that
mixes deck counts is still compared fairly: the expected count is the sum of its rounds' probabilities
and the variance the sum of p(1 - p). Per group: a z-score and two-sided normal p-value for Banker
wins, Player wins, Ties, naturals, Player pairs and Banker pairs, and a chi-square test (2 degrees of
freedom) of the Banker/Player/Tie distribution.

Tables are tested together, so their p-values are corrected with Benjamini-Hochberg (false discovery
rate) over every table-level test (the chi-square and the natural and pair z-tests); a table is flagged
TABLE_STATS when its smallest corrected p-value is below the threshold. Dealer and shoe rows are
descriptive: they are reported, never flagged.
"""

from __future__ import annotations

from collections.abc import Iterator


import polars as pl

from ..rules import exact_odds
from .. import tuning
from .round_checks import recorded_outcome
from .findings import FINDINGS_SCHEMA, PLACE_COLUMNS

OUTCOMES = ("banker_wins", "player_wins", "ties")  # what the outcome chi-squares test
STATISTICS = (*OUTCOMES, "naturals", "player_pairs", "banker_pairs")
#: The outcomes as the log recorded them (and the house paid them), beside the replay's: counted over
#: the rounds whose recorded outcome is readable, tested against the same exact chances, and corrected
#: apart. They flag no table; the report and summary.json say where they and the replay disagree.
RECORDED = tuple(f"recorded_{s}" for s in OUTCOMES)
RECORDED_TEST = "recorded_outcome_chi_square"
LEVELS = ("table_id", "dealer_id", "shoe_id")
FLAGGED_TESTS = ("outcome_chi_square", "naturals", "player_pairs", "banker_pairs")
RANKED = ("player_pairs", "banker_pairs")  # the tests that need the cards' ranks: not made on points only
DEFAULT_THRESHOLD = 0.001
MEANING = "A table's outcome frequencies are further from the exact expectation than chance allows."


def probabilities(decks: int) -> dict[str, float]:
    """Exact chance per round of each statistic, for a shoe of `decks` decks."""
    tally = exact_odds.finishes_vectorized(decks)
    total = sum(tally.values())
    results = exact_odds.result_counts_from(tally)
    pair = float(exact_odds.pair_probability(decks))
    return {
        "banker_wins": results["BANKER"] / total,
        "player_wins": results["PLAYER"] / total,
        "ties": results["TIE"] / total,
        "naturals": sum(w for f, w in tally.items() if f.natural) / total,
        "player_pairs": pair,
        "banker_pairs": pair,
    }


def observed_counts(replayed: pl.LazyFrame, levels: list[str]) -> pl.LazyFrame:
    """The one pass over the rounds: per (table, dealer, shoe, profile) cell, rounds and observed counts."""
    rank = {hand: [pl.col(f"{hand}_code_{i}") // 8 for i in (1, 2)] for hand in ("player", "banker")}
    observed = {
        "banker_wins": pl.col("result") == "BANKER",
        "player_wins": pl.col("result") == "PLAYER",
        "ties": pl.col("result") == "TIE",
        "naturals": pl.col("natural"),
        "player_pairs": rank["player"][0] == rank["player"][1],
        "banker_pairs": rank["banker"][0] == rank["banker"][1],
    }
    # The recorded result read once, a step before the flags: named in four of them within one
    # expression, it was read again for each.
    recorded = pl.col("recorded_result")
    observed |= {"recorded_banker_wins": recorded == "BANKER", "recorded_player_wins": recorded == "PLAYER",
                 "recorded_ties": recorded == "TIE"}
    flags = {"recorded_rounds": recorded.is_not_null(), **{f"{name}_observed": flag for name, flag in observed.items()}}
    # The flags made before the grouping, then summed as columns: an expression summed per group is
    # worked group by group, and a piece has thousands of shoes (docs/performance.md).
    return (replayed.with_columns(recorded_result=recorded_outcome(pl.col("outcome")))
            .select(*levels, "profile", **flags).group_by(*levels, "profile").agg(
                pl.len().alias("rounds"), *(pl.col(name).sum() for name in flags)))


def group_counts(cells: pl.DataFrame, decks_of: dict[str, int], levels: list[str]) -> pl.DataFrame:
    """Per level and group: rounds, and per statistic the observed count, expected count and variance.

    The expectation of a group is the sum over its cells of rounds x p (p from the cell's profile), so
    this works on the few collected cells, not on the rounds. The rounds are added up per profile
    first, in integers, and the few products then in profile order: summed cell by cell, the floats
    depended on the order the cells came in, which a group-by does not fix, and two runs of one log
    differed in the last digits of a p-value.
    """
    def chances_of(decks: int) -> dict[str, float]:
        p = probabilities(decks)
        return {f"p_{s}": p[s] for s in STATISTICS} | {f"p_recorded_{s}": p[s] for s in OUTCOMES}

    counted = (*STATISTICS, *RECORDED)
    chances = pl.DataFrame([{"profile": profile, **chances_of(decks)} for profile, decks in decks_of.items()],
                           schema={"profile": pl.String, **{f"p_{s}": pl.Float64 for s in counted}})
    frames = []
    for level in levels:
        per_profile = (cells.filter(pl.col(level).is_not_null()).group_by(level, "profile")
                       .agg(pl.col("rounds", "recorded_rounds", *(f"{s}_observed" for s in counted)).sum())
                       .join(chances, on="profile", how="left").sort(level, "profile"))
        aggregates = [pl.col("rounds").sum(), pl.col("recorded_rounds").sum()]
        for s in counted:
            p, n = pl.col(f"p_{s}"), pl.col("recorded_rounds" if s in RECORDED else "rounds")
            aggregates += [pl.col(f"{s}_observed").sum(), (n * p).sum().alias(f"{s}_expected"),
                           (n * p * (1 - p)).sum().alias(f"{s}_variance")]
        frames.append(per_profile.group_by(level, maintain_order=True).agg(aggregates)
                      .select(pl.lit(level.removesuffix("_id")).alias("level"), pl.col(level).alias("group"),
                              pl.exclude(level)))
    return pl.concat(frames)


#: Each test's place among the tests' names sorted: how `statistics` orders a group's rows.
_TEST_RANK = {name: i for i, name in enumerate(sorted([*STATISTICS, "outcome_chi_square", *RECORDED, RECORDED_TEST]))}


def statistics(counts: pl.DataFrame, threshold: float = DEFAULT_THRESHOLD, skipped: tuple[str, ...] = ()
               ) -> pl.DataFrame:
    """One row per (level, group, test): observed, expected, z or chi-square, p-value, BH-corrected p;
    none for the statistics `skipped` (RANKED, of a log of card points).

    `counts` is `group_counts` of one level: one row per group, in order. Tail probabilities are
    computed on whole columns.
    """
    # The tails straight from scipy.special (what scipy.stats calls underneath): same values, and a
    # quarter of a second to import instead of a second and a half.
    from scipy.special import chdtrc, ndtr

    # The rows put in the order of group and test by numbers, not by their texts: each group's place
    # in `counts` and each test's among the tests' names sorted (`_TEST_RANK`).
    counts = counts.with_row_index("at")
    place = ["level", "group", "at"]
    rank = {name: pl.lit(i, pl.UInt8) for name, i in _TEST_RANK.items()}
    per_test = []
    for tests, outcomes, rounds, chi_square_test in ((STATISTICS, OUTCOMES, "rounds", "outcome_chi_square"),
                                                     (RECORDED, RECORDED, "recorded_rounds", RECORDED_TEST)):
        of = counts.filter(pl.col(rounds) > 0)  # a log without recorded outcomes has no recorded tests
        for s in (s for s in tests if s not in skipped):
            observed, expected, variance = (pl.col(f"{s}_{k}") for k in ("observed", "expected", "variance"))
            per_test.append(of.select(
                *place, pl.col(rounds).alias("rounds"), test=pl.lit(s), rank=rank[s],
                observed=observed.cast(pl.Float64),
                expected=expected,
                statistic=pl.when(variance > 0).then((observed - expected) / variance.sqrt()).otherwise(0.0)))
        chi_square = pl.sum_horizontal(
            pl.when(pl.col(f"{s}_expected") > 0)
            .then((pl.col(f"{s}_observed") - pl.col(f"{s}_expected")) ** 2 / pl.col(f"{s}_expected"))
            .otherwise(0.0)
            for s in outcomes)
        per_test.append(of.select(*place, pl.col(rounds).alias("rounds"), test=pl.lit(chi_square_test),
                                  rank=rank[chi_square_test],
                                  observed=pl.lit(None, pl.Float64), expected=pl.lit(None, pl.Float64),
                                  statistic=chi_square))
    table = pl.concat(per_test).cast({"rounds": pl.UInt32})
    z = table["statistic"].to_numpy()
    two_sided = 2 * ndtr(-abs(z))  # normal survival function, both tails
    tail = chdtrc(2, z)  # chi-square survival function, 2 degrees of freedom
    table = table.with_columns(p_value=pl.when(pl.col("test").str.ends_with("chi_square"))
                               .then(pl.Series(tail)).otherwise(pl.Series(two_sided)))
    table = table.sort("at", "rank", maintain_order=True).drop("at", "rank").with_row_index("row")
    adjusted = []
    for corrected_together in (FLAGGED_TESTS, (RECORDED_TEST,)):  # the replay's tests, the records' apart
        tested = table.filter((pl.col("level") == "table") & pl.col("test").is_in(corrected_together))
        adjusted.append(pl.DataFrame({"row": tested["row"],
                                      "p_adjusted": benjamini_hochberg(tested["p_value"].to_list())},
                                     schema={"row": pl.UInt32, "p_adjusted": pl.Float64}))
    return (table.join(pl.concat(adjusted), on="row", how="left", maintain_order="left").drop("row")
            .with_columns(flagged=(pl.col("p_adjusted") < threshold).fill_null(False)))


def statistics_by_chunk(counts: pl.DataFrame, threshold: float = DEFAULT_THRESHOLD, skipped: tuple[str, ...] = ()
                        ) -> Iterator[pl.DataFrame]:
    """`statistics` of `counts` of one level (`group_counts` of it, its groups in order), in the order
    (group, test), a chunk of groups at a time; the table level whole, since only its tests are
    corrected together: the other levels' rows are the same whichever groups share a chunk. Their
    rows grow with the log (seven a shoe), and held at once they were the peak of a large audit.
    At least one chunk, empty for a level without a group, so that the tests have their columns."""
    whole = not counts.height or counts["level"][0] == "table"
    step = max(counts.height, 1) if whole else tuning.current().chunk_groups
    for first in range(0, max(counts.height, 1), step):
        yield statistics(counts.slice(first, step), threshold, skipped)


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """Benjamini-Hochberg adjusted p-values (step-up, monotone, capped at 1), in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p_values[i] * m / rank)
        adjusted[i] = running
    return adjusted


def outcomes_compared(table: pl.DataFrame) -> dict:
    """The tables whose outcomes fail their chi-square (Benjamini-Hochberg corrected p below the
    threshold) as replayed from the cards and as the log recorded them, and those where the two
    disagree: a table whose recorded results lean where its cards do not, or the other way."""
    def flagged(test: str) -> set[str]:
        return set(table.filter((pl.col("level") == "table") & (pl.col("test") == test) & pl.col("flagged"))["group"])
    replayed, recorded = flagged("outcome_chi_square"), flagged(RECORDED_TEST)
    return {"replayed_flagged": sorted(replayed), "recorded_flagged": sorted(recorded),
            "disagree": sorted(replayed ^ recorded)}


def table_findings(table: pl.DataFrame, threshold: float = DEFAULT_THRESHOLD) -> pl.DataFrame:
    """TABLE_STATS findings: one per table flagged by the replay's tests, naming its most significant."""
    flagged = (table.filter(pl.col("flagged") & pl.col("test").is_in(FLAGGED_TESTS)).sort("p_adjusted")
               .group_by("group", maintain_order=True).first())
    detail = [
        f"Table {r['group']}: {r['test'].replace('_', ' ')} over {r['rounds']} rounds "
        + (f"gives chi-square {r['statistic']:.1f} on 2 df" if r["observed"] is None
           else f"observed {r['observed']:.0f}, expected {r['expected']:.1f} (z = {r['statistic']:.2f})")
        + f"; Benjamini-Hochberg corrected p = {r['p_adjusted']:.3g}."
        for r in flagged.iter_rows(named=True)
    ]
    return pl.DataFrame({
        "source_file": [None] * flagged.height, "source_row": [None] * flagged.height,
        "source": ["rounds"] * flagged.height,
        "round_id": [None] * flagged.height, "table_id": flagged["group"],
        "shoe_id": [None] * flagged.height, "hand_no": [None] * flagged.height,
        "dealt_at": [None] * flagged.height, "bet_id": [None] * flagged.height,
        "check": ["TABLE_STATS"] * flagged.height,
        "expected": [f"corrected p >= {threshold:g}"] * flagged.height,
        "recorded": [f"{p:.3g}" for p in flagged["p_adjusted"]],
        "detail": detail,
    }, schema=FINDINGS_SCHEMA).select(*PLACE_COLUMNS, "check", "expected", "recorded", "detail")
