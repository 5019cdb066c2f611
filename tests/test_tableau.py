"""The tableau, and the proof that the scalar and vectorized replays are the same function."""

import itertools

import polars as pl
import pytest

from pipeline import coup, replay, tableau

VALUES = range(10)
THIRDS = (None, *VALUES)


def test_banker_table_read_by_player_third_card_matches_the_procedure():
    # shared/punto-banco.md states the same table a second way, by Player's third card.
    by_third_card = {2: 4, 3: 4, 4: 5, 5: 5, 6: 6, 7: 6, 8: 2, 1: 3, 9: 3, 0: 3}
    for third, highest_drawing_total in by_third_card.items():
        for banker in range(8):
            assert tableau.banker_draws(0, banker, third) == (banker <= highest_drawing_total), (
                f"Banker {banker} against a third card of {third}"
            )


def test_banker_five_draws_when_player_stood_and_missing_card_is_not_zero():
    assert tableau.banker_draws(6, 5, None) is True
    assert tableau.banker_draws(6, 6, None) is False
    # Banker 4 draws when Player stood, but stands against a third card of value 0.
    assert tableau.banker_draws(3, 4, None) is True
    assert tableau.banker_draws(3, 4, 0) is False


def test_naturals_stop_both_hands():
    assert not tableau.player_draws(0, 8)
    assert not tableau.banker_draws(9, 0, None)
    assert tableau.result(9, 8) == "PLAYER"
    assert tableau.result(8, 8) == "TIE"


def test_scalar_and_vectorized_replays_agree_on_every_value_sequence():
    """All 10^4 openings x 11 x 11 third cards (a value, or none): 1,210,000 coups as recorded."""
    sequences = list(itertools.product(VALUES, VALUES, VALUES, VALUES, THIRDS, THIRDS))
    p1, b1, p2, b2, p3, b3 = zip(*sequences)
    frame = pl.DataFrame(
        [
            pl.Series("player_1", p1, pl.Int8), pl.Series("player_2", p2, pl.Int8),
            pl.Series("player_3", p3, pl.Int8), pl.Series("banker_1", b1, pl.Int8),
            pl.Series("banker_2", b2, pl.Int8), pl.Series("banker_3", b3, pl.Int8),
        ]
    )
    vectorized = replay.replay(frame.lazy()).select(replay.REPLAY_COLUMNS).collect()
    scalar = [coup.replay(*s) for s in sequences]
    assert vectorized.height == len(scalar) == 1_210_000
    for column in replay.REPLAY_COLUMNS:
        expected = [getattr(r, column) for r in scalar]
        got = vectorized[column].to_list()
        if got != expected:
            first = next(i for i, (g, e) in enumerate(zip(got, expected)) if g != e)
            pytest.fail(f"{column} differs first at {sequences[first]}: vectorized {got[first]}, "
                        f"scalar {expected[first]}")
