"""Integrity across rounds: what no single coup can show, checked per shoe with window expressions.

- CARD_COUNT: an exact card (rank and suit) dealt more often in one shoe than its decks hold. Burned
  and cancelled cards count too when the log lists them (`burn_cards`, `cancelled_cards`).
- SHOE_SEQUENCE: a hand_no that is not a number, repeated, or missing (a gap, or a shoe that does not
  start at 1), and a shoe that deals more cards than it holds.
- TIMESTAMP: dealt_at unreadable, later than the start of the run, or earlier than the hand before it
  in the same shoe (which is also how a hand_no out of order against dealt_at shows).

Each check needs certain columns (and CARD_COUNT needs suits); `requirements` says which ran.
Rounds are taken in hand_no order within a shoe, the file order breaking ties.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import polars as pl

from pipeline import cards, ingest
from pipeline.findings import FINDINGS_SCHEMA, PLACE_COLUMNS

CODES = ("CARD_COUNT", "SHOE_SEQUENCE", "TIMESTAMP")
MEANINGS = {
    "CARD_COUNT": "A card (rank and suit) appears more often in one shoe than the shoe's decks hold.",
    "SHOE_SEQUENCE": "Within a shoe, a hand_no is missing, repeated or not a number, or the shoe deals "
                     "more cards than it holds.",
    "TIMESTAMP": "dealt_at is unreadable, later than the run, or earlier than the hand before it in the shoe.",
}
NEEDS = {"CARD_COUNT": ("shoe_id",), "SHOE_SEQUENCE": ("shoe_id", "hand_no"), "TIMESTAMP": ("dealt_at",)}
EXTRA_CARDS = ("burn_cards", "cancelled_cards")  # space-separated card lists, when the log has them

_ORDER = ["hand", "log_row"]  # hand_no order within a shoe, the log's own order breaking ties
DEAL_ORDER = ("player_card_1", "banker_card_1", "player_card_2", "banker_card_2", "player_card_3", "banker_card_3")
Collect = Callable[[pl.LazyFrame], pl.DataFrame]


def requirements(columns: frozenset[str], suited_cards: int) -> dict[str, str]:
    """Each integrity check: "ran", or "skipped: ..." with the reason."""
    states = {}
    for code, needs in NEEDS.items():
        missing = [c for c in needs if c not in columns]
        if missing:
            states[code] = f"skipped: the log has no {' or '.join(missing)} column"
        elif code == "CARD_COUNT" and suited_cards == 0:
            states[code] = "skipped: the log records no suits"
        else:
            states[code] = "ran"
    return states


def _finding(frame: pl.LazyFrame, code: str, expected: pl.Expr, recorded: pl.Expr, detail: pl.Expr) -> pl.LazyFrame:
    return frame.select(
        "source_file", "source_row", source=pl.lit("rounds"), round_id="round_id", table_id="table_id", shoe_id="shoe_id",
        hand_no="hand_no", dealt_at="dealt_at", bet_id=pl.lit(None, pl.String), check=pl.lit(code),
        expected=expected, recorded=recorded, detail=detail,
    ).select(*PLACE_COLUMNS, "check", "expected", "recorded", "detail").cast(FINDINGS_SCHEMA)


def _narrow(rounds: pl.LazyFrame, *columns: str | pl.Expr, **named: pl.Expr) -> pl.LazyFrame:
    """The rounds in a shoe as a few numeric columns: what the windows over shoes need, and no text."""
    return rounds.filter(pl.col("shoe_id").is_not_null()).select(
        "log_row", *columns, shoe=pl.col("shoe_id").cast(pl.Categorical).to_physical(), **named)


def _hand() -> pl.Expr:
    return pl.col("hand_no").cast(pl.Int64, strict=False).alias("hand")


def _back(rounds: pl.LazyFrame, found: pl.DataFrame) -> pl.LazyFrame:
    """The rounds found by a narrow query, joined back to their place in the log (in log order)."""
    return rounds.join(found.lazy(), on="log_row", how="inner").sort("log_row")


def card_counts(rounds: pl.LazyFrame, listed: list[str], collect: Collect) -> pl.LazyFrame:
    """CARD_COUNT findings: the round where a card's count in its shoe first passes the decks.

    Each card position (burn and cancelled lists first, then the deal order) gives one small frame of
    (round, shoe, card, decks); the count per (shoe, card) is a group-by over these numbers. Only the
    rare pairs that exceed their decks are then put in deal order, and only the rounds found are joined
    back to their place in the log.
    """
    dealt = [pl.col(ingest.code_column(c)).alias(c) for c in DEAL_ORDER]
    # Unreadable entries of a burn or cancelled list parse to null and are not counted.
    extra = [pl.col(c).fill_null("").str.split(" ").list.eval(cards.parse_expr(pl.element())).alias(c)
             for c in listed]
    shoes = rounds.filter(pl.col("shoe_id").is_not_null()).select(
        "log_row", "shoe_id", _hand(), pl.col("decks").cast(pl.UInt8), *extra, *dealt)
    positions = [
        (shoes.explode(column) if column in listed else shoes).select(
            "log_row", "shoe_id", "hand", "decks", position=pl.lit(i, pl.UInt8), card=pl.col(column),
            # One integer per (shoe, card): 57 bits of the shoe_id's hash above the card code (< 128).
            # It is the same in every query; a collision only adds candidates, counted exactly below.
            key=pl.col("shoe_id").hash(seed=0) // 128 * 128 + pl.col(column))
        .filter(pl.col("card").is_not_null() & (pl.col("card") % 8 != 0))
        for i, column in enumerate([*listed, *DEAL_ORDER])
    ]
    excess = collect(pl.concat([cards_at.select("key", "decks") for cards_at in positions]).group_by("key")
                     .agg(pl.len().alias("count"), pl.col("decks").first())
                     .filter(pl.col("count") > pl.col("decks")).select("key"))
    found = collect(
        pl.concat([cards_at.join(excess.lazy(), on="key", how="semi") for cards_at in positions])
        .with_columns(seen=pl.col("card").cum_count().over("shoe_id", "card", order_by=[*_ORDER, "position"]))
        .filter(pl.col("seen") == pl.col("decks").cast(pl.UInt32) + 1)
        .select("log_row", "card", "seen")
    )
    name = pl.col("card").replace_strict({c: cards.name(c) for c in set(cards.SPELLINGS.values())},
                                         return_dtype=pl.String)
    return _finding(
        _back(rounds, found), "CARD_COUNT",
        expected=pl.format("at most {}", pl.col("decks")),
        recorded=pl.format("{} {}", pl.col("seen"), name),
        detail=pl.format("{} appears for the {}th time in shoe {}, but {} decks hold only {}.",
                         name, pl.col("seen"), pl.col("shoe_id"), pl.col("decks"), pl.col("decks")),
    )


def shoe_sequence(rounds: pl.LazyFrame, collect: Collect) -> list[pl.LazyFrame]:
    """SHOE_SEQUENCE findings: bad, repeated or missing hand numbers, and cards beyond the shoe."""
    in_coup = 4 + pl.col("player_drew").cast(pl.Int64) + pl.col("banker_drew").cast(pl.Int64)
    in_order = _narrow(rounds.filter(pl.col("hand_no").is_not_null()), _hand(), "decks", in_coup=in_coup).filter(
        pl.col("hand").is_not_null()).sort("shoe", *_ORDER)
    numbered = in_order.with_columns(
        copies=pl.len().over("shoe", "hand"),
        previous=pl.col("hand").shift(1).over("shoe"),
        cards_dealt=pl.col("in_coup").cum_sum().over("shoe"),
    )
    first_expected = pl.col("previous").fill_null(0) + 1
    holds = pl.col("decks") * 52
    over = (pl.col("cards_dealt") > holds) & (pl.col("cards_dealt") - pl.col("in_coup") <= holds)  # first passes
    # Repeated hand numbers are rare: which copy a row is gets counted among the few rows found.
    candidates = numbered.filter((pl.col("copies") > 1) | (pl.col("hand") > first_expected) | over)
    found = collect(candidates.with_columns(copy=pl.col("hand").cum_count().over("shoe", "hand", order_by="log_row")).select(
        "log_row", "hand", "copy", "previous", "cards_dealt", "in_coup", is_copy=pl.col("copy") > 1,
        is_gap=(pl.col("copy") == 1) & (pl.col("hand") > first_expected), is_over=over))
    back = _back(rounds, found)
    not_number = rounds.filter(pl.col("shoe_id").is_not_null() & pl.col("hand_no").is_not_null()
                               & pl.col("hand_no").cast(pl.Int64, strict=False).is_null())
    return [
        _finding(not_number, "SHOE_SEQUENCE", pl.lit("a whole number"), pl.col("hand_no"),
                 pl.format("hand_no '{}' in shoe {} is not a whole number.", pl.col("hand_no"), pl.col("shoe_id"))),
        pl.concat([
            _finding(back.filter(pl.col("is_copy")), "SHOE_SEQUENCE", pl.lit("once per shoe"),
                     pl.format("copy {}", pl.col("copy")),
                     pl.format("hand_no {} appears again in shoe {} (copy {}).", pl.col("hand"), pl.col("shoe_id"),
                               pl.col("copy"))),
            _finding(back.filter(pl.col("is_gap")), "SHOE_SEQUENCE", first_expected.cast(pl.String), pl.col("hand_no"),
                     pl.format("hand_no {} follows {} in shoe {}: {} missing.", pl.col("hand"),
                               pl.col("previous").cast(pl.String).fill_null("the start of the shoe"),
                               pl.col("shoe_id"),
                               pl.when(pl.col("hand") - first_expected == 1).then(first_expected.cast(pl.String))
                               .otherwise(pl.format("{}-{}", first_expected, pl.col("hand") - 1)))),
            _finding(back.filter(pl.col("is_over")), "SHOE_SEQUENCE",
                     pl.format("at most {} cards", holds), pl.format("{} cards", pl.col("cards_dealt")),
                     pl.format("Shoe {} has dealt {} cards by this hand, but {} decks hold {}.", pl.col("shoe_id"),
                               pl.col("cards_dealt"), pl.col("decks"), holds)),
        ]),
    ]


def timestamps(rounds: pl.LazyFrame, run_started: datetime, collect: Collect) -> list[pl.LazyFrame]:
    """TIMESTAMP findings: unreadable, in the future of the run, or going backwards within a shoe."""
    at = pl.col("dealt_utc")
    started = pl.lit(run_started).dt.convert_time_zone("UTC")
    found = collect(_narrow(rounds.filter(at.is_not_null()), _hand(), at).sort("shoe", *_ORDER)
                    .with_columns(before=at.shift(1).over("shoe"))
                    .filter(at < pl.col("before")).select("log_row", "before"))
    return [
        pl.concat([
            _finding(rounds.filter(pl.col("dealt_at").is_not_null() & at.is_null()), "TIMESTAMP",
                     pl.lit("an ISO 8601 date-time"), pl.col("dealt_at"),
                     pl.format("dealt_at '{}' cannot be read as a date-time.", pl.col("dealt_at"))),
            _finding(rounds.filter(at > started), "TIMESTAMP",
                     pl.format("before {}", started.dt.to_string("%Y-%m-%dT%H:%M:%SZ")), pl.col("dealt_at"),
                     pl.format("dealt_at {} is later than the start of this run.", pl.col("dealt_at"))),
        ]),
        _finding(_back(rounds, found), "TIMESTAMP",
                 pl.format("not before {}", pl.col("before").dt.to_string("%Y-%m-%dT%H:%M:%SZ")), pl.col("dealt_at"),
                 pl.format("dealt_at {} is earlier than the hand before it in shoe {} ({}).", pl.col("dealt_at"),
                           pl.col("shoe_id"), pl.col("before").dt.to_string("%Y-%m-%dT%H:%M:%SZ"))),
    ]


def integrity_findings(replayed: pl.LazyFrame, decks: pl.LazyFrame, columns: frozenset[str],
                       run_started: datetime, collect: Collect) -> dict[str, list[pl.LazyFrame]]:
    """The findings of each integrity check that can run on a log with these columns, by code.

    The windows over shoes run first, through `collect`, on a few numeric columns; each query returned
    then joins only the rounds they found back to the log, so no query holds the text of every round.
    """
    rounds = replayed.join(decks, on="profile", how="left", maintain_order="left")
    states = requirements(columns, suited_cards=1)  # without suits CARD_COUNT simply finds nothing
    listed = [c for c in EXTRA_CARDS if c in columns]
    parts = {"CARD_COUNT": lambda: [card_counts(rounds, listed, collect)],
             "SHOE_SEQUENCE": lambda: shoe_sequence(rounds, collect),
             "TIMESTAMP": lambda: timestamps(rounds, run_started, collect)}
    return {code: make() for code, make in parts.items() if states[code] == "ran"}
