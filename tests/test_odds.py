"""Exact enumeration reproduces the published integer counts (docs/rules.md)."""

import pytest

from baccarat_audit.rules import exact_odds


@pytest.mark.parametrize(
    ("decks", "banker", "player", "tie", "all_sequences"),
    [
        (8, 2_292_252_566_437_888, 2_230_518_282_592_256, 475_627_426_473_216, 4_998_398_275_503_360),
        (6, 403_095_751_234_560, 392_220_492_728_832, 83_552_962_932_288, 878_869_206_895_680),
    ],
)
def test_every_ordered_deal_from_a_full_shoe(decks, banker, player, tie, all_sequences):
    counts = exact_odds.result_counts(decks)
    assert counts == {"BANKER": banker, "PLAYER": player, "TIE": tie}
    assert sum(counts.values()) == all_sequences


# House edges as published in docs/rules.md, to the digits given there (8 decks).
PUBLISHED = {
    "standard": {"BANKER": "1.0579", "PLAYER": "1.2351", "TIE": "14.3596", "PLAYER_PAIR": "10.361",
                 "BANKER_PAIR": "10.361", "PLAYER_DRAGON_BONUS": "2.652", "BANKER_DRAGON_BONUS": "9.373"},
    "tie-9": {"TIE": "4.8440"},
    "ez-baccarat": {"BANKER": "1.0183", "DRAGON_7": "7.6113", "PANDA_8": "10.1876"},
    "super-6": {"BANKER": "1.4581"},
}


@pytest.mark.parametrize("profile", PUBLISHED)
def test_house_edges_match_the_published_figures(profile):
    from decimal import ROUND_HALF_UP, Decimal

    from baccarat_audit.inputs import profile_files

    edges = exact_odds.odds(profile_files.load(profile)).house_edge
    for bet, published in PUBLISHED[profile].items():
        digits = Decimal(published)
        edge = Decimal(edges[bet].numerator * 100) / Decimal(edges[bet].denominator)
        assert edge.quantize(digits, rounding=ROUND_HALF_UP) == digits, f"{profile} {bet}: {edge}"


def test_outcome_probabilities_and_pair_chance():
    from fractions import Fraction

    from baccarat_audit.inputs import profile_files

    figures = exact_odds.odds(profile_files.load("standard"))
    assert f"{float(figures.outcomes['BANKER']):.6f}" == "0.458597"
    assert f"{float(figures.outcomes['PLAYER']):.6f}" == "0.446247"
    assert f"{float(figures.outcomes['TIE']):.6f}" == "0.095156"
    assert figures.outcomes["pair"] == Fraction(31, 415)


@pytest.mark.parametrize("decks", [8, 6, 1])
def test_the_vectorized_enumeration_counts_every_finish_as_the_scalar_one(decks):
    assert exact_odds.finishes_vectorized(decks) == exact_odds.finishes(decks)
