"""The vectorized replay: the tableau of `pipeline.rules.tableau` as polars expressions over a whole log.

Input columns are card values 0-9 named `player_1, player_2, player_3, banker_1, banker_2, banker_3`
(third cards null when not dealt). The output columns carry the same names and meaning as the fields of
`pipeline.rules.coup.Replay`, so the two evaluators can be compared column for field.
"""

from __future__ import annotations

import polars as pl

from . import tableau

HANDS = ("player", "banker")
VALUE_COLUMNS = tuple(f"{hand}_{i}" for hand in HANDS for i in (1, 2, 3))
REPLAY_COLUMNS = (
    "player_opening",
    "banker_opening",
    "natural",
    "player_must_draw",
    "player_drew",
    "banker_must_draw",
    "banker_drew",
    "player_final",
    "banker_final",
    "result",
)


def _total(*values: pl.Expr) -> pl.Expr:
    """The total of some card values, a card not dealt (null) adding nothing: added with `+`, cheaper
    than `pl.sum_horizontal` (docs/performance.md)."""
    return (sum((value.fill_null(0) for value in values[1:]), values[0].fill_null(0)) % 10).cast(pl.Int8)


def _is_in(expr: pl.Expr, values: frozenset[int]) -> pl.Expr:
    """Membership in a small set as equalities: `is_in` with a literal list held polars' streaming
    engine to whole columns; comparisons are elementwise and stream."""
    return pl.any_horizontal(*(expr == v for v in sorted(values))) if values else pl.lit(False)


def replay(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Add the replay columns to a frame of card values."""
    p1, p2, p3, b1, b2, b3 = (pl.col(c) for c in VALUE_COLUMNS)
    player_opening, banker_opening = pl.col("player_opening"), pl.col("banker_opening")
    natural = pl.col("natural")
    player_final, banker_final = pl.col("player_final"), pl.col("banker_final")
    return (
        frame.with_columns(
            player_opening=_total(p1, p2),
            banker_opening=_total(b1, b2),
            player_final=_total(p1, p2, p3),
            banker_final=_total(b1, b2, b3),
            player_drew=p3.is_not_null(),
            banker_drew=b3.is_not_null(),
        )
        .with_columns(natural=_is_in(player_opening, tableau.NATURALS)
                      | _is_in(banker_opening, tableau.NATURALS))
        .with_columns(
            player_must_draw=~natural & _is_in(player_opening, tableau.PLAYER_DRAWS_ON),
            banker_must_draw=~natural
            & pl.when(p3.is_null())
            .then(_is_in(banker_opening, tableau.BANKER_DRAWS_WHEN_PLAYER_STOOD))
            .otherwise(_is_in(banker_opening.cast(pl.Int16) * 10 + p3, tableau.BANKER_DRAW_KEYS)),
            result=pl.when(player_final > banker_final)
            .then(pl.lit("PLAYER"))
            .when(banker_final > player_final)
            .then(pl.lit("BANKER"))
            .otherwise(pl.lit("TIE")),
        )
    )
