"""The input contract, run by Great Expectations: the suites in `schemas/` against a log.

GX has no polars engine, so polars hands it a view of the log made for cheap checking: only the
columns the suite reads, text values that belong to a small set upper-cased and dictionary-encoded
(pandas categoricals: GX's set checks and its batch hashing then touch a few distinct values, not
every row), amounts as integers of 1/10,000 and `dealt_at` as UTC epoch seconds (GX compares numbers
vectorized, but maps a Python function over every timestamp). Row-level findings and
quarantine stay with polars; GX gives the declared contract, a summary per expectation, and Data Docs.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import polars as pl

from pipeline import ingest
from pipeline.preload import preload as preloading
from pipeline.settlement import amount_e4

#: Column kinds (contract meta) whose values form a small set: checked in upper case, dictionary-encoded.
SET_KINDS = {"card", "third_card", "total", "outcome", "bet_type", "profile", "text"}
EXAMPLES = 3


@dataclass(frozen=True)
class Window:
    """The run's window: rounds must have been dealt inside it (either end may be open)."""

    start: datetime | None = None
    end: datetime | None = None


def preload() -> threading.Thread:
    """Import Great Expectations in the background (about 3 s of Python) while polars audits."""
    _no_analytics()
    return preloading("great_expectations")


def _no_analytics() -> None:
    """An unattended job sends nothing home: set before Great Expectations is imported."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")


def _import_gx() -> None:
    _no_analytics()
    import great_expectations  # noqa: F401


def _column_of(expectation: dict) -> str | None:
    return expectation["kwargs"].get("column")


def view(frame: pl.LazyFrame, present: frozenset[str], contract_name: str) -> pl.LazyFrame:
    """The columns of a log's frame (`ingest.Log.frame`, or the staged rounds, which carry the same
    text) that the contract's suite reads, shaped for GX (see module docstring). `present`: the
    columns the log really has."""
    kinds = {c: spec["kind"] for c, spec in ingest.contract(contract_name)["meta"]["columns"].items()}
    wanted = [c for c in ingest.columns(contract_name) if c in present and (
        c in ingest.required(contract_name)
        or any(_column_of(e) == c for e in ingest.contract(contract_name)["expectations"]))]
    shaped = []
    for c in wanted:
        column = pl.col(c)
        if kinds[c] in SET_KINDS:
            column = column.str.to_uppercase().cast(pl.Categorical)
        elif kinds[c] == "id":
            column = column.cast(pl.Categorical)
        elif kinds[c] == "amount":
            column = amount_e4(column)
        elif kinds[c] == "timestamp":
            # An unreadable time is -1 (before 1970), so that "readable" is a range check too.
            column = pl.when(column.is_not_null() & ingest.timestamp(column).is_null()).then(-1).otherwise(
                ingest.timestamp(column).dt.epoch("s"))
        shaped.append(column.alias(c))
    return frame.select(shaped)


def _expectations(contract_name: str, present: set[str], window: Window) -> tuple[list, dict[int, str]]:
    """The suite's expectations that can run on this log, and why each of the others is skipped."""
    runnable, skipped = [], {}
    for index, expectation in enumerate(ingest.contract(contract_name)["expectations"]):
        column = _column_of(expectation)
        parameters = [v["$PARAMETER"] for v in expectation["kwargs"].values() if isinstance(v, dict)]
        if column is not None and column not in present:
            skipped[index] = f"skipped: the log has no {column} column"
        elif parameters and not (window.start or window.end):
            skipped[index] = "skipped: no window given (--window-start/--window-end)"
        else:
            runnable.append((index, expectation))
    return runnable, skipped


def validate(data: pl.DataFrame, contract_name: str, window: Window = Window(),
             docs_dir: Path | None = None) -> dict:
    """Run the contract's suite on a `view`; write Data Docs to `docs_dir` when given.

    Returns {"suite", "success", "expectations": [{type, column, why, success|skipped,
    unexpected_count, element_count, examples}]} in the suite's order.
    """
    _import_gx()
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    runnable, skipped = _expectations(contract_name, set(data.columns), window)
    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    batch = (context.data_sources.add_pandas("logs").add_dataframe_asset(contract_name)
             .add_batch_definition_whole_dataframe("whole log"))
    suite = context.suites.add(gx.ExpectationSuite(
        name=contract_name,
        expectations=[gx.expectations.registry.get_expectation_impl(e["type"])(**e["kwargs"], meta=e["meta"])
                      for _, e in runnable],
    ))
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name=contract_name, data=batch, suite=suite))
    actions = []
    if docs_dir is not None:
        context.add_data_docs_site("audit", {
            "class_name": "SiteBuilder",
            "store_backend": {"class_name": "TupleFilesystemStoreBackend",
                              "base_directory": str(Path(docs_dir).resolve())},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        })
        actions.append(gx.checkpoint.UpdateDataDocsAction(name="data docs", site_names=["audit"]))
    checkpoint = context.checkpoints.add(gx.Checkpoint(
        name=contract_name, validation_definitions=[definition], actions=actions,
        result_format={"result_format": "SUMMARY", "partial_unexpected_count": EXAMPLES},
    ))
    parameters = {"window_start": window.start and int(window.start.timestamp()),
                  "window_end": window.end and int(window.end.timestamp())}
    # Ids go to GX as their dictionary codes: equal ids have equal codes and null stays null, so
    # not-null and unique mean the same, and GX hashes integers far faster than strings.
    ids = [c for c, dtype in data.schema.items() if dtype == pl.Categorical
           and ingest.contract(contract_name)["meta"]["columns"][c]["kind"] == "id"]
    run = checkpoint.run(batch_parameters={"dataframe": data.with_columns(pl.col(ids).to_physical()).to_pandas()},
                         expectation_parameters=parameters)
    (result,) = run.run_results.values()
    # GX does not keep the suite's order: match each result to its expectation by the id GX gave it.
    by_id = {r.expectation_config.id: r for r in result.results}
    outcomes = {index: by_id[added.id] for (index, _), added in zip(runnable, suite.expectations)}
    report = []
    for index, expectation in enumerate(ingest.contract(contract_name)["expectations"]):
        entry = {"type": expectation["type"], "column": _column_of(expectation),
                 "why": expectation["meta"]["why"]}
        if index in skipped:
            entry["skipped"] = skipped[index]
        else:
            outcome = outcomes[index]
            details = outcome.result or {}
            entry |= {
                "success": bool(outcome.success),
                "unexpected_count": details.get("unexpected_count"),
                "element_count": details.get("element_count"),
                "examples": _examples(data, _column_of(expectation) if _column_of(expectation) in ids else None,
                                      details.get("partial_unexpected_list", [])[:EXAMPLES]),
            }
            errors = [info.get("exception_message") for info in _exception_infos(outcome.exception_info)
                      if info.get("raised_exception")]
            if errors:
                entry["error"] = errors[0]
        report.append(entry)
    return {"suite": contract_name, "success": all(e.get("success", True) for e in report),
            "expectations": report}


def _examples(data: pl.DataFrame, id_column: str | None, values: list) -> list:
    """GX's examples as JSON values; for an id column, the ids its codes stand for."""
    plain = [_plain(v) for v in values]
    if id_column is None:
        return plain
    codes = data.select(pl.col(id_column), code=pl.col(id_column).to_physical()).drop_nulls().unique()
    wanted = [int(v) for v in plain if v is not None]  # GX hands codes back as floats
    names = dict(codes.filter(pl.col("code").is_in(wanted)).select(
        "code", pl.col(id_column).cast(pl.String)).iter_rows())
    return [None if v is None else names[int(v)] for v in plain]


def _exception_infos(info: dict) -> list[dict]:
    """GX reports one exception_info, or one per metric keyed by metric id."""
    return [info] if "raised_exception" in info else [v for v in info.values() if isinstance(v, dict)]


def _plain(value: object) -> object:
    """A GX example value as JSON can hold it (a missing value, NaN in pandas, becomes null)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value if isinstance(value, (str, int, float, bool)) else str(value)


def move_docs(staging: Path, target: Path) -> None:
    """Replace the Data Docs folder `target` with `staging` (a re-run replaces the previous docs)."""
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
