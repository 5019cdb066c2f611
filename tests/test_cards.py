"""Card notation: every provider style, the scalar and the batch parser agreeing."""

import re

import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

from baccarat_audit.rules import cards


@pytest.mark.parametrize(
    ("text", "name", "value"),
    [("KS", "KS", 0), ("10h", "10H", 0), ("TD", "10D", 0), ("S_K", "KS", 0), ("c_10", "10C", 0),
     ("A", "A", 1), ("9", "9", 9), ("as", "AS", 1), (" 7c ", "7C", 7), ("d_5", "5D", 5)],
)
def test_provider_spellings(text, name, value):
    card = cards.parse(text)
    assert cards.name(card) == name
    assert cards.value_of(card) == value


@pytest.mark.parametrize("text", ["", "1S", "11H", "KX", "S-K", "KSS", "0", "Joker", None])
def test_not_cards(text):
    assert cards.parse(text) is None


def test_batch_parser_and_values_match_the_scalar_ones_and_keep_null_as_not_dealt():
    texts = [*cards.SPELLINGS, "XX", "", None]
    frame = pl.DataFrame({"text": texts}).with_columns(code=cards.parse_expr(pl.col("text").str.strip_chars()))
    frame = frame.with_columns(value=cards.value_expr(pl.col("code")))
    assert frame["code"].to_list() == [cards.parse(t) for t in texts]
    expected_values = [None if cards.parse(t) is None else cards.value_of(cards.parse(t)) for t in texts]
    assert frame["value"].to_list() == expected_values


def test_pairs_are_by_rank_not_value():
    assert cards.rank_of(cards.parse("KS")) == cards.rank_of(cards.parse("KH"))
    assert cards.rank_of(cards.parse("10S")) != cards.rank_of(cards.parse("KS"))
    assert cards.value_of(cards.parse("10S")) == cards.value_of(cards.parse("KS"))


# A card's grammar as the procedure's notes give it (docs/rules.md, "Cards and totals"),
# written apart from the parser: a rank (A, 2-9, 10 or T, J, Q, K), then a suit or none, or a suit,
# an underscore and a rank; any case.
_RANK = {"A": 1, **{str(n): n for n in range(2, 11)}, "T": 10, "J": 11, "Q": 12, "K": 13}
_SUIT = {"S": 1, "H": 2, "D": 3, "C": 4}
_RANKS = "A|[2-9]|10|T|J|Q|K"
_GRAMMAR = re.compile(rf"(?P<rank>{_RANKS})(?P<suit>[SHDC])?|(?P<first>[SHDC])_(?P<then>{_RANKS})")


def _by_the_grammar(text: str) -> int | None:
    found = _GRAMMAR.fullmatch(text.upper())
    if found is None:
        return None
    rank, suit = (found["rank"], found["suit"]) if found["rank"] else (found["then"], found["first"])
    return _RANK[rank] * 8 + (_SUIT[suit] if suit else 0)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.text(alphabet="AaTt1023456789JjQqKkSsHhDdCc_x ", max_size=5), min_size=1, max_size=50))
def test_any_text_is_read_as_a_card_exactly_when_the_grammar_says_so(texts):
    """Drawn text, trimmed as the log is: the batch parser and the scalar one read it as the card the
    grammar names, or as no card."""
    trimmed = [text.strip() for text in texts]
    batch = pl.DataFrame({"text": trimmed}, schema={"text": pl.String}).select(
        cards.parse_expr(pl.col("text"))).to_series().to_list()
    assert batch == [_by_the_grammar(text) for text in trimmed] == [cards.parse(text) for text in trimmed]
