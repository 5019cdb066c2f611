"""Exact enumeration of every ordered deal from a full shoe, with the tableau's own rules.

Counting is over ordered six-card sequences from the top of the shoe, the convention of the
published tables in docs/rules.md: a coup that uses fewer than six cards stands for every way
of filling the unused places with the cards left. Card values are enough (suits and court ranks do not
change a draw), so the loop runs over value sequences and multiplies by how many cards carry each value.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from itertools import product

import polars as pl

from . import bets, tableau
from .profiles import Profile


@dataclass(frozen=True)
class Finish:
    """How a coup ended: what any bet on it needs to know except the ranks of the cards."""

    player_final: int
    banker_final: int
    player_cards: int
    banker_cards: int
    natural: bool

    @property
    def result(self) -> str:
        return tableau.result(self.player_final, self.banker_final)


def shoe_counts(decks: int) -> list[int]:
    """Cards of each value 0-9 in a full shoe: 10, J, Q, K count 0."""
    return [16 * decks] + [4 * decks] * 9


@cache
def finishes(decks: int) -> Counter[Finish]:
    """Number of ordered six-card sequences from a full `decks`-deck shoe that end each way.

    Cached per deck count: treat the result as read-only.
    """
    counts = shoe_counts(decks)
    size = sum(counts)
    # fill[k]: ways to fill the places left after k cards are dealt, up to six.
    fill = [1] * 7
    for dealt in range(5, -1, -1):
        fill[dealt] = fill[dealt + 1] * (size - dealt)
    tally: Counter[Finish] = Counter()

    def take(value: int) -> int:
        ways = counts[value]
        counts[value] -= 1
        return ways

    for p1, b1, p2, b2 in product(range(10), repeat=4):
        ways = take(p1) * take(b1) * take(p2) * take(b2)
        if ways:
            _finish(tally, counts, fill, ways, (p1, p2), (b1, b2), take)
        for value in (p1, b1, p2, b2):
            counts[value] += 1
    return tally


def _finish(tally, counts, fill, ways, player, banker, take) -> None:
    player_opening, banker_opening = tableau.total(*player), tableau.total(*banker)
    natural = tableau.is_natural(player_opening, banker_opening)
    player_thirds = range(10) if tableau.player_draws(player_opening, banker_opening) else (None,)
    for p3 in player_thirds:
        ways_p = ways * take(p3) if p3 is not None else ways
        if ways_p:
            dealt_p = 4 + (p3 is not None)
            player_final = tableau.total(*player, p3 or 0)
            if tableau.banker_draws(player_opening, banker_opening, p3):
                for b3 in range(10):
                    ways_b = ways_p * counts[b3]
                    if ways_b:
                        finish = Finish(player_final, tableau.total(*banker, b3), dealt_p - 2, 3, natural)
                        tally[finish] += ways_b * fill[dealt_p + 1]
            else:
                finish = Finish(player_final, banker_opening, dealt_p - 2, 2, natural)
                tally[finish] += ways_p * fill[dealt_p]
        if p3 is not None:
            counts[p3] += 1


def result_counts(decks: int) -> dict[str, int]:
    """Ordered six-card sequences won by BANKER, PLAYER, or tied."""
    return result_counts_from(finishes(decks))


def result_counts_from(tally: Counter[Finish]) -> dict[str, int]:
    totals = Counter({"BANKER": 0, "PLAYER": 0, "TIE": 0})
    for finish, ways in tally.items():
        totals[finish.result] += ways
    return dict(totals)


def pair_probability(decks: int) -> Fraction:
    """Chance that a hand's first two cards share a rank (K-K yes, 10-K no)."""
    per_rank, size = 4 * decks, 52 * decks
    return Fraction(13 * per_rank * (per_rank - 1), size * (size - 1))


def _case_probabilities(bet_type: str, decks: int, tally: Counter[Finish]) -> dict[str, Fraction]:
    needs = {fact for _, condition in bets.CASES[bet_type] for fact in condition}
    pair_facts = needs & {"player_pair", "banker_pair"}
    if pair_facts:
        # A pair bet looks at nothing but its hand's first two ranks: use that exact marginal.
        (fact,) = pair_facts
        pair = pair_probability(decks)
        return {bets.case_of(bet_type, {fact: True}): pair, bets.case_of(bet_type, {fact: False}): 1 - pair}
    total = sum(tally.values())
    chances: Counter = Counter()
    for finish, ways in tally.items():
        coup = bets.facts(finish.player_final, finish.banker_final, finish.player_cards,
                          finish.banker_cards, finish.natural)
        chances[bets.case_of(bet_type, coup)] += Fraction(ways, total)
    return dict(chances)


@dataclass(frozen=True)
class Odds:
    decks: int
    outcomes: dict[str, Fraction]  # BANKER, PLAYER, TIE, natural, pair (per hand)
    cases: dict[str, dict[str, Fraction]]  # bet type -> case -> probability
    house_edge: dict[str, Fraction]  # bet type -> expected loss per unit staked


def odds(profile: Profile, decks: int | None = None) -> Odds:
    """Exact probabilities and the house edge of every bet the profile offers."""
    decks = decks or profile.decks
    tally = finishes(decks)
    total = sum(tally.values())
    results = result_counts_from(tally)
    outcomes = {k: Fraction(v, total) for k, v in results.items()}
    outcomes["natural"] = Fraction(sum(w for f, w in tally.items() if f.natural), total)
    outcomes["pair"] = pair_probability(decks)
    table = bets.returns(profile)
    cases, edges = {}, {}
    for bet_type in bets.offered(profile):
        cases[bet_type] = _case_probabilities(bet_type, decks, tally)
        expected = sum(chance * Fraction(table[bet_type, case].per_unit) for case, chance in cases[bet_type].items())
        edges[bet_type] = 1 - expected
    return Odds(decks, outcomes, cases, edges)


def as_json(figures: Odds, profile: str) -> dict:
    """Figures as JSON: exact fractions as text, and decimals to 10 places for reading."""
    def both(value: Fraction) -> dict:
        return {"exact": str(value), "decimal": f"{float(value):.10f}"}

    return {
        "profile": profile,
        "decks": figures.decks,
        "outcomes": {k: both(v) for k, v in figures.outcomes.items()},
        "cases": {bet: {case: both(v) for case, v in cases.items()} for bet, cases in figures.cases.items()},
        "house_edge": {bet: both(v) for bet, v in figures.house_edge.items()},
    }


@cache
def finishes_vectorized(decks: int) -> Counter[Finish]:
    """The same count as `finishes`, dealt by the vectorized replay over all 10^6 six-value sequences.

    Every ordered six-card sequence has values (v1..v6); the number of card sequences behind it is
    the product of how many cards of each value are left as it is dealt. Dealing is the replay run
    three times: the opening decides Player's third card (v5), the card given decides Banker's (v6,
    or v5 when Player stood), and the last replay totals the hands. A tenth of a second instead of
    a second, and a second evaluator of the enumeration that the tests hold to the first.
    Cached per deck count: treat the result as read-only.
    """
    from .replay import replay

    counts = shoe_counts(decks)
    names = [f"v{k}" for k in range(1, 7)]
    sequences = pl.DataFrame({names[0]: range(10)}, schema={names[0]: pl.Int8})
    for name in names[1:]:
        sequences = sequences.join(pl.DataFrame({name: range(10)}, schema={name: pl.Int8}), how="cross")
    left = [pl.col(name).replace_strict(dict(enumerate(counts)), return_dtype=pl.Int64)
            - pl.sum_horizontal([(pl.col(earlier) == pl.col(name)).cast(pl.Int64) for earlier in names[:k]] or [pl.lit(0)])
            for k, name in enumerate(names)]
    dealt = sequences.lazy().with_columns(
        ways=pl.fold(pl.lit(1, pl.Int64), lambda total, ways: total * ways, left),
        player_1="v1", banker_1="v2", player_2="v3", banker_2="v4",
        player_3=pl.lit(None, pl.Int8), banker_3=pl.lit(None, pl.Int8),
    )
    dealt = replay(dealt).with_columns(player_3=pl.when("player_must_draw").then("v5"))
    dealt = replay(dealt).with_columns(
        banker_3=pl.when("banker_must_draw").then(pl.when(pl.col("player_3").is_null()).then("v5").otherwise("v6")))
    tally = (replay(dealt).group_by("player_final", "banker_final", "player_drew", "banker_drew", "natural")
             .agg(pl.col("ways").sum()).collect())
    return Counter({
        Finish(r["player_final"], r["banker_final"], 2 + r["player_drew"], 2 + r["banker_drew"], r["natural"]):
        r["ways"] for r in tally.iter_rows(named=True) if r["ways"]
    })
