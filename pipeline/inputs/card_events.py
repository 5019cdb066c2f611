"""Card-event logs: one row per card dealt, as electronic shoes and table systems record play, turned
into rounds (a mapping's `events`, see schemas/mapping.schema.json).

Each event names its round, its position (P1, B1, P2, B2, P3, B3, or the burn marker) and its card;
the round's other columns are its first event's. A round is held to the deal: each of the four
opening positions dealt once, a third card at most once, in deal order (by the events' `sequence`
when the log has one, else by their rows). A round that is not is quarantined with a reason that
names its event rows; it is never mended.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

DEAL_ORDER = ("P1", "B1", "P2", "B2", "P3", "B3")
POSITIONS = dict(zip(DEAL_ORDER, ("player_card_1", "banker_card_1", "player_card_2", "banker_card_2",
                                  "player_card_3", "banker_card_3")))
OPENING = DEAL_ORDER[:4]
FIRST_ROW = "first_event_row"  # where a round made of events is said to be: its first event's row


@dataclass(frozen=True)
class Events:
    """Where an event log holds each event's round, position, card and (optionally) deal sequence."""

    round: str
    position: str
    card: str
    sequence: str | None = None
    burn: str = "BURN"  # the position of a burn card: kept in the round's burn_cards


def rounds(events: pl.DataFrame, spec: Events, columns: tuple[str, ...]) -> pl.DataFrame:
    """The rounds of `events` (text columns, the contract's names, `event_row` and `malformed`), in the
    order their first events come: `columns` of the contract (round_id from the round's events, the
    cards by position, burn_cards, the rest from its first event), FIRST_ROW, and `malformed` for a
    round whose events do not make a deal."""
    position = pl.col(spec.position).str.strip_chars().str.to_uppercase()
    ordered = events.with_columns(_position=position)
    if spec.sequence is not None:  # the deal sequence orders a round's events; a row without one, last
        ordered = ordered.sort(pl.col(spec.sequence).cast(pl.Int64, strict=False), "event_row", nulls_last=True)
    burn = pl.col("_position") == spec.burn.upper()
    dealt = pl.col("_position").is_in(list(DEAL_ORDER))
    place = pl.col("_position").replace_strict({p: i for i, p in enumerate(DEAL_ORDER)}, default=None,
                                               return_dtype=pl.Int8)
    rows = pl.col("event_row").cast(pl.String)
    kept = [c for c in columns if c in events.columns and c not in (*POSITIONS.values(), "round_id", "burn_cards")]
    grouped = ordered.group_by(pl.col(spec.round).alias("round_id"), maintain_order=True).agg(
        pl.col("event_row").min().alias(FIRST_ROW),
        *(pl.col(c).sort_by("event_row").first() for c in kept),
        *(pl.col(spec.card).filter(pl.col("_position") == p).first().alias(column) for p, column in POSITIONS.items()),
        *(rows.filter(pl.col("_position") == p).alias(f"_rows_{p}") for p in DEAL_ORDER),
        burn_cards=pl.col(spec.card).filter(burn).str.join(" "),
        _unknown=pl.format("row {} ('{}')", rows, pl.col(spec.position)).filter(~dealt & ~burn).str.join(", "),
        _order=place.filter(dealt),
        _order_rows=pl.format("{} ({})", rows, pl.col("_position")).filter(dealt).str.join(", "),
        _malformed=pl.format("row {}: {}", rows, pl.col("malformed")).filter(pl.col("malformed").is_not_null())
        .str.join("; "),
        _rows=rows.sort_by("event_row").str.join(", "),
    ).sort(FIRST_ROW)
    reasons = [
        pl.when(pl.col("_malformed") != "").then(pl.format("events at {}", pl.col("_malformed"))),
        pl.when(pl.col("_unknown") != "").then(pl.format(
            "events at {} name no position (P1, B1, P2, B2, P3, B3 or {})", pl.col("_unknown"), pl.lit(spec.burn))),
        *(pl.when(pl.col(f"_rows_{p}").list.len() > 1).then(pl.format(
            "events at rows {} each deal {}", pl.col(f"_rows_{p}").list.join(", "), pl.lit(p))) for p in DEAL_ORDER),
        *(pl.when(pl.col(f"_rows_{p}").list.len() == 0).then(pl.format(
            "no event deals {} (the round's events: rows {})", pl.lit(p), pl.col("_rows"))) for p in OPENING),
        pl.when(pl.col("_order").list.len() != pl.col("_order").list.unique().list.len()).then(None)
        .when(pl.col("_order") != pl.col("_order").list.sort()).then(pl.format(
            "events out of deal order: rows {}", pl.col("_order_rows"))),
    ]
    made = grouped.with_columns(malformed=pl.concat_str(reasons, separator="; ", ignore_nulls=True))
    made = made.with_columns(malformed=pl.when(pl.col("malformed") != "").then(pl.col("malformed")),
                             burn_cards=pl.when(pl.col("burn_cards") != "").then(pl.col("burn_cards")))
    present = [c for c in columns if c in made.columns]
    return made.select(*present, FIRST_ROW, "malformed")
