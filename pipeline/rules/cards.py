"""Card notation: the one place that reads a card as the logs write it.

A card is kept as a small integer code, `rank * 8 + suit`: rank 1-13 (A=1, J=11, Q=12, K=13),
suit 0 when the log does not record suits, else 1-4 for S, H, D, C. Codes keep what the shoe checks
need (exact card, rank for pairs) and turn into a value with one comparison.

Logs spell cards in a handful of styles, case-insensitive: rank then suit ("KS", "10h", "TD"),
suit underscore rank ("S_K", "C_10"), or a rank alone. There are few enough spellings to list them
all, so the batch path maps each card string through one dictionary instead of parsing text row by row.

A log that records card points only (0-9: a mapping's `notation: points`) is read through POINTS: a
point from 1 to 9 is that rank (ace to nine), and 0 is ZERO_POINT, rank 0, a ten or court card whose
rank was not recorded. Its value is right; its rank is not known, so nothing that needs ranks or suits
(pairs, CARD_COUNT) is judged on such a log.
"""

from __future__ import annotations

import polars as pl

from .lookup import case_variants, lookup

RANKS = ("A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K")
SUITS = ("S", "H", "D", "C")
_RANK_SPELLINGS = {rank: i for i, rank in enumerate(RANKS, start=1)} | {"T": 10}


def code(rank: int, suit: int = 0) -> int:
    return rank * 8 + suit


def rank_of(card: int) -> int:
    return card // 8


def suit_of(card: int) -> int:
    return card % 8


def value_of(card: int) -> int:
    """Ace 1, two to nine at face value, ten and court cards 0."""
    rank = rank_of(card)
    return rank if rank < 10 else 0


def name(card: int) -> str:
    """Canonical text: rank then suit ("10H", "KS"), the rank alone when no suit was recorded, 0 for
    ZERO_POINT."""
    if card == ZERO_POINT:
        return "0"
    suit = suit_of(card)
    return RANKS[rank_of(card) - 1] + (SUITS[suit - 1] if suit else "")


def _spellings() -> dict[str, int]:
    table: dict[str, int] = {}
    for rank_text, rank in _RANK_SPELLINGS.items():
        table[rank_text] = code(rank)
        for suit_index, suit_text in enumerate(SUITS, start=1):
            for spelling in (rank_text + suit_text, suit_text + "_" + rank_text):
                table[spelling] = code(rank, suit_index)
    return {variant: card for text, card in table.items() for variant in case_variants(text)}


#: Every accepted spelling, in every case, mapped to its card code.
SPELLINGS: dict[str, int] = _spellings()
ZERO_POINT = code(0)  # a card of value 0 recorded by its points only: rank unknown (10, J, Q or K)
#: A log of card points: each point's code (1 to 9 are the ranks ace to nine).
POINTS: dict[str, int] = {"0": ZERO_POINT} | {str(point): code(point) for point in range(1, 10)}
NOTATIONS = {"cards": SPELLINGS, "points": POINTS}
POINTS_ONLY = "cards recorded as points only"  # why what needs ranks or suits is not judged on such a log


def parse(text: str | None) -> int | None:
    """The card code of one spelling, or None when it is not a card."""
    if text is None:
        return None
    return SPELLINGS.get(text.strip())


def parse_expr(column: pl.Expr, notation: str = "cards") -> pl.Expr:
    """Card code (UInt8) of a trimmed text column (ingest trims) in a log's notation (NOTATIONS); null
    where it is null or not a card."""
    return lookup(column, NOTATIONS[notation], pl.UInt8)


def value_expr(card: pl.Expr) -> pl.Expr:
    """Card value (0-9) of a card-code column; null stays null (a card not dealt)."""
    rank = card // 8
    return pl.when(rank >= 10).then(0).otherwise(rank).cast(pl.Int8)
