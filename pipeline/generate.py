"""Shoe-faithful round logs for tests, samples and benchmarks, with faults injected on request.

Cards come off a shuffled multi-deck shoe with suits: the first card is turned and burns as many
cards as its value (10-value cards burn 10), a cut card sits 14-16 cards from the bottom, and when it
comes out the coup in progress and one more are dealt. Each coup is dealt by `pipeline.tableau`.
A faulted round breaks exactly one rule, so the audit must flag it with exactly one check code.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

from pipeline import cards, tableau

FAULTS = ("PLAYER_DRAW", "BANKER_DRAW", "PLAYER_TOTAL", "BANKER_TOTAL", "OUTCOME", "DUPLICATE_ROUND")
START = datetime(2026, 11, 29, 18, 0, 0)
COUP_SECONDS = 50
SHUFFLE_SECONDS = 300


def new_shoe(rng: random.Random, decks: int) -> list[int]:
    shoe = [cards.code(rank, suit) for _ in range(decks) for rank in range(1, 14) for suit in range(1, 5)]
    rng.shuffle(shoe)
    return shoe


def burn(shoe: list[int]) -> int:
    """Cards taken off the top before the first coup: the turned card and as many as it says."""
    rank = cards.rank_of(shoe[0])
    return 1 + (10 if rank >= 10 else rank)


@dataclass
class Log:
    rows: list[dict] = field(default_factory=list)
    faults: list[dict] = field(default_factory=list)
    duplicated: set[str] = field(default_factory=set)


def deal_coup(shoe: list[int], at: int, wrong: str | None) -> tuple[list[int], list[int], int]:
    """Deal one coup from position `at`; `wrong` names a hand whose draw decision is reversed."""
    p1, b1, p2, b2 = shoe[at : at + 4]
    at += 4
    player, banker = [p1, p2], [b1, b2]
    value = cards.value_of
    player_opening = tableau.total(value(p1), value(p2))
    banker_opening = tableau.total(value(b1), value(b2))
    if tableau.player_draws(player_opening, banker_opening) != (wrong == "player"):
        player.append(shoe[at])
        at += 1
    third = value(player[2]) if len(player) == 3 else None
    if tableau.banker_draws(player_opening, banker_opening, third) != (wrong == "banker"):
        banker.append(shoe[at])
        at += 1
    return player, banker, at


def generate(rounds: int, seed: int, fault_rate: float = 0.0, tables: int = 4, decks: int = 8) -> Log:
    """`rounds` coups over `tables` tables, each table dealing shoe after shoe."""
    rng = random.Random(seed)
    log = Log()
    per_table = -(-rounds // tables)
    for table in range(1, tables + 1):
        clock = START
        dealt, shoe_no = 0, 0
        while dealt < per_table and len(log.rows) < rounds:
            shoe_no += 1
            shoe = new_shoe(rng, decks)
            cut = len(shoe) - rng.randint(14, 16)
            at, hand_no, one_more = burn(shoe), 0, False
            while dealt < per_table and len(log.rows) < rounds:
                hand_no += 1
                fault = rng.choice(FAULTS) if rng.random() < fault_rate else None
                wrong = {"PLAYER_DRAW": "player", "BANKER_DRAW": "banker"}.get(fault)
                player, banker, at = deal_coup(shoe, at, wrong)
                place = (f"T{table:02d}", f"T{table:02d}-S{shoe_no:04d}", hand_no, clock)
                log.rows.append(_record(log, rng, fault, place, player, banker))
                clock += timedelta(seconds=COUP_SECONDS)
                dealt += 1
                if one_more:
                    break
                one_more = at >= cut  # the cut card is out: finish, then deal one more coup
            clock += timedelta(seconds=SHUFFLE_SECONDS)
    return log


def _record(log: Log, rng: random.Random, fault: str | None, place: tuple,
            player: list[int], banker: list[int]) -> dict:
    """The row the table system would log for a coup, with the fault (if any) written into it."""
    table_id, shoe_id, hand_no, clock = place
    player_total = tableau.total(*map(cards.value_of, player))
    banker_total = tableau.total(*map(cards.value_of, banker))
    outcome = tableau.result(player_total, banker_total)
    round_id = f"{shoe_id}-C{hand_no:03d}"
    if fault == "PLAYER_TOTAL":
        player_total = (player_total + rng.randint(1, 9)) % 10
    elif fault == "BANKER_TOTAL":
        banker_total = (banker_total + rng.randint(1, 9)) % 10
    elif fault == "OUTCOME":
        outcome = rng.choice([o for o in ("PLAYER", "BANKER", "TIE") if o != outcome])
    elif fault == "DUPLICATE_ROUND":
        # One extra copy of the previous round_id; never a third copy, so each fault is one pair.
        previous = log.rows[-1]["round_id"] if log.rows else None
        if previous is None or previous in log.duplicated:
            fault = None
        else:
            round_id = previous
            log.duplicated.add(round_id)
    if fault:
        log.faults.append({"round_id": round_id, "check": fault})
    return {
        "round_id": round_id,
        "table_id": table_id,
        "shoe_id": shoe_id,
        "hand_no": hand_no,
        "dealt_at": clock.isoformat() + "Z",
        **{f"player_card_{i}": _name(player, i) for i in (1, 2, 3)},
        **{f"banker_card_{i}": _name(banker, i) for i in (1, 2, 3)},
        "player_total": player_total,
        "banker_total": banker_total,
        "outcome": outcome,
    }


def _name(hand: list[int], number: int) -> str | None:
    return cards.name(hand[number - 1]) if len(hand) >= number else None


ROUND_SCHEMA = {
    "round_id": pl.String, "table_id": pl.String, "shoe_id": pl.String, "hand_no": pl.Int32,
    "dealt_at": pl.String,
    **{f"{hand}_card_{i}": pl.String for hand in ("player", "banker") for i in (1, 2, 3)},
    "player_total": pl.Int8, "banker_total": pl.Int8, "outcome": pl.String,
}


def write(log: Log, out_dir: Path) -> dict[str, Path]:
    """rounds.csv, rounds.parquet (same rows) and faults.csv (round_id, check) in `out_dir`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rounds = pl.DataFrame(log.rows, schema=ROUND_SCHEMA, orient="row")
    paths = {"csv": out_dir / "rounds.csv", "parquet": out_dir / "rounds.parquet",
             "faults": out_dir / "faults.csv"}
    rounds.write_csv(paths["csv"])
    rounds.write_parquet(paths["parquet"])
    pl.DataFrame(log.faults, schema={"round_id": pl.String, "check": pl.String}).write_csv(paths["faults"])
    return paths
