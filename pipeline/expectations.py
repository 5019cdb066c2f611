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

import polars as pl

from pipeline import ingest
from pipeline.contract import EXAMPLES, Subject, Window, as_read, column_of, expectations_of, is_unique, view
from pipeline.shown import kept_short

#: Each expectation type the suites use about single values: kwargs -> the rows it does not expect
#: (null where a value is missing, which GX leaves out of a column map expectation's count).
Unexpected = Callable[[pl.Expr, dict], pl.Expr]


def _between(value: pl.Expr, kwargs: dict) -> pl.Expr:
    low, high = kwargs.get("min_value"), kwargs.get("max_value")
    below = pl.lit(False) if low is None else (value <= low if kwargs.get("strict_min") else value < low)
    above = pl.lit(False) if high is None else (value >= high if kwargs.get("strict_max") else value > high)
    return below | above


SINGLE: dict[str, Unexpected] = {
    "expect_column_values_to_be_in_set": lambda value, kwargs: ~value.cast(pl.String).is_in(kwargs["value_set"]),
    "expect_column_values_to_be_between": _between,
    "expect_column_values_to_not_match_regex": lambda value, kwargs: value.cast(pl.String).str.contains(
        kwargs["regex"]),
}


def _with_parameters(kwargs: dict, window: Window) -> dict:
    """`kwargs` with each `$PARAMETER` replaced by the run's window (epoch seconds, as the view has times)."""
    given = {"window_start": window.start and int(window.start.timestamp()),
             "window_end": window.end and int(window.end.timestamp())}
    return {key: given[value["$PARAMETER"]] if isinstance(value, dict) and "$PARAMETER" in value else value
            for key, value in kwargs.items()}


def evaluate(subjects: list[Subject], window: Window = Window()) -> dict[str, dict]:
    """Each subject's suite evaluated on its rows; returns what `contract.validate` returns, by contract name."""
    results = {}
    for subject in subjects:
        name = subject.contract_name
        views = [view(piece, subject.present, name, whole_ids=True) for piece in subject.pieces]
        present = set(views[0].collect_schema().names())
        runnable, skipped = expectations_of(name, present, window)
        outcomes = {}
        single = [(index, e) for index, e in runnable
                  if e["type"] in SINGLE or e["type"] == "expect_column_values_to_not_be_null"]
        if single:
            outcomes |= _single(subject, views, single, window)
        for index, expectation in runnable:
            if is_unique(expectation):
                outcomes[index] = _unique(subject, column_of(expectation))
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


def _single(subject: Subject, views: list[pl.LazyFrame], single: list[tuple[int, dict]], window: Window
            ) -> dict[int, dict]:
    """The expectations about single values, in one query a piece: each one's count of unexpected
    rows and its first unexpected values."""
    flags = {}
    for index, expectation in single:
        value = pl.col(column_of(expectation))
        if expectation["type"] == "expect_column_values_to_not_be_null":
            flags[index] = value.is_null()
        else:
            flags[index] = value.is_not_null() & SINGLE[expectation["type"]](
                value, _with_parameters(expectation["kwargs"], window))
    columns = {index: column_of(expectation) for index, expectation in single}
    counts = {index: 0 for index in flags}
    examples: dict[int, list] = {index: [] for index in flags}
    rows = 0
    for piece in views:
        counted = ingest.collect(subject.label, [piece.select(
            pl.len().alias("rows"),
            *(flag.sum().alias(f"count {index}") for index, flag in flags.items()),
            *(pl.col(columns[index]).cast(pl.String).filter(flag).head(EXAMPLES).implode().alias(f"first {index}")
              for index, flag in flags.items()))])[0].row(0, named=True)
        rows += counted["rows"]
        for index in flags:
            counts[index] += counted[f"count {index}"]
            examples[index] = (examples[index] + counted[f"first {index}"])[:EXAMPLES]
    kinds = ingest.contract(subject.contract_name)["meta"]["columns"]
    return {index: {"success": counts[index] == 0, "unexpected_count": counts[index], "element_count": rows,
                    "examples": kept_short(as_read(examples[index], kinds[columns[index]]["kind"]))}
            for index in flags}


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
