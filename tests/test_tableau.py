"""The tableau, and the proof that the scalar and vectorized replays are the same function (and give
the per-round checks the same verdicts)."""

import csv
import itertools

import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

from baccarat_audit.engines import run
from baccarat_audit.rules import cards, coup, replay, tableau
from baccarat_audit.outputs import explanation
from baccarat_audit.inputs import ingest
from baccarat_audit.checks import integrity
from baccarat_audit.checks.round_checks import PER_ROUND
from baccarat_audit.checks.findings import round_findings

VALUES = range(10)
THIRDS = (None, *VALUES)


def test_banker_table_read_by_player_third_card_matches_the_procedure():
    # docs/rules.md states the same table a second way, by Player's third card.
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


CARD_NAMES = [f"{rank}{suit}" for rank in cards.RANKS for suit in cards.SUITS]
TOTALS = st.one_of(st.integers(min_value=-2, max_value=12).map(str),
                   st.tuples(st.sampled_from(["+", "-", "0", "+0", "00"]), st.integers(min_value=0, max_value=9),
                             st.sampled_from(["", ".0", "_0"])).map(lambda parts: "".join(map(str, parts))),
                   st.text(alphabet="0123456789+-. _\u0665x", max_size=4))  # an Arabic-Indic five among them
OUTCOMES = st.one_of(st.sampled_from(sorted(ingest.outcome_spellings())).map(lambda s: s.lower() if len(s) > 1 else s),
                     st.text(alphabet="PBTplayerbankertieWIN _", max_size=8))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.lists(st.sampled_from(CARD_NAMES), min_size=4, max_size=4),
                          st.lists(st.one_of(st.none(), st.sampled_from(CARD_NAMES)), min_size=2, max_size=2),
                          TOTALS, TOTALS, OUTCOMES), min_size=1, max_size=40))
def test_each_round_check_flags_what_the_scalar_replay_says_disagrees(tmp_path_factory, rounds):
    """Drawn rounds (any four opening cards, a third card or none each, totals and a result written any
    way), in a CSV log: the per-round checks of the batch path flag exactly the draws, totals and
    results `explain` (the scalar replay) finds not to agree, and nothing it finds not recorded."""
    path = tmp_path_factory.mktemp("rounds") / "log.csv"
    header = ["round_id", *integrity.DEAL_ORDER, "player_total", "banker_total", "outcome"]
    with path.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows(
            [header, *([f"R{i}", *opening, *thirds, player, banker, outcome]
                       for i, (opening, thirds, player, banker, outcome) in enumerate(rounds))])
    rows = run.prepared(ingest.scan(path, "round_log").frame, "standard").collect()
    assert rows["reject"].null_count() == len(rounds)  # every card is readable
    flagged = set(round_findings(rows.lazy(), PER_ROUND).select("round_id", "check").collect().iter_rows())
    disagree = {(row["round_id"], comparison["field"].upper().replace(" ", "_"))
                for row in rows.iter_rows(named=True)
                for comparison in explanation.explain(row)["comparisons"] if comparison["agrees"] is False}
    assert flagged == disagree


#: What a module of the rules core may import from outside it: the language's own arithmetic and
#: data types, the column engine its vectorized evaluators are written in, and the error it raises.
CORE_MAY_IMPORT = {"__future__", "collections", "dataclasses", "decimal", "fractions", "functools", "itertools",
                   "math", "pathlib", "typing", "numpy", "polars"}
READS_OR_WRITES = {"open", "read_text", "read_bytes", "write_text", "write_bytes", "glob", "iterdir", "stat",
                   "load", "loads"}


def test_the_rules_core_reads_no_file_and_imports_nothing_around_it():
    """The rules core (pipeline/rules/) is punto banco alone: no module of it imports inputs, checks,
    engines or outputs, or a library that reads files (tomllib, hashlib, os), or opens a file; the
    profiles' files are read by `inputs.profile_files`, which hands the core their settings."""
    import ast
    from pathlib import Path

    core = Path(tableau.__file__).parent
    modules = sorted(core.glob("*.py"))
    assert {"tableau.py", "cards.py", "coup.py", "replay.py", "bets.py", "profiles.py", "exact_odds.py"} <= {
        module.name for module in modules}
    for module in modules:
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                assert node.level == 1 or node.module == "errors", f"{module.name} imports ..{node.module}"
            elif isinstance(node, ast.ImportFrom | ast.Import):
                names = [node.module] if isinstance(node, ast.ImportFrom) else [alias.name for alias in node.names]
                assert all(name.split(".")[0] in CORE_MAY_IMPORT for name in names), f"{module.name} imports {names}"
            elif isinstance(node, ast.Attribute) and node.attr in READS_OR_WRITES:
                raise AssertionError(f"{module.name} calls .{node.attr}")
            elif isinstance(node, ast.Name) and node.id == "open":
                raise AssertionError(f"{module.name} opens a file")
