"""The round checks: each a named polars expression over a replayed frame.

A check flags a round (`flag`, never null), and says what the procedure expected, what the log
recorded, and why, as text. Checks judge the cards as recorded: a wrong draw is a draw finding, and
totals and result are then checked against the cards that were actually dealt.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ..rules import cards, tableau
from ..inputs import ingest
from ..inputs.ids import copies_detail, outside_ascii, same_id
from ..rules.lookup import case_variants, lookup

_CARD_NAMES = {code: cards.name(code) for code in {*cards.SPELLINGS.values(), *cards.POINTS.values()}}


def card_name(card: pl.Expr) -> pl.Expr:
    return card.replace_strict(_CARD_NAMES, return_dtype=pl.String)


def recorded_outcome(raw: pl.Expr) -> pl.Expr:
    """The recorded result as PLAYER, BANKER or TIE; null when it is none of the accepted spellings,
    in any case (as polars upper-cases it, so "t\u0131e" is TIE too). ASCII text is looked up among the
    spellings in every mix of case; only text outside ASCII is upper-cased first, which polars skips
    in a piece that has none: upper-casing every row cost more than the lookup."""
    spellings = ingest.outcome_spellings()
    any_case = {variant: outcome for spelling, outcome in spellings.items() for variant in case_variants(spelling)}
    return (pl.when(outside_ascii(raw)).then(lookup(raw.str.to_uppercase(), spellings, pl.String))
            .otherwise(lookup(raw, any_case, pl.String)))


@dataclass(frozen=True)
class Check:
    code: str
    meaning: str
    flag: pl.Expr
    expected: pl.Expr
    recorded: pl.Expr
    detail: pl.Expr
    needs: str | None = None  # the optional column the check reads, if any


def _draw_text(must: pl.Expr) -> pl.Expr:
    return pl.when(must).then(pl.lit("draw")).otherwise(pl.lit("stand"))


def _dealt_text(card: pl.Expr) -> pl.Expr:
    return pl.when(card.is_null()).then(pl.lit("stood")).otherwise(pl.format("drew {}", card_name(card)))


def _draw_check(hand: str, rule: pl.Expr) -> Check:
    must, drew, third = pl.col(f"{hand}_must_draw"), pl.col(f"{hand}_drew"), pl.col(f"{hand}_code_3")
    natural = pl.format(
        "Natural (Player {}, Banker {}): nobody draws, but {} {}.",
        pl.col("player_opening"), pl.col("banker_opening"), pl.lit(hand.capitalize()), _dealt_text(third),
    )
    return Check(
        code=f"{hand.upper()}_DRAW",
        meaning=f"{hand.capitalize()} drew when the tableau says stand, or stood when it says draw.",
        flag=must != drew,
        expected=_draw_text(must),
        recorded=_dealt_text(third),
        detail=pl.when(pl.col("natural")).then(natural).otherwise(
            pl.format("{}: {} must {}, but {}.", rule, pl.lit(hand.capitalize()), _draw_text(must),
                      _dealt_text(third))
        ),
    )


_PLAYER_RULE = pl.format(
    "Player opened on {} (draws on {}, stands on 6-7)",
    pl.col("player_opening"), pl.lit(tableau.spans(tableau.PLAYER_DRAWS_ON)),
)
_BANKER_RULE = pl.when(pl.col("player_code_3").is_null()).then(
    pl.format(
        "Player stood and Banker opened on {} (draws on {} when Player stands)",
        pl.col("banker_opening"), pl.lit(tableau.spans(tableau.BANKER_DRAWS_WHEN_PLAYER_STOOD)),
    )
).otherwise(
    pl.format(
        "Player's third card {} counts {} and Banker opened on {} (see the tableau row)",
        card_name(pl.col("player_code_3")), pl.col("player_3"), pl.col("banker_opening"),
    )
)


def _total_check(hand: str) -> Check:
    raw, final = pl.col(f"{hand}_total"), pl.col(f"{hand}_final")
    parsed = raw.cast(pl.Int16, strict=False)
    return Check(
        code=f"{hand.upper()}_TOTAL",
        meaning=f"The recorded {hand.capitalize()} total is not the total of the recorded cards.",
        flag=(raw.is_not_null() & (parsed.is_null() | (parsed != final))).fill_null(False),
        expected=final.cast(pl.String),
        recorded=raw,
        detail=pl.format(
            "{} total recorded as {}, but the recorded cards add up to {}.",
            pl.lit(hand.capitalize()), raw, final,
        ),
        needs=f"{hand}_total",
    )


def _outcome_check() -> Check:
    raw, result = pl.col("outcome"), pl.col("result")
    return Check(
        code="OUTCOME",
        meaning="The recorded result is not the result of the recorded cards.",
        # An unknown spelling is null, which ne_missing counts as different (result is never null).
        flag=raw.is_not_null() & recorded_outcome(raw).ne_missing(result),
        expected=result,
        recorded=raw,
        detail=pl.format(
            "Result recorded as {}, but Player {} against Banker {} is {}.",
            raw, pl.col("player_final"), pl.col("banker_final"),
            pl.when(result == "TIE").then(pl.lit("a tie")).otherwise(pl.format("a {} win", result)),
        ),
        needs="outcome",
    )


def _duplicate_check() -> Check:
    copies = pl.len().over(same_id(pl.col("round_id")))
    return Check(
        code="DUPLICATE_ROUND",
        meaning="The round_id appears on more than one row; every copy is audited and flagged.",
        flag=copies > 1,
        expected=pl.lit("1 row"),
        recorded=pl.format("{} rows", copies),
        detail=copies_detail("round_id", pl.col("round_id"), copies, "log"),
    )


CHECKS: tuple[Check, ...] = (
    _draw_check("player", _PLAYER_RULE),
    _draw_check("banker", _BANKER_RULE),
    _total_check("player"),
    _total_check("banker"),
    _outcome_check(),
    _duplicate_check(),
)
CODES = tuple(check.code for check in CHECKS)
#: Checks that look at one row each, and the one that looks across rows (run on candidate rows only).
PER_ROUND = tuple(c for c in CHECKS if c.code != "DUPLICATE_ROUND")
DUPLICATE = tuple(c for c in CHECKS if c.code == "DUPLICATE_ROUND")
