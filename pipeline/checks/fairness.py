"""Fairness statistics: each table's (dealer's, shoe's) outcomes against their exact expectations.

Observed counts come from the replay (the cards as dealt), grouped by polars. Each round's expected
probabilities come from the exact enumeration of its profile's shoe (`pipeline.odds`), so a group that
mixes deck counts is still compared fairly: the expected count is the sum of its rounds' probabilities.
Per group and statistic (Banker wins, Player wins, Ties, naturals, Player pairs, Banker pairs): a z-score
for the eye, and the p-value of an exact two-sided binomial test (twice the smaller tail, at the group's
mean chance). The Banker/Player/Tie distribution is tested by the chi-square test (2 degrees of freedom)
where every expected count is at least MIN_EXPECTED, and by the exact multinomial test where one is
not: the normal and chi-square approximations do not hold on a few rounds, and flagged honest tables.

Tables are tested together, so their p-values are corrected with Benjamini-Hochberg (false discovery
rate) over every table-level test (the chi-square and the natural and pair tests); a table is flagged
TABLE_STATS when its smallest corrected p-value is below the threshold. Dealer and shoe rows are
descriptive: they are reported, never flagged.

A group more than MAX_QUARANTINED of whose rows were quarantined is not tested: the rows left may not
stand for the whole (a mapping that quarantined every round with a third card leaves no natural out),
and its rows say why in `skipped`.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache

import numpy as np
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
MIN_EXPECTED = 5  # the chi-square's rule of thumb: below it in any outcome, the exact multinomial test
MAX_QUARANTINED = 0.01  # a group with a larger share of its rows quarantined is not tested
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


def observed_counts(prepared: pl.LazyFrame, levels: list[str]) -> pl.LazyFrame:
    """The one pass over the rounds: per (table, dealer, shoe, profile) cell, rounds replayed, rows
    quarantined (`reject`; their profile left out, as it may be no profile) and observed counts."""
    replayed = pl.col("reject").is_null()
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
    flags = {"replayed": replayed, "recorded_rounds": replayed & recorded.is_not_null(),
             **{f"{name}_observed": replayed & flag for name, flag in observed.items()}}
    # The flags made before the grouping, then summed as columns: an expression summed per group is
    # worked group by group, and a piece has thousands of shoes (docs/performance.md).
    return (prepared.with_columns(recorded_result=recorded_outcome(pl.col("outcome")),
                                  profile=pl.when(replayed).then(pl.col("profile")))
            .select(*levels, "profile", **flags).group_by(*levels, "profile").agg(
                pl.col("replayed").sum().alias("rounds"), (~pl.col("replayed")).sum().alias("quarantined"),
                *(pl.col(name).sum() for name in flags if name != "replayed")))


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
                       .agg(pl.col("rounds", "quarantined", "recorded_rounds", *(f"{s}_observed" for s in counted)).sum())
                       .join(chances, on="profile", how="left").sort(level, "profile"))
        aggregates = [pl.col("rounds").sum(), pl.col("quarantined").sum(), pl.col("recorded_rounds").sum()]
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
    """One row per (level, group, test): observed, expected, z or chi-square, the test's method, p-value,
    BH-corrected p; none for the statistics `skipped` (RANKED, of a log of card points). A group with
    too many rows quarantined (MAX_QUARANTINED) has its rows, without a p-value, and `skipped` says why.

    `counts` is `group_counts` of one level: one row per group, in order. Tail probabilities are
    computed on whole columns.
    """
    # The tails straight from scipy.special (what scipy.stats calls underneath): same values, and a
    # quarter of a second to import instead of a second and a half.
    from scipy.special import chdtrc

    # The rows put in the order of group and test by numbers, not by their texts: each group's place
    # in `counts` and each test's among the tests' names sorted (`_TEST_RANK`).
    counts = counts.with_row_index("at")
    place = ["level", "group", "at"]
    rank = {name: pl.lit(i, pl.UInt8) for name, i in _TEST_RANK.items()}
    share = pl.col("quarantined") / (pl.col("quarantined") + pl.col("rounds"))
    untested = pl.when(share > MAX_QUARANTINED).then(
        pl.format("skipped: {}% of its rows quarantined", (share * 100).round(1)))
    per_test = []
    for tests, outcomes, rounds, chi_square_test in ((STATISTICS, OUTCOMES, "rounds", "outcome_chi_square"),
                                                     (RECORDED, RECORDED, "recorded_rounds", RECORDED_TEST)):
        of = counts.filter(pl.col(rounds) > 0)  # a log without recorded outcomes has no recorded tests
        n = of[rounds].to_numpy()
        for s in (s for s in tests if s not in skipped):
            observed, expected, variance = (pl.col(f"{s}_{k}") for k in ("observed", "expected", "variance"))
            per_test.append(of.select(
                *place, pl.col(rounds).alias("rounds"), test=pl.lit(s), rank=rank[s],
                observed=observed.cast(pl.Float64),
                expected=expected,
                statistic=pl.when(variance > 0).then((observed - expected) / variance.sqrt()).otherwise(0.0),
                method=pl.lit("exact binomial"),
                p_value=pl.Series(_binomial_two_sided(of[f"{s}_observed"].to_numpy(), n,
                                                      of[f"{s}_expected"].to_numpy() / n)),
                skipped=untested))
        chi_square = pl.sum_horizontal(
            pl.when(pl.col(f"{s}_expected") > 0)
            .then((pl.col(f"{s}_observed") - pl.col(f"{s}_expected")) ** 2 / pl.col(f"{s}_expected"))
            .otherwise(0.0)
            for s in outcomes)
        # Exact where the chi-square does not hold; its table of splits grows as the square of the rounds.
        small = (pl.min_horizontal(pl.col(f"{s}_expected") for s in outcomes) < MIN_EXPECTED) & (pl.col(rounds) <= 1000)
        tested = of.select(*place, pl.col(rounds).alias("rounds"), test=pl.lit(chi_square_test),
                           rank=rank[chi_square_test],
                           observed=pl.lit(None, pl.Float64), expected=pl.lit(None, pl.Float64),
                           statistic=chi_square, small=small, skipped=untested)
        exact = _multinomial(of.filter(small), outcomes, rounds)
        per_test.append(tested.with_columns(
            method=pl.when(pl.col("small")).then(pl.lit("exact multinomial")).otherwise(pl.lit("chi-square")),
            p_value=pl.when(pl.col("small")).then(pl.Series(_spread(exact, of.select(small).to_series().to_numpy())))
            .otherwise(pl.Series(chdtrc(2, tested["statistic"].to_numpy()))))
            .select(per_test[-1].columns))
    table = (pl.concat(per_test).cast({"rounds": pl.UInt32})
             .with_columns(p_value=pl.when(pl.col("skipped").is_null()).then("p_value")))
    table = table.sort("at", "rank", maintain_order=True).drop("at", "rank").with_row_index("row")
    adjusted = []
    for corrected_together in (FLAGGED_TESTS, (RECORDED_TEST,)):  # the replay's tests, the records' apart
        tested = table.filter((pl.col("level") == "table") & pl.col("test").is_in(corrected_together)
                              & pl.col("p_value").is_not_null())
        adjusted.append(pl.DataFrame({"row": tested["row"],
                                      "p_adjusted": benjamini_hochberg(tested["p_value"].to_list())},
                                     schema={"row": pl.UInt32, "p_adjusted": pl.Float64}))
    return (table.join(pl.concat(adjusted), on="row", how="left", maintain_order="left").drop("row")
            .with_columns(flagged=(pl.col("p_adjusted") < threshold).fill_null(False))
            .select(pl.exclude("skipped"), "skipped"))


def _binomial_two_sided(observed: np.ndarray, n: np.ndarray, chance: np.ndarray) -> np.ndarray:
    """The exact two-sided binomial p-value of each `observed` count of `n` trials at `chance`: twice
    the smaller tail, at most 1. Worked out once per distinct (count, trials, chance): the shoes of a
    large log repeat a few thousand of them, and each tail is an incomplete beta function."""
    from scipy.special import bdtr, bdtrc

    asked = pl.DataFrame({"k": observed.astype(np.int64), "n": n.astype(np.int64),
                          "chance": np.clip(chance, 0.0, 1.0)})
    distinct = asked.unique()
    k, trials, at = (distinct[c].to_numpy() for c in ("k", "n", "chance"))
    below = bdtr(k, trials, at)  # P(X <= k)
    above = np.where(k > 0, bdtrc(np.maximum(k - 1, 0), trials, at), 1.0)  # P(X >= k)
    tails = distinct.with_columns(p=np.minimum(1.0, 2 * np.minimum(below, above)))
    return asked.join(tails, on=["k", "n", "chance"], how="left", maintain_order="left", nulls_equal=True)["p"].to_numpy()


def _multinomial(groups: pl.DataFrame, outcomes: tuple[str, ...], rounds: str) -> np.ndarray:
    """The exact multinomial p-value of each group's outcome counts (the chance of every split of its
    rounds no likelier than the one observed), at the group's mean chances: for groups of few rounds,
    where the chi-square does not hold. Groups of one size and chances share one table of splits."""
    keys = groups.select(pl.col(rounds).cast(pl.Int64).alias("n"),
                         *(pl.col(f"{s}_expected") / pl.col(rounds) for s in outcomes[:2]),
                         *(pl.col(f"{s}_observed").cast(pl.Int64) for s in outcomes[:2]))
    found = np.empty(groups.height)
    for n, first, second, at in keys.with_row_index("at").group_by(
            "n", *(f"{s}_expected" for s in outcomes[:2]), maintain_order=True).agg("at").iter_rows():
        table = _splits(n, first, second)
        chosen = keys[at]
        found[at] = table[chosen[f"{outcomes[0]}_observed"].to_numpy(),
                                     chosen[f"{outcomes[1]}_observed"].to_numpy()]
    return found


@cache
def _splits(n: int, first: float, second: float) -> np.ndarray:
    """For n rounds at chances (first, second, the rest), the exact multinomial p-value of every split
    (a, b, n - a - b), indexed [a, b]."""
    from scipy.special import gammaln

    a, b = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    c = n - a - b
    possible = c >= 0
    rest = max(0.0, 1.0 - first - second)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = (gammaln(n + 1) - gammaln(a + 1) - gammaln(b + 1) - gammaln(np.maximum(c, 0) + 1)
                 + a * np.log(first) + b * np.log(second) + np.maximum(c, 0) * np.log(rest))
    chance = np.where(possible, np.exp(np.nan_to_num(log_p, nan=-np.inf)), 0.0)
    ordered = np.sort(chance[possible])
    cumulative = np.cumsum(ordered)
    # No likelier than observed, allowing for rounding in the chances' sums.
    at = np.searchsorted(ordered, chance * (1 + 1e-9), side="right")
    return np.where(possible, np.minimum(1.0, cumulative[np.maximum(at - 1, 0)]), np.nan)


def _spread(values: np.ndarray, where: np.ndarray) -> np.ndarray:
    """`values` placed at the true places of `where`, NaN elsewhere."""
    out = np.full(where.shape, np.nan)
    out[where] = values
    return out


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


def p_text(p: float) -> str:
    """A p-value as a sentence says it: "= 3.2e-07", or "< 1e-300" where it is below what a float
    tells from 0 (never "p = 0": no table is impossible, only past measuring)."""
    return "< 1e-300" if p < 1e-300 else f"= {p:.3g}"


def table_findings(table: pl.DataFrame, threshold: float = DEFAULT_THRESHOLD) -> pl.DataFrame:
    """TABLE_STATS findings: one per table flagged by the replay's tests, naming its most significant."""
    flagged = (table.filter(pl.col("flagged") & pl.col("test").is_in(FLAGGED_TESTS)).sort("p_adjusted")
               .group_by("group", maintain_order=True).first())
    detail = [
        f"Table {r['group']}: {r['test'].replace('_', ' ')} over {r['rounds']} rounds "
        + (f"gives chi-square {r['statistic']:.1f} on 2 df" if r["observed"] is None
           else f"observed {r['observed']:.0f}, expected {r['expected']:.1f} (z = {r['statistic']:.2f})")
        + f"; Benjamini-Hochberg corrected p {p_text(r['p_adjusted'])}."
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
        "recorded": [p_text(p).removeprefix("= ") for p in flagged["p_adjusted"]],
        "detail": detail,
    }, schema=FINDINGS_SCHEMA).select(*PLACE_COLUMNS, "check", "expected", "recorded", "detail")
