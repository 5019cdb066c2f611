"""The drawing rules of punto banco, stated once as data.

Both evaluators read these tables: the scalar replay (`pipeline.rules.coup`) tests membership in them,
and the vectorized replay (`pipeline.rules.replay`) turns them into `is_in` look-ups. Nothing else in the
package knows when a hand draws. Numbers and wording follow docs/rules.md, "Drawing".
"""

from __future__ import annotations

#: A two-card total of 8 or 9 on either hand is a natural: nobody draws.
NATURALS = frozenset({8, 9})

#: Player, when there is no natural, draws on 0-5 and stands on 6-7.
PLAYER_DRAWS_ON = frozenset(range(0, 6))

#: Banker, when Player stood, draws on 0-5 and stands on 6-7 (Banker 5 draws here).
BANKER_DRAWS_WHEN_PLAYER_STOOD = frozenset(range(0, 6))

#: Banker, when Player drew: Banker's opening total -> the values of Player's third card on which
#: Banker draws. Totals 8 and 9 never get here (natural).
BANKER_DRAWS_AGAINST_THIRD_CARD: dict[int, frozenset[int]] = {
    0: frozenset(range(10)),
    1: frozenset(range(10)),
    2: frozenset(range(10)),
    3: frozenset(range(10)) - {8},
    4: frozenset(range(2, 8)),
    5: frozenset(range(4, 8)),
    6: frozenset({6, 7}),
    7: frozenset(),
}

#: The same table as (Banker opening total, Player third-card value) pairs, encoded as
#: 10 * total + value, for evaluators that want one flat membership test.
BANKER_DRAW_KEYS = frozenset(
    10 * total + value
    for total, values in BANKER_DRAWS_AGAINST_THIRD_CARD.items()
    for value in values
)


def spans(values: frozenset[int]) -> str:
    """A set of totals or values as the procedure writes it: "0-5" when it runs without a gap."""
    ordered = sorted(values)
    if ordered and ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]}-{ordered[-1]}" if len(ordered) > 1 else str(ordered[0])
    return ",".join(map(str, ordered))


#: Totals that can face a decision: everything but a natural.
DECIDING_TOTALS = frozenset(range(10)) - NATURALS


def total(*values: int) -> int:
    """A hand's total: the last digit of the sum of its card values (hands never bust)."""
    return sum(values) % 10


def is_natural(player_opening: int, banker_opening: int) -> bool:
    return player_opening in NATURALS or banker_opening in NATURALS


def player_draws(player_opening: int, banker_opening: int) -> bool:
    """Whether Player must take a third card."""
    return not is_natural(player_opening, banker_opening) and player_opening in PLAYER_DRAWS_ON


def banker_draws(player_opening: int, banker_opening: int, player_third: int | None) -> bool:
    """Whether Banker must take a third card, given the value of Player's third card.

    `player_third` is None when Player stood: that is its own branch of the tableau, not a
    third card of value 0.
    """
    if is_natural(player_opening, banker_opening):
        return False
    if player_third is None:
        return banker_opening in BANKER_DRAWS_WHEN_PLAYER_STOOD
    return player_third in BANKER_DRAWS_AGAINST_THIRD_CARD[banker_opening]


def result(player_final: int, banker_final: int) -> str:
    """PLAYER, BANKER or TIE: the higher final total wins; a natural does not beat a higher one."""
    if player_final > banker_final:
        return "PLAYER"
    if banker_final > player_final:
        return "BANKER"
    return "TIE"
