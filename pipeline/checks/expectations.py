"""The contract's expectations evaluated by polars, without Great Expectations.

The suites in `schemas/` stay the one statement of the contract; this module reads each expectation
type they use as a polars expression over the contract's view of a log (`contract.view`, ids kept
whole), piece by piece, and gives each expectation the counts Great Expectations gives it
(`success`, `unexpected_count`, `element_count`, the first unexpected values). A test holds the two
equal on generated logs, bad ones included. Great Expectations itself is imported only where its
own machinery is asked for: Data Docs and `validate`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache

import polars as pl

from ..inputs import ingest
from ..rules import cards
from ..inputs.ids import outside_ascii
from .contract import (CARD_KINDS, EXAMPLES, SET_KINDS, Subject, Window, amount_value, as_read, column_of, expectations_of,
                       is_unique, set_value, view)
from ..outputs.shown import kept_short

#: Each expectation type the suites use about single values: kwargs -> the rows it does not expect
#: (null where a value is missing, which GX leaves out of a column map expectation's count).
Unexpected = Callable[[pl.Expr, dict], pl.Expr]
#: The kinds of column judged on their distinct values, and each one's value as the view has it: a log
#: holds few of them (cards, totals, outcomes; stakes and payouts in chips), and each is a function
#: of the text alone.
BY_VALUE: dict[str, Callable[[pl.Expr], pl.Expr]] = {**dict.fromkeys(SET_KINDS, set_value), "amount": amount_value}


def _between(value: pl.Expr, kwargs: dict) -> pl.Expr:
    low, high = kwargs.get("min_value"), kwargs.get("max_value")
    below = pl.lit(False) if low is None else (value <= low if kwargs.get("strict_min") else value < low)
    above = pl.lit(False) if high is None else (value >= high if kwargs.get("strict_max") else value > high)
    return below | above


def _matches(value: pl.Expr, kwargs: dict) -> pl.Expr:
    text = value.cast(pl.String)
    found = text.str.contains(kwargs["regex"])
    if not _outside_ascii_only(kwargs["regex"]):
        return found
    # Such a pattern (the suites' invisible characters in ids) matches no ASCII text: only text outside
    # ASCII is searched, and polars skips the search where no row of a piece has any.
    return pl.when(outside_ascii(text)).then(found).otherwise(False)


def _outside_ascii_only(regex: str) -> bool:
    """Whether `regex` is one class of characters (`[...]`: single characters and ranges, no escapes,
    not negated) none of them ASCII: it matches no text that is all ASCII."""
    members = regex[1:-1]
    return (len(regex) > 2 and regex[0] == "[" and regex[-1] == "]" and members[0] not in "^-"
            and members[-1] != "-" and all(ord(c) > 127 or c == "-" for c in members))


SINGLE: dict[str, Unexpected] = {
    "expect_column_values_to_be_in_set": lambda value, kwargs: ~value.cast(pl.String).is_in(kwargs["value_set"]),
    "expect_column_values_to_be_between": _between,
    "expect_column_values_to_not_match_regex": _matches,
}


def _with_parameters(kwargs: dict, window: Window) -> dict:
    """`kwargs` with each `$PARAMETER` replaced by the run's window (epoch seconds, as the view has times)."""
    given = {"window_start": window.start and int(window.start.timestamp()),
             "window_end": window.end and int(window.end.timestamp())}
    return {key: given[value["$PARAMETER"]] if isinstance(value, dict) and "$PARAMETER" in value else value
            for key, value in kwargs.items()}


@dataclass(frozen=True)
class Counted:
    """What an audit counted of a log's contract on its way, so that the log is not read again for it:
    `singles`, `Singles.count` of each piece of the log (None: not counted); `copies`, for a column
    whose values the suite expects unique, every row whose value may repeat (the rows whose id key
    repeats, `staging.copies_by_key`: each value's rows in one part), with `log_row`, their order in the log."""

    singles: list[dict] | None
    copies: dict[str, list[pl.LazyFrame]]


def evaluate(subjects: list[Subject], window: Window = Window(),
             counted: dict[str, Counted] | None = None) -> dict[str, dict]:
    """Each subject's suite evaluated on its rows; returns what `contract.validate` returns, by contract
    name. `counted`: by contract name, what the audit counted on its way (`Counted`)."""
    results = {}
    for subject in subjects:
        name = subject.contract_name
        present = set(view(subject.pieces[0], subject.present, name).collect_schema().names())
        runnable, skipped = expectations_of(name, present, window, subject.notation)
        outcomes = {}
        single = Singles.of(name, subject.present, window, notation=subject.notation)
        on_the_way = (counted or {}).get(name, Counted(None, {}))
        if single.flags:
            pieces = on_the_way.singles
            if pieces is None:
                pieces = [single.count(ingest.collect(subject.label, [piece])[0]) for piece in subject.pieces]
            outcomes |= single.added_up(pieces)
        for index, expectation in runnable:
            if is_unique(expectation):
                column = column_of(expectation)
                outcomes[index] = (_unique_among(subject, column, on_the_way.copies[column])
                                   if column in on_the_way.copies else _unique(subject, column))
            elif expectation["type"] == "expect_table_columns_to_match_set":
                wanted = set(expectation["kwargs"]["column_set"])
                exact = expectation["kwargs"].get("exact_match", True)
                met = wanted == present if exact else wanted <= set(subject.present)
                outcomes[index] = {"success": met, "unexpected_count": None, "element_count": None, "examples": []}
        report = []
        for index, expectation in enumerate(ingest.contract(name)["expectations"]):
            entry = {"type": expectation["type"], "column": column_of(expectation), "why": expectation["meta"]["why"]}
            entry |= {"skipped": skipped[index]} if index in skipped else outcomes[index]
            report.append(entry)
        results[name] = {"suite": name, "success": all(e.get("success", True) for e in report), "expectations": report}
    return results


@dataclass(frozen=True)
class Singles:
    """A suite's runnable expectations about single values, as flags over the contract's view of a
    log: `count` gives one piece's counts and first unexpected values, `added_up` the whole log's.
    The queries `count` runs are built once here: a log is counted in many pieces."""

    contract_name: str
    present: frozenset[str]
    flags: dict[int, pl.Expr]
    columns: dict[int, str]
    by_row: dict[int, str]  # the flags judged row by row (ids, times): the rest are of BY_VALUE's kinds
    by_value: dict[str, list[int]]  # each column of BY_VALUE's kinds and the flags judged on its distinct values
    as_values: dict[str, pl.Expr]  # each of those columns as the view has it (`BY_VALUE`)
    #: The card columns whose rows with a card read (their code column, named here, not null) no flag
    #: of theirs can find unexpected: only their other rows are counted (`of`, `parsed_cards`).
    parsed: dict[str, str] = field(default_factory=dict)
    #: Of those columns, the ones with a flag on a missing value (not null expected): the others are
    #: counted on their rows that hold a value (`_unread`).
    nulls_flagged: frozenset[str] = frozenset()

    @classmethod
    def of(cls, contract_name: str, present: frozenset[str], window: Window, parsed_cards: bool = False,
           notation: str = "cards") -> Singles:
        """`parsed_cards`: the pieces counted are the audit's, prepared (`engines.run.prepared`) from a
        log in card notation, each card column beside its code (`ingest.code_column`); `notation`, how
        the log writes its cards (`contract.expectations_of`)."""
        shaped = set(view(pl.LazyFrame(schema=dict.fromkeys(present, pl.String)), present, contract_name)
                     .collect_schema().names())
        runnable, _ = expectations_of(contract_name, shaped, window, notation)
        runnable_by = dict(runnable)
        flags, columns = {}, {}
        for index, expectation in runnable:
            value = pl.col(column_of(expectation) or "")
            if expectation["type"] == "expect_column_values_to_not_be_null":
                flags[index] = value.is_null()
            elif expectation["type"] in SINGLE:
                flags[index] = value.is_not_null() & SINGLE[expectation["type"]](
                    value, _with_parameters(expectation["kwargs"], window))
            else:
                continue
            columns[index] = column_of(expectation)
        kinds = {c: spec["kind"] for c, spec in ingest.contract(contract_name)["meta"]["columns"].items()}
        by_value: dict[str, list[int]] = {}
        for i, c in sorted(columns.items(), key=lambda item: item[1]):
            if kinds[c] in BY_VALUE:
                by_value.setdefault(c, []).append(i)
        parsed = {c: ingest.code_column(c) for c in by_value if parsed_cards and kinds[c] in CARD_KINDS
                  and all(_expects_every_card(runnable_by[i]) for i in by_value[c])}
        nulls_flagged = frozenset(c for c, flagged in by_value.items() if any(
            runnable_by[i]["type"] == "expect_column_values_to_not_be_null" for i in flagged))
        return cls(contract_name, present, flags, columns,
                   {i: c for i, c in columns.items() if kinds[c] not in BY_VALUE}, by_value,
                   {c: BY_VALUE[kinds[c]](pl.col(c)).alias(c) for c in by_value}, parsed, nulls_flagged)

    def count(self, rows: pl.DataFrame) -> dict:
        """One row: the rows of `rows` (a piece of the log, as `ingest.Log.frame` or the audit reads
        it), each flag's count and its first unexpected values. A column of few values (cards, totals,
        outcomes, amounts: `BY_VALUE`) is judged on its distinct values with their counts (in a log of
        millions of rounds they are a few hundred), every flag of it in one query; its rows are read
        for examples only when one is unexpected."""
        counted: dict[str, object] = {"rows": rows.height}
        queries = [_unread(rows, self.parsed.get(c), None if c in self.nulls_flagged else c)
                   .select(pl.col(c).value_counts(name="rows")).unnest(c)
                   .with_columns(self.as_values[c])
                   .select(pl.col("rows").filter(self.flags[i]).sum().alias(f"count {i}") for i in flagged)
                   for c, flagged in self.by_value.items()]
        if self.by_row:
            shaped = view(rows.lazy(), frozenset(self.by_row.values()), self.contract_name, whole_ids=True)
            queries.append(shaped.select(
                *(self.flags[i].sum().alias(f"count {i}") for i in self.by_row),
                *(pl.col(c).filter(self.flags[i]).head(EXAMPLES).cast(pl.String).implode().alias(f"first {i}")
                  for i, c in self.by_row.items())))
        for found in pl.collect_all(queries):
            counted |= found.row(0, named=True)
        for column, flagged in self.by_value.items():
            for i in flagged:
                counted[f"first {i}"] = [] if not counted[f"count {i}"] else rows.lazy().select(
                    self.as_values[column]).filter(self.flags[i]).head(EXAMPLES).collect()[column].cast(
                    pl.String).to_list()
        return counted

    def added_up(self, counted: list[dict]) -> dict[int, dict]:
        """Each expectation's result over the pieces `counted` (by `count`, in log order)."""
        rows = sum(piece["rows"] for piece in counted)
        kinds = ingest.contract(self.contract_name)["meta"]["columns"]
        results = {}
        for index, column in self.columns.items():
            unexpected = sum(piece[f"count {index}"] for piece in counted)
            examples = [v for piece in counted for v in piece[f"first {index}"]][:EXAMPLES]
            results[index] = {"success": unexpected == 0, "unexpected_count": unexpected, "element_count": rows,
                              "examples": kept_short(as_read(examples, kinds[column]["kind"]))}
        return results


@cache
def _cards_as_viewed() -> frozenset[str]:
    """What the view (`contract.set_value`) makes of every spelling a card is read from."""
    spellings = pl.DataFrame({"card": sorted(cards.SPELLINGS)})
    return frozenset(spellings.select(set_value(pl.col("card")).cast(pl.String))["card"])


def _expects_every_card(expectation: dict) -> bool:
    """Whether every text read as a card (`cards.SPELLINGS`, in any case) meets `expectation`: a
    card's value is not null, and as the view has it, it is in a set holding every spelling so viewed."""
    kind = expectation["type"]
    return kind == "expect_column_values_to_not_be_null" or (
        kind == "expect_column_values_to_be_in_set" and _cards_as_viewed() <= set(expectation["kwargs"]["value_set"]))


def _unread(rows: pl.DataFrame, code: str | None, held: str | None) -> pl.LazyFrame:
    """The rows a column is counted on: all, or, for a card column whose read cards meet every
    expectation on it (`Singles.parsed`), those without a card read (`code` null): a few, where
    counting every row's text cost more (docs/performance.md); and of those, only the rows where the
    column `held` (when named: no flag of it counts a missing value) holds a value, which leaves out a
    third card not dealt."""
    rows = rows.lazy() if code is None else rows.lazy().filter(pl.col(code).is_null())
    return rows if held is None else rows.filter(pl.col(held).is_not_null())


def _unique_among(subject: Subject, column: str, copies: list[pl.LazyFrame]) -> dict:
    """A uniqueness expectation judged among `copies` (see `Counted`), a part at a time: the rows whose
    value is on another row too; the first of them, in log order, as examples."""
    unexpected, first = 0, []
    for part in copies:
        repeated = ingest.collect(subject.label, [part.filter(pl.len().over(column) > 1).select(column, "log_row")])[0]
        unexpected += repeated.height
        first.append(repeated.sort("log_row").head(EXAMPLES))
    examples = pl.concat(first).sort("log_row").head(EXAMPLES)[column].to_list() if first else []
    return {"success": unexpected == 0, "unexpected_count": unexpected, "element_count": subject.rows,
            "examples": kept_short(examples)}


def _unique(subject: Subject, column: str) -> dict:
    """A uniqueness expectation over the whole log: the rows whose value is on more than one row (nulls
    left out), found by a 64-bit hash of each value and confirmed by an exact count of the few rows
    whose hash repeats; the first of them as examples, in log order."""
    value = pl.col(column)
    keyed = [piece.select(value, key=value.hash(seed=0)).filter(value.is_not_null())
             .with_columns(at=pl.lit(k, pl.UInt32)) for k, piece in enumerate(subject.pieces)]
    counted = ingest.collect(subject.label, [pl.concat(keyed).group_by("key").len().filter(pl.col("len") > 1)
                                             .select("key")])[0]
    rows = ingest.collect(subject.label, [pl.concat([piece.select(pl.len()) for piece in subject.pieces])
                                          .select(pl.col("len").sum())])[0].item()
    if not counted.height:
        return {"success": True, "unexpected_count": 0, "element_count": rows, "examples": []}
    candidates = ingest.collect(subject.label, [pl.concat(keyed).filter(pl.col("key").is_in(counted["key"].implode()))
                                                .with_row_index("order")])[0]
    repeated = candidates.filter(pl.len().over(column) > 1).sort("at", "order")
    return {"success": repeated.height == 0, "unexpected_count": repeated.height, "element_count": rows,
            "examples": kept_short(repeated[column].head(EXAMPLES).to_list())}
