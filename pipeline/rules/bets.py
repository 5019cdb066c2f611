"""The bets of punto banco: how each bet type is decided, stated once, and what each profile pays.

`CASES` lists, for every bet type, the ways it can end and the facts of the coup that decide each,
first match wins. The scalar `case_of` and the polars `case_expr` are two evaluators of that one
statement (tests prove them equal on every finish); the batch path gathers `case_expr`'s answer for
every finish from a table (`case_code`) instead of running its chain on every bet. `returns`
reads a profile's pays into the amount returned per unit staked for each (bet type, case), as exact
decimals.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Context, Decimal
from functools import cache, reduce

import polars as pl

from . import tableau
from .profiles import BONUS_MARGINS, Profile

#: Facts of a finished coup that settle bets (see `facts_expr` for how each is computed).
FACTS = ("result", "player_final", "banker_final", "player_cards", "banker_cards", "natural",
         "player_natural", "banker_natural", "player_pair", "banker_pair", "margin")

#: A bet's recorded status (any case) that takes it out of the coup's settlement: a void bet returns its
#: stake whatever the cards; an open one is not settled yet. Any other status, or none, is settled by the
#: cards of its round.
VOID = ("VOID", "VOIDED", "CANCELLED", "CANCELED", "REFUNDED")
OPEN = ("OPEN", "PENDING", "UNSETTLED")
#: An amount as a log writes it: digits, up to 4 decimals. ASCII digits: Python's \d and Decimal take "١٠" too.
AMOUNT = r"^([0-9]{1,12})(?:\.([0-9]{1,4}))?$"


def _dragon_bonus(side: str) -> tuple:
    wins = {"result": side}
    return (
        ("natural win", wins | {f"{side.lower()}_natural": True}),
        ("natural tie", {"result": "TIE", "natural": True}),
        *((f"win by {m}", wins | {"margin": m}) for m in BONUS_MARGINS),
        ("lose", {}),
    )


#: bet type -> ((case, {fact: required value}), ...); the first case whose facts all hold applies.
CASES: dict[str, tuple[tuple[str, dict], ...]] = {
    "PLAYER": (("win", {"result": "PLAYER"}), ("push", {"result": "TIE"}), ("lose", {})),
    "BANKER": (
        ("win with 6", {"result": "BANKER", "banker_final": 6}),
        ("win with three-card 7", {"result": "BANKER", "banker_final": 7, "banker_cards": 3}),
        ("win", {"result": "BANKER"}),
        ("push", {"result": "TIE"}),
        ("lose", {}),
    ),
    "TIE": (("win", {"result": "TIE"}), ("lose", {})),
    "PLAYER_PAIR": (("win", {"player_pair": True}), ("lose", {})),
    "BANKER_PAIR": (("win", {"banker_pair": True}), ("lose", {})),
    "DRAGON_7": (("win", {"result": "BANKER", "banker_final": 7, "banker_cards": 3}), ("lose", {})),
    "PANDA_8": (("win", {"result": "PLAYER", "player_final": 8, "player_cards": 3}), ("lose", {})),
    "SUPER_6": (("win", {"result": "BANKER", "banker_final": 6}), ("lose", {})),
    "PLAYER_DRAGON_BONUS": _dragon_bonus("PLAYER"),
    "BANKER_DRAGON_BONUS": _dragon_bonus("BANKER"),
}
BET_TYPES = tuple(CASES)
#: The bet types decided by the cards' ranks (a pair): not settled on a log of card points.
RANKED = frozenset(bet_type for bet_type, cases in CASES.items()
                   if any(fact in ("player_pair", "banker_pair") for _, when in cases for fact in when))
#: The bet types decided by the opening cards alone (the pairs): known whatever the draws.
OPENING = frozenset(bet_type for bet_type, cases in CASES.items()
                    if all(fact in ("player_pair", "banker_pair") for _, when in cases for fact in when))


def facts(player_final: int, banker_final: int, player_cards: int, banker_cards: int, natural: bool,
          player_pair: bool | None = None, banker_pair: bool | None = None) -> dict:
    """Scalar: the settling facts of one coup (the same names and meaning as `facts_expr`)."""
    return {
        "result": tableau.result(player_final, banker_final),
        "player_final": player_final,
        "banker_final": banker_final,
        "player_cards": player_cards,
        "banker_cards": banker_cards,
        "natural": natural,
        # In a natural coup nobody draws, so a natural hand is the one showing 8 or 9.
        "player_natural": natural and player_final >= 8,
        "banker_natural": natural and banker_final >= 8,
        "player_pair": player_pair,
        "banker_pair": banker_pair,
        "margin": abs(player_final - banker_final),
    }


def case_of(bet_type: str, facts: dict) -> str:
    """Scalar evaluator: how a bet of `bet_type` ended, given the coup's facts."""
    return next(case for case, needs in CASES[bet_type] if all(facts[k] == v for k, v in needs.items()))


#: Every case a bet can end in, in the order of their codes (`case_code`).
CASE_NAMES = tuple(sorted({case for cases in CASES.values() for case, _ in cases}))
_CASE_NAMES = pl.Enum(CASE_NAMES)


def bet_type_code(bet_type: pl.Expr) -> pl.Expr:
    """A bet type's index in BET_TYPES; null for any other text."""
    return bet_type.cast(pl.Enum(BET_TYPES), strict=False).to_physical().cast(pl.Int32)


def case_expr(bet_type: pl.Expr) -> pl.Expr:
    """Vectorized evaluator: the case of every bet, from a `bet_type` column and the fact columns.

    Text is handled as Enum codes: the bet type and the result are compared as codes (unknown text
    becomes null, which no case matches) and each branch yields a code, turned into text once. The
    chain visits every bet some 35 times, and text at each step was slower.
    """
    results = sorted({needs["result"] for cases in CASES.values() for _, needs in cases if "result" in needs})
    typed = {"bet_type": bet_type_code(bet_type),
             "result": pl.col("result").cast(pl.Enum(results), strict=False)}
    chain = None
    for bet, cases in CASES.items():
        for case, needs in cases:
            holds = reduce(lambda a, b: a & b, (typed.get(k, pl.col(k)) == v for k, v in needs.items()),
                           typed["bet_type"] == BET_TYPES.index(bet))
            chain = (pl.when(holds) if chain is None else chain.when(holds)).then(pl.lit(case, dtype=_CASE_NAMES))
    return chain.otherwise(None).cast(pl.String)


#: The facts every other fact of a coup follows from (see `facts`), with the values each can take.
FINISH = {"player_final": range(10), "banker_final": range(10), "player_cards": (2, 3), "banker_cards": (2, 3),
          "natural": (False, True), "player_pair": (False, True), "banker_pair": (False, True)}
FINISHES = math.prod(len(values) for values in FINISH.values())  # 3,200


def _finish_code() -> pl.Expr:
    """One integer per finish, 0 to FINISHES - 1: the positions of the FINISH facts among their
    values, in mixed radix."""
    code = pl.lit(0, pl.Int32)
    for fact, values in FINISH.items():
        code = code * len(values) + (pl.col(fact).cast(pl.Int32) - int(values[0]))
    return code


@cache
def _cases_by_finish() -> pl.Series:
    """`case_expr` on every bet type and finish, at (bet type's index in BET_TYPES) * FINISHES + finish code."""
    finishes = pl.DataFrame([facts(*values) for values in itertools.product(*FINISH.values())])
    table = pl.DataFrame({"bet_type": BET_TYPES}).join(finishes, how="cross").with_columns(
        at=bet_type_code(pl.col("bet_type")) * FINISHES + _finish_code(),
        case=case_expr(pl.col("bet_type")).cast(_CASE_NAMES))
    assert table["at"].to_list() == list(range(table.height))  # the code is the row: a gather finds it
    return table["case"]


def case_code(bet_code: pl.Expr) -> pl.Expr:
    """`case_expr`, looked up, as the case's index in CASE_NAMES: gathered from `case_expr` evaluated
    once on every bet type and finish, from the bet type's index (`bet_type_code`). Its chain visits
    every bet some 35 times; this gathers once, and makes no text. Null where the bet type is not one
    of BET_TYPES or the round has no facts."""
    return pl.lit(_cases_by_finish()).gather(bet_code * FINISHES + _finish_code()).to_physical()


def facts_expr() -> dict[str, pl.Expr]:
    """The settling facts from the replay columns and the card codes of a replayed frame."""
    def rank(column: str) -> pl.Expr:
        return pl.col(column) // 8

    return {
        "player_cards": 2 + pl.col("player_drew").cast(pl.Int8),
        "banker_cards": 2 + pl.col("banker_drew").cast(pl.Int8),
        "player_natural": pl.col("natural") & (pl.col("player_final") >= 8),
        "banker_natural": pl.col("natural") & (pl.col("banker_final") >= 8),
        "player_pair": rank("player_code_1") == rank("player_code_2"),
        "banker_pair": rank("banker_code_1") == rank("banker_code_2"),
        "margin": (pl.col("player_final").cast(pl.Int8) - pl.col("banker_final").cast(pl.Int8)).abs(),
    }


@dataclass(frozen=True)
class Return:
    """What a bet returns per unit staked in one case (stake included), and the rule in words."""

    per_unit: Decimal
    rule: str


def _pay_text(pay: Decimal) -> str:
    return f"{pay.normalize():f}:1"


def _win(pay: Decimal | str, what: str) -> Return:
    if pay == "push":
        return Return(Decimal(1), f"{what}: push, stake returned")
    return Return(1 + pay, f"{what}: pays {_pay_text(pay)}")


LOSE = Return(Decimal(0), "lost")
PUSH = Return(Decimal(1), "push, stake returned")


@cache  # by the profile itself (`profiles.Profile`): the scalar settlement asks once a bet
def returns(profile: Profile) -> dict[tuple[str, str], Return]:
    """Every (bet type, case) the profile offers -> its Return. Bet types it does not offer are absent."""
    table: dict[tuple[str, str], Return] = {}
    pays = profile.pays
    commission = profile.commission
    for side in ("PLAYER", "BANKER"):
        if side in pays:
            table[side, "push"] = PUSH
            table[side, "lose"] = LOSE
    if "PLAYER" in pays:
        table["PLAYER", "win"] = _win(pays["PLAYER"], "Player won")
    if "BANKER" in pays:
        def banker(pay: Decimal | str, what: str) -> Return:
            if pay == "push" or not commission:
                return _win(pay, what)
            return Return(1 + pay * (1 - commission),
                          f"{what}: pays {_pay_text(pay)} less {(commission * 100).normalize():f}% commission")

        table["BANKER", "win"] = banker(pays["BANKER"], "Banker won")
        table["BANKER", "win with 6"] = banker(profile.banker_win.get("with_6", pays["BANKER"]),
                                               "Banker won with 6")
        table["BANKER", "win with three-card 7"] = banker(
            profile.banker_win.get("three_card_7", pays["BANKER"]), "Banker won with a three-card 7")
    side_bets = {"TIE": "Tie", "PLAYER_PAIR": "Player pair", "BANKER_PAIR": "Banker pair",
                 "DRAGON_7": "Dragon 7 (Banker won with a three-card 7)",
                 "PANDA_8": "Panda 8 (Player won with a three-card 8)",
                 "SUPER_6": "Super 6 (Banker won with 6)"}
    for bet, what in side_bets.items():
        if bet in pays:
            table[bet, "win"] = _win(pays[bet], what)
            table[bet, "lose"] = LOSE
    if profile.dragon_bonus is not None:
        bonus = profile.dragon_bonus
        for side in ("PLAYER", "BANKER"):
            bet = f"{side}_DRAGON_BONUS"
            table[bet, "natural win"] = _win(bonus["natural_win"], f"{side.capitalize()} won with a natural")
            table[bet, "natural tie"] = _win(bonus["natural_tie"], "Tie of naturals")
            for margin in BONUS_MARGINS:
                table[bet, f"win by {margin}"] = _win(bonus[f"win_by_{margin}"],
                                                      f"{side.capitalize()} won by {margin}")
            table[bet, "lose"] = LOSE
    return table


def offered(profile: Profile) -> list[str]:
    return sorted({bet for bet, _ in returns(profile)}, key=BET_TYPES.index)


_ROUNDING = {"player": ROUND_CEILING, "house": ROUND_FLOOR, "nearest": ROUND_HALF_UP}


#: Digits for any stake (16: 12 and 4 decimals) times any return a pay table holds (19: an Int64 of
#: 1/10^8), and their quotient by a rounding unit: the default context's 28 rounded larger products.
_EXACT = Context(prec=60)


def expected_paid(profile: Profile, stake: Decimal, per_unit: Decimal) -> Decimal:
    """Scalar: the exact amount a stake should return, rounded as the profile says when fractional."""
    amount = _EXACT.multiply(stake, per_unit)
    if profile.rounding_mode == "exact":
        return amount
    unit = profile.rounding_unit
    units = _EXACT.divide(amount, unit).to_integral_value(rounding=_ROUNDING[profile.rounding_mode])
    return _EXACT.multiply(units, unit)


@dataclass(frozen=True)
class Settlement:
    case: str
    rule: str
    expected: Decimal


def settle(profile: Profile, bet_type: str, coup_facts: dict, stake: Decimal) -> Settlement | None:
    """Scalar: how one bet should be settled; None when the profile does not offer the bet type."""
    if bet_type not in CASES:
        return None
    case = case_of(bet_type, coup_facts)
    paid = returns(profile).get((bet_type, case))
    if paid is None:
        return None
    return Settlement(case, paid.rule, expected_paid(profile, stake, paid.per_unit))
