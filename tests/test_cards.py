"""Card notation: every provider style, the scalar and the batch parser agreeing."""

import polars as pl
import pytest

from pipeline import cards


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
