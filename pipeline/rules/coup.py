"""The scalar replay: one coup at a time, for explanations and as the reference for the batch path.

It judges a coup as recorded: Player's duty to draw comes from the opening totals, Banker's from the
opening totals and the third card Player was actually given (or the Player-stood branch when none was).
`pipeline.rules.replay` computes the same fields for a whole frame; the test suite proves the two agree on
every possible sequence of card values.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import tableau


@dataclass(frozen=True)
class Replay:
    """What the tableau requires of one recorded coup, and what the recorded cards add up to."""

    player_opening: int
    banker_opening: int
    natural: bool
    player_must_draw: bool
    player_drew: bool
    banker_must_draw: bool
    banker_drew: bool
    player_final: int
    banker_final: int
    result: str


def replay(
    p1: int, b1: int, p2: int, b2: int, p3: int | None = None, b3: int | None = None
) -> Replay:
    """Replay recorded card values (0-9; None for a third card not dealt)."""
    player_opening = tableau.total(p1, p2)
    banker_opening = tableau.total(b1, b2)
    player_final = tableau.total(p1, p2, p3 or 0)
    banker_final = tableau.total(b1, b2, b3 or 0)
    return Replay(
        player_opening=player_opening,
        banker_opening=banker_opening,
        natural=tableau.is_natural(player_opening, banker_opening),
        player_must_draw=tableau.player_draws(player_opening, banker_opening),
        player_drew=p3 is not None,
        banker_must_draw=tableau.banker_draws(player_opening, banker_opening, p3),
        banker_drew=b3 is not None,
        player_final=player_final,
        banker_final=banker_final,
        result=tableau.result(player_final, banker_final),
    )
