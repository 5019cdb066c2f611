"""Shoe-faithful round logs for tests, samples and benchmarks, with faults injected on request.

Cards come off a shuffled multi-deck shoe with suits: the first card is turned and burns as many
cards as its value (10-value cards burn 10), a cut card sits 14-16 cards from the bottom, and when it
comes out the coup in progress and one more are dealt. Each coup is dealt by `pipeline.rules.tableau`.
A faulted round breaks exactly one rule, so the audit must flag it with exactly one check code:
a reversed draw, a wrong total or result, a repeated round_id, a card re-suited so that the shoe shows
it once too often, a skipped hand number, or a dealt_at earlier than the hand before.
With bets, every round gets a few bets of the types its table's profile offers, paid by the scalar
settlement (`pipeline.rules.bets.settle`); a faulted bet is paid a wrong amount and must be flagged SETTLEMENT.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from decimal import Decimal

from .rules import bets, cards, coup, profiles, tableau
from .inputs import profile_files
from . import owned, stops
from .errors import InputError
from .checks.settlement import money_str

FAULTS = ("PLAYER_DRAW", "BANKER_DRAW", "PLAYER_TOTAL", "BANKER_TOTAL", "OUTCOME", "DUPLICATE_ROUND",
          "CARD_COUNT", "SHOE_SEQUENCE", "TIMESTAMP")
START = datetime(2026, 11, 1, 18, 0, 0)  # a month of play per table fits before this project's first run
COUP_SECONDS = 50
SHUFFLE_SECONDS = 300
STAKES = tuple(Decimal(s) for s in ("5", "10", "25", "100", "12.50", "7.35", "1.01"))


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
    bets: list[dict] = field(default_factory=list)
    faults: list[dict] = field(default_factory=list)  # round_id, bet_id (bet faults), check
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


def generate(rounds: int, seed: int, fault_rate: float = 0.0, tables: int = 4,
             profile_names: tuple[str, ...] = (profiles.DEFAULT,), with_bets: bool = False,
             stacked: tuple[str, ...] = (), start: datetime | None = None,
             on_phase: Callable[..., None] = lambda phase, done=None, total=None: None) -> Log:
    """`rounds` coups over `tables` tables (T01, T02, ...), each dealing shoe after shoe from `start`
    (UTC). Without a start, from START, or whole days earlier where that play would run past the
    present: a generated log is dealt before it is audited (TIMESTAMP flags rounds after the present).

    Table k plays under `profile_names[k % len(profile_names)]` (its decks, its `profile` column).
    A table named in `stacked` favours Banker: half of its Player wins are dealt again from the shoe,
    the discarded cards never logged, so its shoes stay faithful while its outcomes are not.
    """
    if len(profile_names) > tables:  # table k plays profile k: the last ones would deal no round, unseen
        raise InputError(f"{len(profile_names)} profiles for {tables} tables: {', '.join(profile_names[tables:])} "
                         f"would deal no round; give --tables {len(profile_names)} or more")
    rng = random.Random(seed)
    log = Log()
    per_table = -(-rounds // tables)
    for table in range(1, tables + 1):
        table_id = f"T{table:02d}"
        profile = profile_files.load(profile_names[(table - 1) % len(profile_names)])
        clock, dealt, shoe_no = _naive_utc(start) if start else START, 0, 0
        while dealt < per_table and len(log.rows) < rounds:
            on_phase("dealing rounds", len(log.rows), rounds)  # a shoe at a time: a large log takes a while to deal
            shoe_no += 1
            shoe = new_shoe(rng, profile.decks)
            cut = len(shoe) - rng.randint(14, 16)
            at, hand_no, one_more = burn(shoe), 0, False
            shown: Counter[int] = Counter()  # cards logged from this shoe so far
            owed_card_fault = False
            previous_at = clock
            while dealt < per_table and len(log.rows) < rounds:
                hand_no += 1
                fault = rng.choice(FAULTS) if rng.random() < fault_rate else None
                wrong = {"PLAYER_DRAW": "player", "BANKER_DRAW": "banker"}.get(fault)
                player, banker, at = deal_coup(shoe, at, wrong)
                while table_id in stacked and _player_wins(player, banker) and rng.random() < 0.5 and at < cut:
                    player, banker, at = deal_coup(shoe, at, wrong)
                if fault == "SHOE_SEQUENCE":
                    hand_no += 1  # a hand number skipped
                if fault == "TIMESTAMP" and hand_no == 1:
                    fault = None  # "earlier than the hand before" needs a hand before
                if fault == "CARD_COUNT":
                    owed_card_fault, fault = True, None  # applied at the shoe's last coup
                if one_more and owed_card_fault and fault is None:
                    # Late in the shoe nearly every card has been shown as often as the decks hold.
                    if _one_card_too_many(player, banker, shown, profile.decks):
                        fault = "CARD_COUNT"
                shown.update(player + banker)
                at_time = previous_at - timedelta(seconds=30) if fault == "TIMESTAMP" else clock
                previous_at = at_time
                place = (table_id, f"{table_id}-S{shoe_no:04d}", hand_no, at_time)
                log.rows.append(_record(log, rng, fault, place, player, banker) | {"profile": profile.name})
                if with_bets:
                    _place_bets(log, rng, fault_rate, profile, player, banker)
                clock += timedelta(seconds=COUP_SECONDS)
                dealt += 1
                if one_more:
                    break
                one_more = at >= cut  # the cut card is out: finish, then deal one more coup
            clock += timedelta(seconds=SHUFFLE_SECONDS)
    _unsettleable_bets(log)
    if start is None:
        _before_now(log)
    return log


def _naive_utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _before_now(log: Log) -> None:
    """Every dealt_at of `log` moved back by the whole days that put its last round before the present."""
    last = max((datetime.fromisoformat(row["dealt_at"][:-1]) for row in log.rows), default=START)
    now = datetime.now(UTC).replace(tzinfo=None)
    if last < now:
        return
    back = timedelta(days=(last - now).days + 1)
    for row in log.rows:
        row["dealt_at"] = (datetime.fromisoformat(row["dealt_at"][:-1]) - back).isoformat() + "Z"


def _replayed(player: list[int], banker: list[int]) -> coup.Replay:
    """The scalar replay of dealt cards: totals, result and natural, computed in one place."""
    value = cards.value_of
    third = [value(hand[2]) if len(hand) == 3 else None for hand in (player, banker)]
    return coup.replay(value(player[0]), value(banker[0]), value(player[1]), value(banker[1]), *third)


def _player_wins(player: list[int], banker: list[int]) -> bool:
    return _replayed(player, banker).result == "PLAYER"


def _one_card_too_many(player: list[int], banker: list[int], shown: Counter, decks: int) -> bool:
    """Re-suit one card of the coup to a card already shown `decks` times in the shoe (same rank, so
    the same value and pairs: only CARD_COUNT can notice). False when no card of the coup allows it."""
    for hand in (player, banker):
        for i, card in enumerate(hand):
            for suit in range(1, 5):
                twin = cards.code(cards.rank_of(card), suit)
                if twin != card and shown[twin] >= decks:
                    hand[i] = twin
                    return True
    return False


def _place_bets(log: Log, rng: random.Random, fault_rate: float, profile: profiles.Profile,
                player: list[int], banker: list[int]) -> None:
    """One to three bets on the round just recorded, paid as the profile says (or faulted)."""
    rank = cards.rank_of
    dealt = _replayed(player, banker)
    facts = bets.facts(dealt.player_final, dealt.banker_final, len(player), len(banker), dealt.natural,
                       rank(player[0]) == rank(player[1]), rank(banker[0]) == rank(banker[1]))
    round_id = log.rows[-1]["round_id"]
    for bet_type in rng.sample(bets.offered(profile), rng.randint(1, 3)):
        stake = rng.choice(STAKES)
        paid = bets.settle(profile, bet_type, facts, stake).expected
        bet_id = f"{round_id}-B{len(log.bets) + 1:07d}"
        if rng.random() < fault_rate:
            paid = rng.choice([a for a in (stake * 2, Decimal(0), stake, paid + stake, stake * 10) if a != paid])
            log.faults.append({"round_id": round_id, "bet_id": bet_id, "check": "SETTLEMENT"})
        log.bets.append({"round_id": round_id, "bet_id": bet_id, "bet_type": bet_type, "stake": money_str(stake),
                         "paid": money_str(paid), "seat": str(rng.randint(1, 7))})


def _unsettleable_bets(log: Log) -> None:
    """Bets on a duplicated round_id cannot be matched to one round: the audit quarantines them."""
    if not log.duplicated:
        return
    log.faults = [f for f in log.faults if not (f.get("bet_id") and f["round_id"] in log.duplicated)]
    log.faults += [{"round_id": b["round_id"], "bet_id": b["bet_id"], "check": "BET_QUARANTINED"}
                   for b in log.bets if b["round_id"] in log.duplicated]



def _record(log: Log, rng: random.Random, fault: str | None, place: tuple,
            player: list[int], banker: list[int]) -> dict:
    """The row the table system would log for a coup, with the fault (if any) written into it."""
    table_id, shoe_id, hand_no, clock = place
    dealt = _replayed(player, banker)
    player_total, banker_total, outcome = dealt.player_final, dealt.banker_final, dealt.result
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
        log.faults.append({"round_id": round_id, "bet_id": None, "check": fault})
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
    "player_total": pl.Int8, "banker_total": pl.Int8, "outcome": pl.String, "profile": pl.String,
}
BET_SCHEMA = {"round_id": pl.String, "bet_id": pl.String, "bet_type": pl.String, "stake": pl.String,
              "paid": pl.String, "seat": pl.String}


#: What `write` puts in its folder, and so replaces there (`owned`).
WRITTEN = ("rounds.csv", "rounds.parquet", "bets.csv", "bets.parquet", "faults.csv")


def write(log: Log, out_dir: Path) -> dict[str, Path]:
    """rounds.csv and rounds.parquet (same rows), bets.csv and bets.parquet when there are bets, and
    faults.csv (round_id, bet_id, check: what the audit must report) in `out_dir`, written beside it
    and moved in whole, replacing only files an earlier `write` put there (`owned.publish`): bets an
    earlier log left are removed when this one has none, since they would be settled against its
    rounds; a file of someone else's under one of these names stops it (an InputError)."""
    out_dir = Path(out_dir)
    with owned.locked(out_dir, f"{out_dir}: cannot write the generated log here"):
        owned.claim(out_dir, WRITTEN)
        with stops.run_folder(out_dir, ".audit-", f"{out_dir}: cannot write the generated log here") as staging:
            frames = [(pl.DataFrame(log.rows, schema=ROUND_SCHEMA, orient="row"), "rounds")]
            if log.bets:
                frames.append((pl.DataFrame(log.bets, schema=BET_SCHEMA, orient="row"), "bets"))
            for frame, name in frames:
                frame.write_csv(staging / f"{name}.csv")
                frame.write_parquet(staging / f"{name}.parquet")
            pl.DataFrame(log.faults, schema={"round_id": pl.String, "bet_id": pl.String, "check": pl.String},
                         orient="row").write_csv(staging / "faults.csv")
            with stops.publishing(0):  # the command's code once the log is written
                owned.publish(staging, out_dir, WRITTEN)
    paths = {"csv": out_dir / "rounds.csv", "parquet": out_dir / "rounds.parquet", "faults": out_dir / "faults.csv"}
    if log.bets:
        paths |= {"bets_csv": out_dir / "bets.csv", "bets_parquet": out_dir / "bets.parquet"}
    return paths
