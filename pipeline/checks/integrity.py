"""Integrity across rounds: what no single coup can show, checked per shoe on rounds in shoe order.

- CARD_COUNT: an exact card (rank and suit) dealt more often in one shoe than its decks hold. Burned
  and cancelled cards count too when the log lists them (`burn_cards`, `cancelled_cards`).
- SHOE_SEQUENCE: a hand_no that is not a number, repeated, or missing (a gap, or a shoe that does not
  start at 1), and a shoe that deals more cards than it holds.
- TIMESTAMP: dealt_at unreadable, later than the audit's present (`--as-of`, by default the start of
  the run), or earlier than the hand before it
  in the same shoe (which is also how a hand_no out of order against dealt_at shows).

Each check needs certain columns (and CARD_COUNT needs suits); `requirements` says which ran.
Rounds are taken in hand_no order within a shoe, the file order breaking ties. A log dealt shoe after
shoe is checked as it is read (`InLogOrder`); any other, keyed by shoe (`integrity_findings`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from ..rules import cards
from ..inputs import profile_files
from ..rules.lookup import lookup, position
from ..inputs import ingest
from ..inputs.timestamps import utc_column
from ..engines import parts, stored
from ..errors import InputError
from .round_checks import card_name
from .findings import FINDINGS_SCHEMA, PLACE_COLUMNS

CODES = ("CARD_COUNT", "SHOE_SEQUENCE", "TIMESTAMP")
MEANINGS = {
    "CARD_COUNT": "A card (rank and suit) appears more often in one shoe than the shoe's decks hold.",
    "SHOE_SEQUENCE": "Within a shoe, a hand_no is missing, repeated or not a number, or the shoe deals "
                     "more cards than it holds.",
    "TIMESTAMP": "dealt_at is unreadable, later than the audit's present (--as-of), or earlier than the hand "
                 "before it in the shoe.",
}
NEEDS = {"CARD_COUNT": ("shoe_id",), "SHOE_SEQUENCE": ("shoe_id", "hand_no"), "TIMESTAMP": ("dealt_at",)}
EXTRA_CARDS = ("burn_cards", "cancelled_cards")  # space-separated card lists, when the log has them

#: The order of integrity findings: by kind, then in log order; the detail tells two cards of a round apart.
IN_ORDER = ("kind", "source_file", "source_row", "detail")
_ORDER = ["hand", "log_row"]  # hand_no order within a shoe, the log's own order breaking ties
_NO_ROW = 2**62  # past every log_row: where a piece with no row would begin
_SHOE_KEY = 128  # CARD_COUNT's key of a card in a shoe: shoe code * 128 + card code (below 128)
_DEALT = pl.col(utc_column("dealt_at"))  # dealt_at read as UTC, as the staged rounds hold it
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


def _each(pieces: list[pl.LazyFrame], query: Callable[[pl.LazyFrame], pl.LazyFrame], collect: Collect) -> pl.DataFrame:
    """`query` run on each piece in turn, one query a piece (so memory is bounded by a piece), stacked:
    for results a few rows a piece."""
    return pl.concat([collect(query(piece)) for piece in pieces])


@dataclass(frozen=True)
class _Shoes:
    """How each row of the log gets an integer code for its shoe (`code`, given the piece's place
    in the log), the same in every query, unlike categorical codes; and whether each shoe's rounds
    are `contiguous`, one run of rows in the log, as a log dealt shoe after shoe has them."""

    code: Callable[[int], pl.Expr]
    contiguous: bool


def _shoe_codes(pieces: list[pl.LazyFrame], collect: Collect) -> _Shoes:
    """The log's shoes (`_Shoes`), from the rows where the shoe_id changes (`heads`), a few per shoe.

    The shoes are contiguous when those heads, less the first of a piece that goes on with the shoe the
    pieces before it ended with, are all different. A shoe's code is then its place among the runs:
    the runs before its piece, and the heads before its row in the piece (a comparison with the row
    before, no lookup). Otherwise a row's code is its shoe_id cast to an Enum of every shoe_id, built
    once: polars converts an Enum of many shoes again for each expression that names it, at a cost
    near the cast's own (docs/performance.md)."""
    shoe = pl.col("shoe_id")
    head = (shoe != shoe.shift(1)).fill_null(True)

    def seen(piece: pl.LazyFrame) -> pl.LazyFrame:
        return piece.filter(shoe.is_not_null()).select(heads=shoe.filter(head).implode(), last=shoe.last())

    found = _each(pieces, seen, collect)
    ended = found["last"].forward_fill().shift(1)  # the shoe the pieces before each one ended with
    goes_on = (found["heads"].list.first() == ended).fill_null(False)
    new = found["heads"].list.len() - goes_on.cast(pl.UInt32)
    before = new.cum_sum() - new  # the runs that begin in the pieces before each one
    heads = found.select(pl.col("heads").explode()).to_series().drop_nulls()
    if heads.len() - goes_on.sum() == heads.n_unique():
        starts = [int(first) - int(on) for first, on in zip(before, goes_on)]
        return _Shoes(lambda i: (starts[i] - 1 + head.cum_sum()).cast(pl.UInt32), contiguous=True)
    code = position(shoe, heads.unique()).cast(pl.UInt32)
    return _Shoes(lambda i: code, contiguous=False)


def _with_shoe(piece: pl.LazyFrame, shoes: _Shoes, i: int) -> pl.LazyFrame:
    """The rows of `piece`, the `i`th of the log, that name a shoe, with its code (`shoe`)."""
    return piece.filter(pl.col("shoe_id").is_not_null()).with_columns(shoe=shoes.code(i))


def _shoe_by_shoe(pieces: list[pl.LazyFrame], shoes: _Shoes, collect: Collect,
                 queries: list[Callable[[pl.LazyFrame], pl.LazyFrame]],
                 scratch: Path | None, shown: dict[str, pl.Expr]) -> list[list[pl.LazyFrame]]:
    """Each query on the rounds in shoe order (see `_ORDER`), as the few numeric columns the windows
    over shoes need, and the cards `shown` (for CARD_COUNT, `shown_cards`), and no text.

    The rounds are taken one group of whole shoes at a time, and every query reads the same group in
    shoe order. Contiguous shoes (`_Shoes.contiguous`) are grouped as the pieces hold them, the last
    shoe of a piece carried into the next (`_carried`), and a group whose hands are in order already is
    not sorted; other shoes are grouped by shoe code modulo the number of pieces (`parts.each`) and
    sorted. Either way a group holds a fraction of the log. Returns what each query found, a frame per
    group. With a `scratch` folder, each is written there, not held: a log whose every round is found
    (a table that logs one hand_no for all its hands) would hold it all, and a query given it all (one
    partitioned sink of the 30M found rounds of 30M) held it all too.
    """
    narrow = [_with_shoe(piece, shoes, i).select(
        "log_row", "shoe", _hand(), pl.col("decks").cast(pl.UInt8), _DEALT,
        in_coup=(4 + pl.col("player_drew").cast(pl.UInt8) + pl.col("banker_drew").cast(pl.UInt8)), **shown)
        for i, piece in enumerate(pieces)]
    found: list[list[pl.LazyFrame]] = [[] for _ in queries]
    # Pieces out of log order (a Spark task's rows, held without scratch) are grouped by code.
    carried = shoes.contiguous and scratch is not None
    groups = (_carried(narrow, collect) if carried else
              parts.each(narrow, pl.col("shoe") % len(pieces), len(pieces), collect, scratch and scratch / "shoes"))
    for group, rounds in enumerate(groups):
        if not rounds["log_row"].is_sorted():
            rounds = rounds.sort("log_row")
        in_order = rounds if carried and _in_hand_order(rounds) else in_shoe_order(rounds)
        for i, query in enumerate(queries):
            found[i].append(_kept(query(in_order.lazy()).collect(), scratch and scratch / "found" / str(i), group))
    return found


def _carried(narrow: list[pl.LazyFrame], collect: Collect) -> Iterator[pl.DataFrame]:
    """The rows of contiguous shoes a piece at a time, each frame whole shoes: the last shoe of a piece,
    which may go on in the next, is carried into it."""
    carry = None
    for piece in narrow:
        rows = collect(piece) if carry is None else pl.concat([carry, collect(piece)], rechunk=False)
        # The last shoe's rows are the last rows: cut, not copied. An empty piece is carried as it is,
        # so that a log without a shoe still gives one (empty) frame.
        whole = rows.height - (rows["shoe"] == rows["shoe"][-1]).sum() if rows.height else 0
        carry = rows.slice(whole)
        if whole:
            yield rows.slice(0, whole)
    if carry is not None:
        yield carry


def _in_hand_order(rounds: pl.DataFrame) -> bool:
    """Whether rounds of contiguous shoes are in shoe order already: within each shoe, no hand before a
    lower one, nor a number before a hand_no that is not one (which sorts first)."""
    same, hand, before = SAME_SHOE, pl.col("hand"), pl.col("hand").shift(1)
    return not rounds.select((same & ((hand < before) | (hand.is_null() & before.is_not_null()))).any()).item()


def _kept(found: pl.DataFrame, scratch: Path | None, group: int) -> pl.LazyFrame:
    """What a query found in one group, held, or with a `scratch` folder written there and scanned:
    as many rows as the log's at worst."""
    if scratch is None:
        return found.lazy()
    scratch.mkdir(parents=True, exist_ok=True)
    found.write_parquet(scratch / f"{group:06d}.parquet")
    return stored.scan(scratch / f"{group:06d}.parquet")


#: On rounds in shoe order: the row before is in the same shoe. Plain shifts on the sorted rows do
#: what windows over each shoe would, without hashing 10M rows into groups.
SAME_SHOE = pl.col("shoe") == pl.col("shoe").shift(1)


def in_shoe_order(narrow: pl.DataFrame) -> pl.DataFrame:
    """Rounds in log order put in shoe order (`_ORDER`): a stable sort by shoe and hand keeps the log's
    order among equal hands. Eager and stable, it is faster than a lazy sort by all three columns."""
    return narrow.sort("shoe", _ORDER[0], maintain_order=True)


def running_total(value: pl.Expr) -> pl.Expr:
    """The running sum of `value` within each shoe, on rounds in shoe order."""
    total = value.cum_sum()
    return total - pl.when(~SAME_SHOE.fill_null(False)).then(total - value).forward_fill()


def _hand() -> pl.Expr:
    return pl.col("hand_no").cast(pl.Int64, strict=False).alias("hand")


@dataclass(frozen=True)
class _WriteUp:
    """One kind of finding: its rounds, either `found` by a narrow query (log_row and what the texts
    need; in frames of a group of shoes each) or `where` a condition on the round holds, and
    `describe`, which writes them up."""

    describe: Callable[[pl.LazyFrame], pl.LazyFrame]
    found: list[pl.LazyFrame] | None = None
    where: pl.Expr | None = None


def _write_up(pieces: list[pl.LazyFrame], kinds: list[_WriteUp], collect: Collect,
              scratch: Path | None) -> pl.LazyFrame:
    """Every kind of finding written up a piece at a time: the rounds found in the piece are picked out
    of it by log_row (`is_in` reaches the scan; a join held the whole piece) and joined to what the
    narrow query found, and the rounds a condition picks are filtered, each in one chunk
    (`_one_chunk`). `kind` numbers the kinds.

    What the narrow queries found is taken a piece at a time (`_found_by_piece`). With a `scratch`
    folder, each piece's findings are written there and scanned, in no order: held between the
    queries, small results kept the allocator from reusing the pages of each query, and the write-up's
    resident memory grew with every piece. A log whose every round is found, read back whole to be
    sorted, held it all; the caller sorts it a piece at a time."""
    wheres = [kind.where for kind in kinds if kind.where is not None]

    def one_piece(piece: pl.LazyFrame, found: tuple[pl.DataFrame | None, ...]) -> pl.LazyFrame:
        # The rounds of the piece a condition picks, and those the narrow queries found, each read once.
        by_condition = _one_chunk(piece.filter(pl.any_horizontal(wheres))) if wheres else None
        ids = [rows["log_row"] for rows in found if rows is not None]
        picked = _one_chunk(piece.filter(pl.col("log_row").is_in(pl.concat(ids).implode()))) if ids else None
        return pl.concat([kind.describe(by_condition.filter(kind.where) if rows is None else
                                        picked.join(rows.rechunk().lazy(), on="log_row"))
                          .with_columns(kind=pl.lit(i, pl.UInt8)) for i, (kind, rows) in enumerate(zip(kinds, found))])

    found_by_piece = _found_by_piece(pieces, kinds, collect, scratch and scratch / "found")
    if scratch is None:  # a Spark task's shoes, held anyway
        return pl.concat([collect(one_piece(piece, found)) for piece, found in zip(pieces, found_by_piece)]).lazy()
    (scratch / "findings").mkdir(parents=True)
    for i, (piece, found) in enumerate(zip(pieces, found_by_piece)):
        collect(one_piece(piece, found).sink_parquet(scratch / "findings" / f"{i:06d}.parquet", lazy=True))
    return stored.scan(scratch / "findings")


def _one_chunk(rounds: pl.LazyFrame) -> pl.LazyFrame:
    """The few rounds the checks found, collected in one chunk a column to be written up (joined to
    what was found, itself in one chunk): `pl.format` panicked on columns chunked differently
    (pola-rs/polars#25339), as in a piece read from many row groups or Arrow batches."""
    return rounds.collect().rechunk().lazy()


def _found_by_piece(pieces: list[pl.LazyFrame], kinds: list[_WriteUp], collect: Collect,
                    scratch: Path | None) -> Iterator[tuple[pl.DataFrame | None, ...]]:
    """For each piece, the rounds of it each kind found (None for a kind picked by a condition): every
    kind's found rounds filed by the piece their log_row falls in (`parts.each`), since the pieces
    are in log order and each begins at its first log_row."""
    firsts = pl.concat([collect(piece.select(pl.col("log_row").min().cast(pl.Int64))) for piece in pieces])
    # A piece without a row (all quarantined) begins where the next does, so that nothing is filed in it.
    starts = firsts["log_row"].backward_fill().fill_null(_NO_ROW)
    piece_of = pl.lit(starts).search_sorted(pl.col("log_row").cast(pl.Int64), side="right") - 1
    return zip(*(itertools.repeat(None) if kind.found is None
                 else parts.each(kind.found, piece_of, len(pieces), collect, scratch and scratch / str(i))
                 for i, kind in enumerate(kinds)))


def shown_cards(listed: list[str]) -> dict[str, pl.Expr]:
    """The cards of a round as CARD_COUNT reads them, a column each named by its place in the round:
    the burned and cancelled cards first, when the log lists them (`listed`, as lists of card codes),
    then the six in deal order (`cards_over`)."""
    # Unreadable entries of a burn or cancelled list parse to null and are not counted.
    extra = [pl.col(c).fill_null("").str.split(" ").list.eval(cards.parse_expr(pl.element())) for c in listed]
    dealt = [pl.col(ingest.code_column(c)) for c in DEAL_ORDER]
    return {str(i): column for i, column in enumerate([*extra, *dealt])}


def cards_over(rounds: pl.LazyFrame, listed: int) -> pl.LazyFrame:
    """On rounds in shoe order (see `_shoe_by_shoe`), with their cards (`shown_cards`, the first `listed`
    of them lists): each card (rank and suit) seen more often in its shoe than its decks hold, at the
    round where it first is (log_row, card, seen). The cards are counted by a key, one integer per
    (shoe code, card) (`_keys_over`); only the rounds of the shoes with a key over the fewest decks of
    these rounds are shown again card by card with their place, put in deal order, and held to the
    decks of the round where the card is seen once too often."""
    held = rounds.collect()
    names = [name for name in held.columns if name.isdigit()]

    def shown(frame: pl.DataFrame, place: list[str]) -> pl.LazyFrame:
        index = [*place, "decks", "shoe"]
        lists = [frame.lazy().select(*index, position=pl.lit(name), card=name).explode("card")
                 for name in names[:listed]]
        dealt = frame.lazy().select(*index, *names[listed:]).unpivot(
            index=index, variable_name="position", value_name="card")  # faster than a concat per column
        return pl.concat([*lists, dealt]).filter(pl.col("card").is_not_null() & (pl.col("card") % 8 != 0)).select(
            *place, "decks", "card", *(["position"] if place else []),
            key=pl.col("shoe").cast(pl.UInt64) * _SHOE_KEY + pl.col("card"))

    over = _keys_over(held, names, listed, held["decks"].min())
    in_over = held.filter(pl.col("shoe").is_in((over // _SHOE_KEY).cast(pl.UInt32).implode()))
    return (shown(in_over, ["log_row", "hand"]).filter(pl.col("key").is_in(over.implode()))
            .with_columns(pl.col("position").cast(pl.UInt8))
            .with_columns(seen=pl.col("card").cum_count().over("key", order_by=[*_ORDER, "position"]))
            .filter(pl.col("seen") == pl.col("decks").cast(pl.UInt32) + 1)
            .select("log_row", "card", "seen"))


def _keys_over(held: pl.DataFrame, names: list[str], listed: int, decks: int | None) -> pl.Series:
    """The keys (shoe code * _SHOE_KEY + card) of the cards `held` (rounds in shoe order, with the
    cards `names`, the first `listed` of them lists) seen more than `decks` times in their shoe.

    Counted by one number per card, the shoe's run among these rounds and the card (numpy), 32-bit
    where the runs allow: by bins where they are few beside the cards (shoes of many rounds), else
    by sorting; a hash group-by of the 64-bit keys took several times as long."""
    width = pl.UInt32 if held.height * _SHOE_KEY < 2**32 else pl.UInt64
    runs = (pl.col("shoe") != pl.col("shoe").shift(1)).fill_null(True)
    run = held.select((runs.cum_sum() - 1).cast(width)).to_series().to_numpy()
    # The dealt cards, a column each, keyed as one array; a card not dealt (0) or without a suit (a
    # multiple of 8) is counted too, and left out of what is found: cheaper than leaving it out first.
    dealt = held.select(pl.col(names[listed:]).fill_null(0)).to_numpy()
    keys = [(run[:, None] * _SHOE_KEY + dealt).ravel()]
    if listed:
        numbered = held.select(names[:listed]).with_columns(pl.Series("run", run)).lazy()
        keys.append(pl.concat([numbered.select("run", card=name).explode("card") for name in names[:listed]])
                    .filter(pl.col("card").is_not_null()).select(pl.col("run") * _SHOE_KEY + pl.col("card").cast(width))
                    .collect().to_series().to_numpy())
    keys = np.concatenate(keys)
    if decks is None or not keys.size:
        over = keys[:0]
    elif held.select(runs.sum()).item() * _SHOE_KEY <= 2 * keys.size:
        over = np.flatnonzero(np.bincount(keys) > decks)
    else:
        values, counts = np.unique(keys, return_counts=True)
        over = values[counts > decks]
    over = pl.Series(over[over % 8 != 0], dtype=width)
    shoes = held.filter(runs)["shoe"].cast(pl.UInt64)  # each run's shoe code
    return shoes.gather(over // _SHOE_KEY) * _SHOE_KEY + (over % _SHOE_KEY).cast(pl.UInt64)


def card_counts(found: list[pl.LazyFrame]) -> list[_WriteUp]:
    """CARD_COUNT findings: the round where a card's count in its shoe first passes the decks, as
    `cards_over` found them."""
    name = card_name(pl.col("card"))
    return [_WriteUp(lambda rounds: _finding(
        rounds, "CARD_COUNT",
        expected=pl.format("at most {}", pl.col("decks")),
        recorded=pl.format("{} {}", pl.col("seen"), name),
        detail=pl.format("{} appears for the {}th time in shoe {}, but {} decks hold only {}.",
                         name, pl.col("seen"), pl.col("shoe_id"), pl.col("decks"), pl.col("decks")),
    ), found=found)]


_FIRST_EXPECTED = pl.col("previous").fill_null(0) + 1
_HOLDS = pl.col("decks").cast(pl.Int32) * 52
_OVER = (pl.col("cards_dealt") > _HOLDS) & (pl.col("cards_dealt") - pl.col("in_coup") <= _HOLDS)  # first passes


def sequence_breaks(rounds: pl.LazyFrame, starts_cut: bool = False) -> pl.LazyFrame:
    """On rounds in shoe order (see `_shoe_by_shoe`): the numbered rounds whose hand_no is repeated or
    follows a gap, and the round where a shoe first deals more cards than it holds. `starts_cut`: the
    log may begin mid-shoe (narrowed by `--since`), so a shoe's first hand in it is not held to 1."""
    first_expected = pl.col("previous") + 1 if starts_cut else _FIRST_EXPECTED
    numbered = rounds.filter(pl.col("hand").is_not_null()).with_columns(
        previous=pl.when(SAME_SHOE).then(pl.col("hand").shift(1)),
        cards_dealt=running_total(pl.col("in_coup").cast(pl.Int32)),
        several=(SAME_SHOE & (pl.col("hand") == pl.col("hand").shift(1)))  # one of several rows
        | ((pl.col("shoe") == pl.col("shoe").shift(-1)) & (pl.col("hand") == pl.col("hand").shift(-1))),
    )
    # Repeated hand numbers are rare: which copy a row is gets counted among the few rows found.
    gap = (pl.col("hand") > first_expected).fill_null(False)
    candidates = numbered.filter(pl.col("several").fill_null(False) | gap | _OVER)
    return candidates.with_columns(copy=pl.col("hand").cum_count().over("shoe", "hand", order_by="log_row")).select(
        "log_row", "hand", "copy", "previous", "cards_dealt", "in_coup", is_copy=pl.col("copy") > 1,
        is_gap=(pl.col("copy") == 1) & gap, is_over=_OVER)


#: Where a shoe starts past its first hand: the log may have been cut while the shoe was dealt.
AFTER_HINT = (" Its first hands may be in the previous log: audit this one with --after and that log's output "
              "folder, which carries the shoes open at its end.")


def shoe_sequence(found: list[pl.LazyFrame]) -> list[_WriteUp]:
    """SHOE_SEQUENCE findings: hand numbers that are not numbers, and the `sequence_breaks` found."""
    not_number = pl.col("shoe_id").is_not_null() & pl.col("hand_no").is_not_null() & _hand().is_null()
    return [
        _WriteUp(lambda rounds: _finding(
            rounds, "SHOE_SEQUENCE", pl.lit("a whole number"), pl.col("hand_no"),
            pl.format("hand_no '{}' in shoe {} is not a whole number.", pl.col("hand_no"), pl.col("shoe_id"))),
            where=not_number),
        _WriteUp(lambda rounds: _finding(
            rounds, "SHOE_SEQUENCE", pl.lit("once per shoe"), pl.format("copy {}", pl.col("copy")),
            pl.format("hand_no {} appears again in shoe {} (copy {}).", pl.col("hand"), pl.col("shoe_id"),
                      pl.col("copy"))), found=[f.filter(pl.col("is_copy")) for f in found]),
        _WriteUp(lambda rounds: _finding(
            rounds, "SHOE_SEQUENCE", _FIRST_EXPECTED.cast(pl.String), pl.col("hand_no"),
            # Integrity sees the replayed rounds only: a quarantined hand is a gap too.
            pl.format("hand_no {} follows {} in shoe {}: {} missing (not in the log, or quarantined).{}",
                      pl.col("hand"), pl.col("previous").cast(pl.String).fill_null("the start of the shoe"),
                      pl.col("shoe_id"),
                      pl.when(pl.col("hand") - _FIRST_EXPECTED == 1).then(_FIRST_EXPECTED.cast(pl.String))
                      .otherwise(pl.format("{} to {}", _FIRST_EXPECTED, pl.col("hand") - 1)),
                      pl.when(pl.col("previous").is_null()).then(pl.lit(AFTER_HINT)).otherwise(pl.lit("")))),
            found=[f.filter(pl.col("is_gap")) for f in found]),
        _WriteUp(lambda rounds: _finding(
            rounds, "SHOE_SEQUENCE", pl.format("at most {} cards", _HOLDS), pl.format("{} cards", pl.col("cards_dealt")),
            pl.format("Shoe {} has dealt {} cards by this hand, but {} decks hold {}.", pl.col("shoe_id"),
                      pl.col("cards_dealt"), pl.col("decks"), _HOLDS)),
            found=[f.filter(pl.col("is_over")) for f in found]),
    ]


def backwards(rounds: pl.LazyFrame) -> pl.LazyFrame:
    """On rounds in shoe order (see `_shoe_by_shoe`): the rounds dealt earlier than the hand before them."""
    at = _DEALT
    return (rounds.filter(at.is_not_null()).with_columns(before=pl.when(SAME_SHOE).then(at.shift(1)))
            .filter(at < pl.col("before")).select("log_row", "before"))


def timestamps(found: list[pl.LazyFrame], run_started: datetime) -> list[_WriteUp]:
    """TIMESTAMP findings: unreadable, later than `run_started` (the audit's present), or going
    `backwards` within a shoe."""
    at = _DEALT
    started = pl.lit(run_started).dt.convert_time_zone("UTC")
    return [
        _WriteUp(lambda rounds: _finding(
            rounds, "TIMESTAMP", pl.lit("an ISO 8601 date-time"), pl.col("dealt_at"),
            pl.format("dealt_at '{}' cannot be read as a date-time.", pl.col("dealt_at"))),
            where=pl.col("dealt_at").is_not_null() & at.is_null()),
        _WriteUp(lambda rounds: _finding(
            rounds, "TIMESTAMP", pl.format("before {}", started.dt.to_string("%Y-%m-%dT%H:%M:%SZ")),
            pl.col("dealt_at"), pl.format("dealt_at {} is later than the present of this audit ({}).",
                                          pl.col("dealt_at"), started.dt.to_string("%Y-%m-%dT%H:%M:%SZ"))),
            where=at > started),
        _WriteUp(lambda rounds: _finding(
            rounds, "TIMESTAMP", pl.format("not before {}", pl.col("before").dt.to_string("%Y-%m-%dT%H:%M:%SZ")),
            pl.col("dealt_at"),
            pl.format("dealt_at {} is earlier than the hand before it in shoe {} ({}).", pl.col("dealt_at"),
                      pl.col("shoe_id"), pl.col("before").dt.to_string("%Y-%m-%dT%H:%M:%SZ"))), found=found),
    ]


def decks_of(names: list[str]) -> dict[str, int]:
    """Each profile's decks, as `integrity_findings` and the fairness tests (`fairness.group_counts`) take them."""
    return {name: profile_files.load(name).decks for name in names}


def integrity_findings(pieces: list[pl.LazyFrame], decks: dict[str, int], columns: frozenset[str],
                       run_started: datetime, collect: Collect, starts_cut: bool = False,
                       scratch: Path | None = None) -> pl.LazyFrame:
    """The findings of every integrity check that can run on a log with these columns, with `kind`,
    which numbers the kinds of finding in the order of CODES, in no order: IN_ORDER orders them (drop
    `kind` to publish), and with `scratch` they are on disk, as many as the log has rounds at worst.
    `starts_cut`: the log was narrowed by time from `since`, so a shoe may start before it (see
    `sequence_breaks`).

    `pieces` are the replayed rounds in parts (the staged pieces), in log order; or, on Spark, the
    rounds of some whole shoes. Every query reads one piece: the windows over shoes run on a few
    numeric columns, regrouped by shoe through the empty folder `scratch` when given (see `parts.each`),
    and the few rounds they find are written up in one query per piece, so memory does not hold the log.
    """
    # Looked up, not joined: every query on a piece reads its decks, and a join cost more than the read.
    pieces = [piece.with_columns(decks=lookup(pl.col("profile"), decks, pl.Int64)) for piece in pieces]
    states = requirements(columns, suited_cards=1)  # without suits CARD_COUNT simply finds nothing
    listed = [c for c in EXTRA_CARDS if c in columns]
    shoes = _shoe_codes(pieces, collect)
    ran = [code for code in CODES if states[code] == "ran"]
    queries = {"CARD_COUNT": partial(cards_over, listed=len(listed)),
               "SHOE_SEQUENCE": partial(sequence_breaks, starts_cut=starts_cut), "TIMESTAMP": backwards}
    shown = shown_cards(listed) if "CARD_COUNT" in ran else {}
    found = dict(zip(ran, _shoe_by_shoe(pieces, shoes, collect, [queries[c] for c in ran], scratch, shown)
                     if ran else []))
    kinds = _kinds(found, run_started)
    if not kinds:
        return _NO_FINDINGS
    return _write_up(pieces, kinds, collect, scratch and scratch / "write-up")


_NO_FINDINGS = pl.LazyFrame(schema={**FINDINGS_SCHEMA, "kind": pl.UInt8})


def _kinds(found: dict[str, list[pl.LazyFrame]], run_started: datetime) -> list[_WriteUp]:
    """Every kind of finding of the checks that ran (the keys of `found`, what each one's query found),
    in the order of CODES: a finding's `kind` is its place in this list."""
    write_ups = {"CARD_COUNT": lambda: card_counts(found["CARD_COUNT"]),
                 "SHOE_SEQUENCE": lambda: shoe_sequence(found["SHOE_SEQUENCE"]),
                 "TIMESTAMP": lambda: timestamps(found["TIMESTAMP"], run_started)}
    return [kind for code, make in write_ups.items() if code in found for kind in make()]


class _Hashes:
    """A set of 64-bit hashes (one per shoe of the log) as a few sorted numpy runs, merged as they come
    to be of like size, so each hash is merged again only a logarithmic number of times. A set of
    Python ints held about ten times the bytes, and the audit's memory grew with the shoes."""

    def __init__(self) -> None:
        self.runs: list[np.ndarray] = []

    def add(self, hashes: np.ndarray) -> None:
        """Add `hashes`, sorted and none of them held yet."""
        self.runs.append(hashes)
        while len(self.runs) > 1 and self.runs[-2].size <= 2 * self.runs[-1].size:
            last = self.runs.pop()
            self.runs[-1] = np.sort(np.concatenate([self.runs[-1], last]))

    def has_any(self, hashes: np.ndarray) -> bool:
        """Whether any of `hashes` is held."""
        for run in self.runs:
            at = np.searchsorted(run, hashes).clip(max=run.size - 1)
            if (run[at] == hashes).any():
                return True
        return False


class InLogOrder:
    """The integrity checks run as the log is read, a piece at a time in log order, for a log dealt
    shoe after shoe (each shoe one run of rows): the checks on one round (`_WriteUp.where`) on each
    piece, the checks over shoes on the whole shoes each piece completes, the last shoe of a piece
    carried into the next. No row is read twice. The first shoe whose rows come again after another
    shoe's stops it (`in_order` turns False): such a log is checked keyed by shoe (`integrity_findings`).

    `add` each piece of the log as prepared (`engines.run.prepared`), `finish`,
    then `findings` as `integrity_findings` returns them. `decks_for` gives the decks of the profiles
    rows name (an InputError for a profile the run will refuse, which stops this too); findings are
    written to the new folder `scratch` as they are found."""

    def __init__(self, columns: frozenset[str], run_started: datetime, decks_for: Callable[[list[str]], dict[str, int]],
                 scratch: Path, starts_cut: bool = False):
        states = requirements(columns, suited_cards=1)  # without suits CARD_COUNT simply finds nothing
        self.ran = [code for code in CODES if states[code] == "ran"]
        listed = [c for c in EXTRA_CARDS if c in columns]
        self.queries = {"CARD_COUNT": partial(cards_over, listed=len(listed)),
                        "SHOE_SEQUENCE": partial(sequence_breaks, starts_cut=starts_cut), "TIMESTAMP": backwards}
        self.shown = shown_cards(listed) if "CARD_COUNT" in self.ran else {}
        self.read = [c for c in PLACE_COLUMNS if c not in ("source", "bet_id")] + [
            "log_row", "decks", utc_column("dealt_at"), "player_drew", "banker_drew",
            *map(ingest.code_column, ingest.CARD_COLUMNS), *listed]
        self.run_started, self.decks_for, self.scratch = run_started, decks_for, scratch
        self.decks: dict[str, int] = {}
        self.carry: pl.DataFrame | None = None
        self.finished = _Hashes()  # the hashes of the shoe_ids whose run of rows has ended
        self.in_order = True
        self.written = 0
        scratch.mkdir(parents=True)
        # Each kind's place (`kind`) and, for the kinds a condition on one round picks, the condition.
        self.kinds = list(enumerate(_kinds({code: [pl.LazyFrame()] for code in self.ran}, run_started)))

    def add(self, piece: pl.DataFrame) -> None:
        """The next piece of the log, prepared (`engines.run.prepared`): its replayed rows are checked."""
        if not self.in_order:
            return
        rows = piece.lazy().filter(pl.col("reject").is_null())
        named = set(rows.select(pl.col("profile").unique()).collect()["profile"]) - set(self.decks)
        if named:
            try:
                self.decks |= self.decks_for(sorted(named))
            except InputError:  # the run stops on it once the log is read
                self.in_order = False
                return
        rows = rows.with_columns(decks=lookup(pl.col("profile"), self.decks, pl.Int64))
        wheres = [kind.where for _, kind in self.kinds if kind.where is not None]
        picked = _one_chunk(rows.filter(pl.any_horizontal(wheres))) if wheres else rows
        found = [kind.describe(picked.filter(kind.where)).with_columns(kind=pl.lit(i, pl.UInt8))
                 for i, kind in self.kinds if kind.where is not None]
        # Only what the checks and their texts read: the last shoe's rows are held until the next piece.
        with_shoe = rows.filter(pl.col("shoe_id").is_not_null()).select(self.read).collect()
        held = with_shoe if self.carry is None else pl.concat([self.carry, with_shoe], rechunk=False)
        if held.height:
            heads = np.flatnonzero(held.select((pl.col("shoe_id") != pl.col("shoe_id").shift(1)).fill_null(True))
                                   .to_series().to_numpy())
            self.carry = held.slice(int(heads[-1]))
            if heads[-1]:
                found += self._shoes(held.slice(0, int(heads[-1])), held["shoe_id"].gather(heads[:-1]))
        self._write(found)

    def finish(self) -> None:
        """The last shoe, carried from the last piece."""
        if self.in_order and self.carry is not None:
            self._write(self._shoes(self.carry, self.carry["shoe_id"].head(1)))
        self.carry = None

    def findings(self) -> pl.LazyFrame:
        """Every finding, with `kind`, in no order (see `integrity_findings`)."""
        return stored.scan(self.scratch) if self.written else _NO_FINDINGS

    def _shoes(self, rounds: pl.DataFrame, shoe_ids: pl.Series) -> list[pl.LazyFrame]:
        """The findings of the checks over shoes on `rounds`, whole shoes in log order, each one run of
        rows, the first rows of each named by `shoe_ids`: none, and `in_order` False, if a shoe was
        seen before."""
        seen = np.unique(shoe_ids.hash().to_numpy())
        if seen.size < shoe_ids.len() or self.finished.has_any(seen):
            self.in_order = False
            return []
        self.finished.add(seen)
        if not self.ran:
            return []
        head = (pl.col("shoe_id") != pl.col("shoe_id").shift(1)).fill_null(True)
        narrow = rounds.select(
            "log_row", _hand(), pl.col("decks").cast(pl.UInt8), _DEALT,
            shoe=(head.cum_sum() - 1).cast(pl.UInt32),
            in_coup=(4 + pl.col("player_drew").cast(pl.UInt8) + pl.col("banker_drew").cast(pl.UInt8)), **self.shown)
        in_order = (narrow if _in_hand_order(narrow) else in_shoe_order(narrow)).lazy()
        found = pl.collect_all([self.queries[code](in_order) for code in self.ran])
        kinds = _kinds({code: [rows.lazy()] for code, rows in zip(self.ran, found)}, self.run_started)
        # The few rounds found picked out first: a join alone hashed every round.
        picked = _one_chunk(rounds.lazy().filter(pl.col("log_row").is_in(pl.concat([rows["log_row"] for rows in found])
                                                                       .implode())))
        return [kind.describe(picked.join(kind.found[0], on="log_row")).with_columns(kind=pl.lit(i, pl.UInt8))
                for i, kind in enumerate(kinds) if kind.found is not None]

    def _write(self, found: list[pl.LazyFrame]) -> None:
        if not found:
            return
        rows = pl.concat(found).collect()
        if rows.height:
            rows.write_parquet(self.scratch / f"{self.written:06d}.parquet")
            self.written += 1
