"""Settlement: every bet's payout checked against its round's rules profile, in exact money.

Amounts are read as decimal text into integers of 1/10,000 of the currency (`_e4`); returns per unit
staked are integers of 1/10^8 (`_e8`); an expected payout is their product in 1/10^12 (`_e12`, Int128),
so commission and fractional pays are exact and no float is ever involved. Bets that cannot be settled
are quarantined with a reason; the rest are settled and flagged as SETTLEMENT when paid differently.
"""

from __future__ import annotations

import re
from decimal import Decimal
from functools import cache

import polars as pl

from ..rules import bets, cards
from ..rules.bets import AMOUNT
from ..inputs import profile_files
from ..rules.lookup import position
from .findings import FINDINGS_SCHEMA
from ..inputs.ids import copies_detail, same_id
from ..inputs.ingest import reasons_text
from ..errors import InputError

CODES = ("SETTLEMENT", "DUPLICATE_BET")  # the checks of the bets, run with --bets
MEANING = "A bet was paid other than its round's rules profile says, to the smallest unit."
DUPLICATE_MEANING = ("The bet_id appears on more than one row of the bet log: a bet recorded twice may have "
                     "been paid twice. Every copy is settled as a bet of its own and flagged.")
E8, E12 = 10**8, 10**12
ROUND_FACTS = ("profile", "table_id", "shoe_id", "hand_no", "dealt_at", *bets.FACTS)
BET_COLUMNS = ("source_file", "source_row", "round_id", "bet_id", "bet_type", "stake", "paid", "seat", "player_id",
               "currency", "status")


def amount_e4(raw: pl.Expr, signed: bool = False) -> pl.Expr:
    """A decimal amount as an integer of 1/10,000; null when it is not digits with up to 4 decimals
    (after a minus sign, when `signed`: a negative amount, as the contract's view reads it).

    The text, once it matches AMOUNT, is read as a decimal of scale 4, whose physical value is that
    integer (faster than taking the digits apart with regex groups).
    """
    pattern = "^-?" + AMOUNT[1:] if signed else AMOUNT
    return pl.when(raw.str.contains(pattern)).then(raw.cast(pl.Decimal(16, 4), strict=False).to_physical()
                                                    .cast(pl.Int64))


def parse_amount(text: str | None) -> Decimal | None:
    """Scalar twin of `amount_e4`: the amount, or None when it is not digits with up to 4 decimals.
    `text` is trimmed as the audit trims it (Python's strip takes more characters than polars')."""
    return Decimal(text) if text is not None and re.fullmatch(AMOUNT, text) else None


def money_text(e12: pl.Expr) -> pl.Expr:
    """An amount in 1/10^12 as decimal text with at least two decimals ("15.00", "9.5095")."""
    fraction = (e12 % E12).cast(pl.String).str.zfill(12).str.strip_chars_end("0").str.pad_end(2, "0")
    return pl.format("{}.{}", (e12 // E12).cast(pl.String), fraction)


def _scaled(value: Decimal, scale: int, what: str) -> int:
    scaled = value * scale
    if scaled != scaled.to_integral_value():
        raise InputError(f"{what} = {value} is finer than the audit's exact money scale")
    return int(scaled)


PAY_KEY = ("profile", "bet_type", "case")  # what a bet's return is looked up by in `pay_table`


def pay_table(names: list[str]) -> pl.DataFrame:
    """Every (profile, bet type, case) the named profiles offer, with its return, its rule as a finding
    states it (the profile named) and its rounding."""
    rows = []
    for name in names:
        profile = profile_files.load(name)
        unit = _scaled(profile.rounding_unit, E12, f"{name}: rounding.unit")
        for (bet_type, case), paid in bets.returns(profile).items():
            rows.append({
                "profile": name, "bet_type": bet_type, "case": case,
                "per_unit_e8": _scaled(paid.per_unit, E8, f"{name}: return of {bet_type} {case}"),
                "rule": f"{paid.rule} ({name} profile)", "rounding_mode": profile.rounding_mode,
                "rounding_unit_e12": unit,
            })
    schema = {"profile": pl.String, "bet_type": pl.String, "case": pl.String, "per_unit_e8": pl.Int64,
              "rule": pl.String, "rounding_mode": pl.String, "rounding_unit_e12": pl.Int128}
    return pl.DataFrame(rows, schema=schema, orient="row")


def with_pay(bets_coded: pl.LazyFrame, names: list[str]) -> pl.LazyFrame:
    """Bets with a `bet_code` (`bets.bet_type_code`) and a `case_code` (`bets.case_code`) given the
    `pay_table` columns of their (profile, bet type, case); null where the profiles offer none.

    Looked up by number: the profile's position among `names`, the bet type's and the case's make one
    index into a table of every combination, holding the row of `pay_table` (null where there is none).
    Made text and looked up as one, the three took longer (docs/performance.md)."""
    table = pay_table(names)
    types, cases = len(bets.BET_TYPES), len(bets.CASE_NAMES)
    at = {(names.index(profile), bets.BET_TYPES.index(bet_type), bets.CASE_NAMES.index(case)): row
          for row, (profile, bet_type, case) in enumerate(table.select(PAY_KEY).iter_rows())}
    rows = pl.Series([at.get((p, t, c)) for p in range(len(names)) for t in range(types) for c in range(cases)],
                     dtype=pl.UInt32)
    profile = position(pl.col("profile"), names).cast(pl.Int64)
    index = (profile * types + pl.col("bet_code")) * cases + pl.col("case_code")
    return bets_coded.with_columns(pay_row=pl.lit(rows).gather(index)).with_columns(
        pl.lit(table[c]).gather(pl.col("pay_row")).alias(c) for c in table.columns if c not in PAY_KEY
    ).drop("pay_row")


def round_facts(replayed: pl.LazyFrame) -> pl.LazyFrame:
    """The settling facts of every replayed round, one row each (`copies` 1; see `once_per_round`),
    with its id's key (`ids.id_key`). Without a group-by over every round_id, this streams."""
    return replayed.with_columns(**bets.facts_expr()).select("round_id", "id_key", *ROUND_FACTS,
                                                              copies=pl.lit(1, pl.UInt32))


def once_per_round(facts: pl.LazyFrame) -> pl.LazyFrame:
    """`round_facts` with each round_id once: a round_id on several rows keeps only its `copies`, since
    a bet on it is not settled. Every row of a round_id must be among `facts` (a part of the round_ids,
    by hash): counted over the whole log, the duplicated ids of a log exported twice were held through
    the settlement. The rows are counted by their id's key, and again by the id itself only where the
    key repeats (ids alike but for invisible characters share a key): counted by the text of every id,
    they took longer (docs/performance.md)."""
    by_key = facts.with_columns(copies=pl.len().over("id_key").cast(pl.UInt32))
    repeated = by_key.filter(pl.col("copies") > 1).with_columns(copies=pl.len().over("round_id").cast(pl.UInt32))
    several = repeated.filter(pl.col("copies") > 1).group_by("round_id").agg(pl.col("copies").first())
    return pl.concat([by_key.filter(pl.col("copies") == 1), repeated.filter(pl.col("copies") == 1), several],
                     how="diagonal").drop("id_key")


def _amount_reason(column: str, positive: bool) -> pl.Expr:
    raw, value = pl.col(column), pl.col(f"{column}_e4")
    return (
        pl.when(raw.is_null()).then(pl.lit(f"{column} is empty"))
        .when(raw.str.starts_with("-")).then(pl.format("{} '{}' is negative", pl.lit(column), raw))
        .when(value.is_null())
        .then(pl.format("{} '{}' is not an amount (digits, up to 4 decimals)", pl.lit(column), raw))
        .when(pl.lit(positive) & (value == 0)).then(pl.format("{} '{}' is not more than 0", pl.lit(column), raw))
    )


def rounded(e12: pl.Expr) -> pl.Expr:
    """An expected payout in 1/10^12 rounded as its bet's profile says (batch twin of `bets.expected_paid`)."""
    unit, mode = pl.col("rounding_unit_e12"), pl.col("rounding_mode")
    return (
        pl.when(mode == "house").then(e12 // unit * unit)
        .when(mode == "player").then((e12 + unit - 1) // unit * unit)  # amounts are never negative
        .when(mode == "nearest").then((2 * e12 + unit) // (2 * unit) * unit)
        .otherwise(e12)
    )


#: What the outputs (findings, quarantine, counts) need of a settled bet. Its `rule` is its pay
#: table's (`pay_table`); a void bet's is written only where it is found (`bet_findings`).
SETTLED = (*BET_COLUMNS, "table_id", "shoe_id", "hand_no", "dealt_at", "rule", "profile", "reject",
           "expected_e12", "paid_e12", "void", "unmatched")


def settle(bet_rows: pl.LazyFrame, rounds: pl.LazyFrame, quarantined_rounds: pl.Series,
           names: list[str], ranked: bool = True) -> pl.LazyFrame:
    """Every bet with its settlement (`expected_e12`, `paid_e12`, `rule`) or its `reject` reason, as
    the columns SETTLED, in no particular order (callers sort what they publish). `rounds`: the facts
    of every round a bet names, once per round (`once_per_round`, or `round_facts` of rounds whose ids
    are known to be on one row each); `quarantined_rounds`: the round_ids of the quarantined rows among
    them. Not `ranked` (a log of card points), a bet decided by the cards' ranks is not settled: its
    rank would be a guess."""
    return settle_beside(bet_rows.join(rounds, on="round_id", how="left"), quarantined_rounds, names, ranked)


def _row_reasons() -> list[pl.Expr]:
    """Why a bet cannot be settled whatever its round: its own fields (of `settle_beside`'s columns)."""
    return [
        pl.col("malformed"),
        pl.when(pl.col("bet_id").is_null()).then(pl.lit("bet_id is empty")),
        pl.when(pl.col("round_id").is_null()).then(pl.lit("round_id is empty")),
        pl.when(pl.col("bet_type").is_null()).then(pl.lit("bet_type is empty")),
        _amount_reason("stake", positive=True),
        _amount_reason("paid", positive=False),
        pl.when(pl.col("still_open")).then(pl.format("bet status '{}' is not settled yet", pl.col("status"))),
    ]


def row_reason(bet: dict) -> str | None:
    """The audit's reason for quarantining a bet (a row of the bet log, as `ingest.rows_for_round` gives
    it) for its own fields, or None: for `explain`, in the audit's words."""
    row = pl.DataFrame([{c: bet.get(c) for c in ("malformed", "bet_id", "round_id", "bet_type", "stake", "paid",
                                                  "status")}],
                       schema=dict.fromkeys(("malformed", "bet_id", "round_id", "bet_type", "stake", "paid", "status"),
                                            pl.String))
    status = pl.col("status").str.to_uppercase()
    return row.with_columns(stake_e4=amount_e4(pl.col("stake")), paid_e4=amount_e4(pl.col("paid")),
                            still_open=pl.any_horizontal(status == v for v in bets.OPEN).fill_null(False)
                            ).select(reasons_text(_row_reasons())).item()


def settle_beside(bet_rows: pl.LazyFrame, quarantined_rounds: pl.Series, names: list[str], ranked: bool = True
                  ) -> pl.LazyFrame:
    """`settle` of bets already beside the facts of their rounds (`round_facts` joined, null where
    their round is not among them)."""
    # Upper-cased only where the text is not a bet type as written (most logs write them so): polars
    # works no row of a branch that no row takes.
    as_written = pl.col("bet_type")
    bet_type = (pl.when(bets.bet_type_code(as_written).is_null()).then(as_written.str.to_uppercase())
                .otherwise(as_written))
    status = pl.col("status").str.to_uppercase()
    # Looked up in the quarantined ids: a join of the bets not among the facts, put back beside the
    # others, copied every bet (docs/performance.md).
    joined = bet_rows.with_columns(bet_type=bet_type, stake_e4=amount_e4(pl.col("stake")),
                                   paid_e4=amount_e4(pl.col("paid")),
                                   void=pl.any_horizontal(status == v for v in bets.VOID).fill_null(False),
                                   still_open=pl.any_horizontal(status == v for v in bets.OPEN).fill_null(False),
                                   round_rejected=pl.col("round_id").is_in(quarantined_rounds.implode()))
    coded = joined.with_columns(bet_code=bets.bet_type_code(pl.col("bet_type")))
    joined = with_pay(coded.with_columns(case_code=bets.case_code(pl.col("bet_code"))), names)
    round_id = pl.col("round_id")
    reasons = _row_reasons()
    by_the_cards = [  # a void bet is settled without its round
        pl.when(round_id.is_not_null() & pl.col("copies").is_null()).then(
            pl.when(pl.col("round_rejected")).then(pl.format("round '{}' is quarantined in the round log", round_id))
            .otherwise(pl.format("round '{}' is not in the round log", round_id))
        ),
        pl.when(pl.col("copies") > 1).then(
            pl.format("round '{}' is on {} rows of the round log", round_id, pl.col("copies"))
        ),
        pl.when(pl.lit(not ranked) & pl.col("bet_type").is_in(pl.Series(sorted(bets.RANKED)).implode()))
        .then(pl.format("bet type '{}' is decided by the cards' ranks: {}", pl.col("bet_type"),
                        pl.lit(cards.POINTS_ONLY))),
        pl.when(pl.col("copies").is_not_null() & pl.col("bet_type").is_not_null() & pl.col("rule").is_null())
        .then(pl.format("bet type '{}' is not offered under profile {}", pl.col("bet_type"), pl.col("profile"))),
    ]
    void = pl.col("void")
    return joined.with_columns(
        reject=reasons_text([*reasons, *(pl.when(~void).then(reason) for reason in by_the_cards)]),
        expected_e12=pl.when(void).then(pl.col("stake_e4").cast(pl.Int128) * E8)
        .otherwise(rounded(pl.col("stake_e4").cast(pl.Int128) * pl.col("per_unit_e8"))),
        paid_e12=pl.col("paid_e4").cast(pl.Int128) * E8,
        # Its round is nowhere in the round log: most bets so is a bet log of another night.
        unmatched=round_id.is_not_null() & pl.col("copies").is_null() & ~pl.col("round_rejected").fill_null(False),
    ).select(SETTLED)


#: A settled bet paid other than its profile says: a SETTLEMENT finding.
PAID_WRONG = pl.col("reject").is_null() & (pl.col("expected_e12") != pl.col("paid_e12"))


def bet_findings(settled: pl.LazyFrame) -> pl.LazyFrame:
    """SETTLEMENT findings: settled bets paid other than their profile says, each with its rule (a
    void bet's made here, for the few found)."""
    void_rule = pl.format("the bet is {}: its stake is returned whatever the cards", pl.col("status"))
    wrong = settled.filter(PAID_WRONG).with_columns(rule=pl.when(pl.col("void")).then(void_rule).otherwise("rule"))
    return wrong.select(
        "source_file", "source_row", pl.lit("bets").alias("source"), "round_id", "table_id", "shoe_id", "hand_no", "dealt_at", "bet_id",
        check=pl.lit("SETTLEMENT"),
        expected=money_text(pl.col("expected_e12")),
        recorded=pl.col("paid"),
        detail=pl.format(
            "{} {} bet: {}; stake {}, expected {}, paid {}.",
            pl.col("bet_id"), pl.col("bet_type"), pl.col("rule"),
            pl.col("stake"), money_text(pl.col("expected_e12")), pl.col("paid"),
        ),
    )


def duplicate_bets(bet_rows: pl.LazyFrame) -> pl.LazyFrame:
    """DUPLICATE_BET findings: every row of a bet_id that is on more than one of `bet_rows`, which hold
    every row of each bet_id among them (the whole bet log, or a part of its bet_ids by hash). Every
    row with a bet_id counts, a quarantined one too, as the contract's uniqueness expectation counts."""
    copies = pl.col("copies")
    return (bet_rows.filter(pl.col("bet_id").is_not_null()).with_columns(copies=pl.len().over(same_id(pl.col("bet_id"))))
            .filter(copies > 1).select(
                "source_file", "source_row", pl.lit("bets").alias("source"), "round_id",
                *(pl.lit(None, pl.String).alias(c) for c in ("table_id", "shoe_id", "hand_no", "dealt_at")),
                "bet_id",
                check=pl.lit("DUPLICATE_BET"),
                expected=pl.lit("1 row"),
                recorded=pl.format("{} rows", copies),
                detail=copies_detail("bet_id", pl.col("bet_id"), copies, "bet log"),
            ).cast(FINDINGS_SCHEMA))


def bet_quarantine(settled: pl.LazyFrame) -> pl.LazyFrame:
    """The bets that could not be settled, as bets_quarantine.parquet holds them: the log's columns and
    the reason."""
    return settled.filter(pl.col("reject").is_not_null()).select(*BET_COLUMNS, reason=pl.col("reject"))


def bet_counts(settled: pl.LazyFrame) -> pl.LazyFrame:
    """Per file and currency: bets read, quarantined and wrongly paid, and the money over- and underpaid
    (summed within a currency only: euros and pounds do not add up). They add up over pieces (see
    `bet_totals`). A currency is its code in capitals; null when the log does not record it."""
    rejected, wrong = pl.col("reject").is_not_null(), PAID_WRONG
    return settled.group_by("source_file", pl.col("currency").str.to_uppercase()).agg(
        bets_read=pl.len().cast(pl.Int64),
        bets_quarantined=rejected.sum().cast(pl.Int64),
        bets_flagged=wrong.sum().cast(pl.Int64),
        bets_without_round=pl.col("unmatched").sum().cast(pl.Int64),
        overpaid_e12=pl.when(wrong).then(pl.col("paid_e12") - pl.col("expected_e12")).clip(lower_bound=0).sum(),
        underpaid_e12=pl.when(wrong).then(pl.col("expected_e12") - pl.col("paid_e12")).clip(lower_bound=0).sum(),
    )


def outputs(settled: pl.DataFrame) -> dict[str, pl.LazyFrame]:
    """What an audit keeps of some settled bets: per file counts (`bet_counts`), SETTLEMENT findings and
    the bets that could not be settled, each in no particular order. Both engines take them from one
    part (or batch) of the bets at a time, so the settled bets are never written out whole.

    The few bets flagged or quarantined are rechunked before their texts are written: `pl.format`
    panicked on a join's output whose columns were chunked differently (pola-rs/polars#25339)."""
    kept = settled.filter(pl.col("reject").is_not_null() | PAID_WRONG)
    kept = kept.rechunk().lazy()
    return {"counts": bet_counts(settled.lazy()), "findings": bet_findings(kept).cast(FINDINGS_SCHEMA),
            "quarantine": bet_quarantine(kept)}


def bet_totals(counts: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """What the summary counts of the bets, from `bet_counts` (of one query, or added up over many):
    rows per file, the counts, and the money over- and underpaid per currency."""
    money = ["overpaid_e12", "underpaid_e12"]
    per_file = counts.group_by("source_file").agg(rows=pl.col("bets_read").sum())
    return {"bets_per_file": per_file,
            "bets": counts.select(pl.col("bets_read", "bets_quarantined", "bets_flagged", "bets_without_round").sum()),
            "money": counts.group_by("currency").agg(pl.col(money).sum()).sort("currency", nulls_last=True)}


def money_summary(money: pl.DataFrame) -> dict:
    """The summary's money: `money`, what was over- and underpaid per currency; and `overpaid` and
    `underpaid` in total when the bets are in one currency (or record none), null when in several."""
    by_currency = [{"currency": row["currency"], "overpaid": e12_text(row["overpaid_e12"] or 0),
                    "underpaid": e12_text(row["underpaid_e12"] or 0)} for row in money.iter_rows(named=True)]
    total = by_currency[0] if len(by_currency) == 1 else {"overpaid": None, "underpaid": None}
    return {"overpaid": total["overpaid"], "underpaid": total["underpaid"], "money": by_currency}


def grouped(amount: str, currency: str | None = None) -> str:
    """An amount's text (`money_str`) as a person reads it: its thousands separated and written to its
    currency's decimals (`places`): "3,061.78", "1,500" yen, "12.500" dinars. Never rounded: places
    beyond them, which a stake may hold, are kept."""
    whole, _, fraction = amount.partition(".")
    if not whole.isdigit():
        return amount
    fraction = fraction.rstrip("0").ljust(places(currency), "0")
    return f"{int(whole):,}" + (f".{fraction}" if fraction else "")


@cache
def places(currency: str | None) -> int:
    """The decimals a currency is written to, by its ISO 4217 code (CLDR's, through babel: JPY 0, BHD 3);
    2 where the log names none, or a code CLDR does not know."""
    if not currency:
        return 2
    from babel.numbers import get_currency_precision  # only when a log names its currency

    return get_currency_precision(currency.upper())


def in_currencies(money: list[dict], key: str) -> str:
    """One of the summary's amounts (`overpaid` or `underpaid`) as a person reads it (`grouped`):
    "81.00", "3,061.78 EUR", or "12.00 EUR, 1,500 JPY". summary.json keeps the plain text."""
    return ", ".join(f"{grouped(entry[key], entry['currency'])} {entry['currency'] or ''}".strip()
                     for entry in money) or e12_text(0)


def money_str(amount: Decimal) -> str:
    """Scalar twin of `money_text`: at least two decimals, no trailing zeros beyond them. Taken apart
    as text, which is exact: `normalize` and `quantize` round to the context's 28 digits, and wrote a
    total of 10^16 and 10^-12 as 10000000000000000.00."""
    whole, _, fraction = f"{amount:f}".partition(".")
    return f"{whole}.{fraction.rstrip('0').ljust(2, '0')}"


def e12_text(value: int) -> str:
    return money_str(Decimal(f"{value}E-12"))  # made from text: exact, where scaleb rounds as `money_str` says
