"""Exact enumeration reproduces the published integer counts (shared/punto-banco.md)."""

import pytest

from pipeline import odds


@pytest.mark.parametrize(
    ("decks", "banker", "player", "tie", "all_sequences"),
    [
        (8, 2_292_252_566_437_888, 2_230_518_282_592_256, 475_627_426_473_216, 4_998_398_275_503_360),
        (6, 403_095_751_234_560, 392_220_492_728_832, 83_552_962_932_288, 878_869_206_895_680),
    ],
)
def test_every_ordered_deal_from_a_full_shoe(decks, banker, player, tie, all_sequences):
    counts = odds.result_counts(decks)
    assert counts == {"BANKER": banker, "PLAYER": player, "TIE": tie}
    assert sum(counts.values()) == all_sequences
