"""Exact enumeration of every ordered deal from a full shoe, with the tableau's own rules.

Counting is over ordered six-card sequences from the top of the shoe, the convention of the
published tables in shared/punto-banco.md: a coup that uses fewer than six cards stands for every way
of filling the unused places with the cards left. Card values are enough (suits and court ranks do not
change a draw), so the loop runs over value sequences and multiplies by how many cards carry each value.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from itertools import product

from pipeline import tableau


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


def finishes(decks: int) -> Counter[Finish]:
    """Number of ordered six-card sequences from a full `decks`-deck shoe that end each way."""
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
    totals = Counter({"BANKER": 0, "PLAYER": 0, "TIE": 0})
    for finish, ways in finishes(decks).items():
        totals[finish.result] += ways
    return dict(totals)
