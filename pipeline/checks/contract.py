"""The input contract, run by Great Expectations: the suites in `schemas/` against a log.

GX has no polars engine, so polars hands it a view of the log made for cheap checking: only the
columns the suite reads, text values that belong to a small set upper-cased and dictionary-encoded
(pandas categoricals: GX's set checks and its batch hashing then touch a few distinct values, not
every row), amounts as integers of 1/10,000 and `dealt_at` as UTC epoch seconds (GX compares numbers
vectorized, but maps a Python function over every timestamp); on pandas, ids as dense integer codes.
The view goes to GX a batch of rows at a time (see `validate`), so that its memory does not grow
with the log; on Spark (`validate_on_spark`), whole.
Row-level findings and quarantine stay with polars; GX gives the declared contract, a summary per
expectation, and Data Docs."""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from ..inputs import ingest
from ..rules import cards
from .. import owned, stops, tuning
from ..engines import parts
from ..errors import InputError
from ..engines.preload import preload as preloading
from .settlement import amount_e4, e12_text
from ..outputs.shown import kept_short
from ..inputs.timestamps import utc_column, with_timestamp

#: Column kinds (contract meta) whose values form a small set: checked in upper case, dictionary-encoded.
SET_KINDS = {"card", "third_card", "total", "outcome", "bet_type", "profile", "text"}
#: An amount or a time the view cannot read: a number below every bound, so that "readable" is a range
#: check too, and one no reading gives, so that an example of it can say so.
UNREADABLE = -(2**62)
EXAMPLES = 3


@dataclass(frozen=True)
class Window:
    """The run's window: rounds must have been dealt inside it (either end may be open)."""

    start: datetime | None = None
    end: datetime | None = None


def preload() -> threading.Thread:
    """Import Great Expectations in the background (seconds of Python) while polars audits."""
    _no_analytics()
    return preloading("great_expectations")


def _no_analytics() -> None:
    """An unattended job sends nothing home: set before Great Expectations is imported."""
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")


def _import_gx() -> None:
    _no_analytics()
    import great_expectations  # noqa: F401


def column_of(expectation: dict) -> str | None:
    return expectation["kwargs"].get("column")


def view(frame: pl.LazyFrame, present: frozenset[str], contract_name: str, whole_ids: bool = False) -> pl.LazyFrame:
    """The columns of a log's frame (`ingest.Log.frame`, or the rows the audit prepared from it, which
    carry the same text) that the contract's suite reads, shaped for GX (see module docstring).
    `present`: the columns the log really has. Ids are kept whole (made safe for HTML) with
    `whole_ids`, for a run that checks their uniqueness on the view (Spark); otherwise they are checked
    for invisible characters only where they hold a character outside ASCII, the others one placeholder."""
    kinds = {c: spec["kind"] for c, spec in ingest.contract(contract_name)["meta"]["columns"].items()}
    wanted = [c for c in ingest.columns(contract_name) if c in present and (
        c in ingest.required(contract_name)
        or any(column_of(e) == c for e in ingest.contract(contract_name)["expectations"]))]
    shaped = []
    for c in wanted:
        column = pl.col(c)
        if kinds[c] in SET_KINDS:
            column = set_value(column)
        elif kinds[c] == "id":
            safe = html_safe(column)
            column = safe if whole_ids else pl.when(column.str.contains(r"[^\x00-\x7f]")).then(safe).otherwise(
                pl.when(column.is_not_null()).then(pl.lit("-"))).cast(pl.Categorical)
        elif kinds[c] == "amount":
            column = amount_value(column)
        elif kinds[c] == "timestamp":
            utc = utc_column(c)
            if utc not in frame.collect_schema():  # the audit's rows have it read already
                frame = with_timestamp(frame, c, utc)
            column = pl.when(column.is_not_null() & pl.col(utc).is_null()).then(UNREADABLE).otherwise(
                pl.col(utc).dt.epoch("s"))
        shaped.append(column.alias(c))
    return frame.select(shaped)


def amount_value(text: pl.Expr) -> pl.Expr:
    """A value of an amount column as the view has it: in 1/10,000, a negative amount as that number
    (GX's check of the sign must see it), UNREADABLE where the text is no amount."""
    size = amount_e4(text, signed=True)
    # "-0" is no amount the settlement takes (it quarantines a sign), nor below 0: unreadable.
    read = pl.when(~(text.str.starts_with("-") & (size == 0))).then(size)
    return pl.when(text.is_not_null() & read.is_null()).then(UNREADABLE).otherwise(read)


def set_value(text: pl.Expr) -> pl.Expr:
    """A value of a column of SET_KINDS as the view has it: upper case, safe for HTML, dictionary-encoded."""
    return html_safe(text.str.to_uppercase()).cast(pl.Categorical)


#: What HTML gives a meaning to, as entities: Great Expectations writes the values it finds unexpected
#: into its Data Docs pages as they are, so log text would become markup (a script, once rendered).
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"}


_CHARACTERS = {entity: char for char, entity in _ENTITIES.items()}
_ENTITY = re.compile("|".join(map(re.escape, _CHARACTERS)))  # what `html_safe` wrote, and nothing else


def html_safe(text: pl.Expr) -> pl.Expr:
    """`text` with every character HTML gives a meaning to written as its entity; the examples the
    summary keeps are turned back (`as_read`). A value set of the suites holds none of them, so
    whether a value is expected does not change."""
    return pl.when(text.str.contains(r"[&<>\"']")).then(
        text.str.replace_many(list(_ENTITIES), list(_ENTITIES.values()))).otherwise(text)


CARD_KINDS = ("card", "third_card")


def expectations_of(contract_name: str, present: set[str], window: Window, notation: str = "cards"
                    ) -> tuple[list, dict[int, str]]:
    """The suite's expectations that can run on this log, and why each of the others is skipped. The
    suite states cards as cards; a log whose mapping declares another notation (points) has its card
    columns held to that notation's spellings (`cards.NOTATIONS`) instead."""
    runnable, skipped = [], {}
    for index, expectation in enumerate(ingest.contract(contract_name)["expectations"]):
        column = column_of(expectation)
        if (notation != "cards" and expectation["type"] == "expect_column_values_to_be_in_set"
                and _kind(contract_name, column) in CARD_KINDS):
            expectation = expectation | {"kwargs": expectation["kwargs"] | {
                "value_set": sorted(cards.NOTATIONS[notation])}}
        parameters = [v["$PARAMETER"] for v in expectation["kwargs"].values() if isinstance(v, dict)]
        if column is not None and column not in present:
            skipped[index] = f"skipped: the log has no {column} column"
        elif parameters and not (window.start or window.end):
            skipped[index] = "skipped: no window given (--window-start/--window-end)"
        else:
            runnable.append((index, expectation))
    return runnable, skipped


def is_unique(expectation: dict) -> bool:
    return expectation["type"] == "expect_column_values_to_be_unique"


@dataclass(frozen=True)
class Subject:
    """A log to hold to its contract: its label, the columns it really has, its rows in pieces
    (frames as `ingest.Log.frame` has them: every contract column as trimmed text), and how many rows
    the pieces hold, already counted by the caller (a CSV log is counted only by reading it)."""

    contract_name: str
    label: Path
    present: frozenset[str]
    pieces: list[pl.LazyFrame]
    rows: int
    notation: str = "cards"  # how its cards are written (`cards.NOTATIONS`), as its mapping says


class _Runs:
    """One Great Expectations context: a checkpoint per suite, every run's results kept by expectation."""

    def __init__(self, window: Window, on_spark: bool = False) -> None:
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        _import_gx()
        logging.getLogger("great_expectations").setLevel(logging.ERROR)
        self.context = gx.get_context(mode="ephemeral")
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self.logs = (self.context.data_sources.add_spark("logs") if on_spark
                     else self.context.data_sources.add_pandas("logs"))
        self.parameters = {"window_start": window.start and int(window.start.timestamp()),
                           "window_end": window.end and int(window.end.timestamp())}
        self.outcomes: dict[tuple[str, int], list] = {}  # (contract, expectation index) -> results

    def suite(self, contract_name: str, name: str, expectations: list[tuple[int, dict]]) -> Callable:
        """A checkpoint for these expectations of a contract: call it with a piece and a run name."""
        import great_expectations as gx
        from great_expectations.core.run_identifier import RunIdentifier

        batch = self.logs.add_dataframe_asset(name).add_batch_definition_whole_dataframe(name)
        suite = self.context.suites.add(gx.ExpectationSuite(name=name, expectations=[
            gx.expectations.registry.get_expectation_impl(e["type"])(**e["kwargs"], meta=e["meta"])
            for _, e in expectations]))
        checkpoint = self.context.checkpoints.add(gx.Checkpoint(
            name=name, validation_definitions=[self.context.validation_definitions.add(
                gx.ValidationDefinition(name=name, data=batch, suite=suite))],
            result_format={"result_format": "SUMMARY", "partial_unexpected_count": EXAMPLES}))

        def run(data, run_name: str) -> None:
            """Run on a piece (a polars view) or, on Spark, a whole view (a Spark DataFrame)."""
            codes, batch = {}, data
            if isinstance(data, pl.DataFrame):
                # Ids (the view's only text) go to GX as dense codes, equal exactly when the ids are: GX
                # hashes every value of a batch, which is slow and large on text.
                codes = {c: data[c].rank("dense") for c, dtype in data.schema.items() if dtype == pl.String}
                batch = data.with_columns(*codes.values()).to_pandas()
            done = checkpoint.run(batch_parameters={"dataframe": batch}, expectation_parameters=self.parameters,
                                  run_id=RunIdentifier(run_name=run_name))
            (result,) = done.run_results.values()
            # GX does not keep the suite's order: match each result to its expectation by the id GX gave it.
            by_id = {r.expectation_config.id: r for r in result.results}
            for (index, expectation), added in zip(expectations, suite.expectations):
                column = column_of(expectation)
                text_of = pl.DataFrame({"code": codes[column], column: data[column]}) if column in codes else None
                self.outcomes.setdefault((contract_name, index), []).append(
                    _outcome(by_id[added.id], text_of, _kind(contract_name, column)))
        return run

    def result(self, contract_name: str, skipped: dict[int, str]) -> dict:
        """A contract's result: every expectation of its suite, in order, added up over the runs."""
        report = []
        for index, expectation in enumerate(ingest.contract(contract_name)["expectations"]):
            entry = {"type": expectation["type"], "column": column_of(expectation),
                     "why": expectation["meta"]["why"]}
            entry |= ({"skipped": skipped[index]} if index in skipped
                      else _added_up(self.outcomes[contract_name, index]))
            report.append(entry)
        return {"suite": contract_name, "success": all(e.get("success", True) for e in report),
                "expectations": report}

    def write_docs(self, docs_dir: Path) -> None:
        """Data Docs of every run so far, into `docs_dir`."""
        self.context.add_data_docs_site("audit", {
            "class_name": "SiteBuilder",
            "store_backend": {"class_name": "TupleFilesystemStoreBackend",
                              "base_directory": str(Path(docs_dir).resolve())},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        })
        self.context.build_data_docs(site_names=["audit"])


def _batches(label: Path, views: list[pl.LazyFrame]) -> Iterator[pl.DataFrame]:
    """The rows of `views` in batches of at most `Tuning.batch_rows`, each collected alone (a whole piece
    held beside GX's batch raised the peak); one empty batch when there are no rows."""
    rows, batch_rows = 0, tuning.current().batch_rows
    for one in views:
        start = 0
        while (batch := ingest.collect(label, [one.slice(start, batch_rows)])[0]).height:
            rows += batch.height
            yield batch
            start += batch_rows
    if rows == 0:
        yield batch


def _parts(subject: Subject, column: str, scratch: Path) -> Iterator[tuple[pl.DataFrame, str]]:
    """One column of a log a part at a time, every copy of a value in the same part (see
    `pipeline.engines.parts`), each part with a run name; parts of about `Tuning.batch_rows` rows."""
    folder = scratch / f"{subject.contract_name}.{column}"
    part_count = max(1, -(-subject.rows // tuning.current().batch_rows))
    part = parts.part_of(pl.col(column), part_count)
    for i, piece in enumerate(subject.pieces):
        ingest.collect(subject.label, [parts.write(piece.select(column), part, part_count, folder, f"{i:06d}")])
    schema = subject.pieces[0].select(column).collect_schema()
    for k in range(part_count):
        yield (ingest.collect(subject.label, [parts.read(folder, k, schema)])[0],
               f"{column} unique, part {k + 1} of {part_count}")


def validate(subjects: list[Subject], scratch: Path, window: Window = Window(),
             docs_dir: Path | None = None) -> dict[str, dict]:
    """Run each subject's suite on it; write Data Docs of every run to `docs_dir` when given.
    `scratch` is an empty folder to work in.

    GX holds what it checks in pandas, several copies deep, so it is handed a batch of
    `Tuning.batch_rows` rows at a time: every expectation about single values runs on each batch of
    the log, and a uniqueness expectation on each part of its column (see `_parts`). Counts add up
    over the runs, an expectation is met when it is met in every run, and Data Docs show one page per
    run.

    Returns, by contract name, {"suite", "success", "expectations": [{type, column, why,
    success|skipped, unexpected_count, element_count, examples}]} in the suite's order.
    """
    runs = _Runs(window)
    results = {}
    for subject in subjects:
        name = subject.contract_name
        views = [view(piece, subject.present, name) for piece in subject.pieces]
        runnable, skipped = expectations_of(name, set(views[0].collect_schema().names()), window, subject.notation)
        single = [(index, e) for index, e in runnable if not is_unique(e)]
        if single:
            run, first = runs.suite(name, name, single), 1
            for data in _batches(subject.label, views):
                run(data, f"rows {first}-{first + data.height - 1}")
                first += data.height
        for index, expectation in ((i, e) for i, e in runnable if is_unique(e)):
            run = runs.suite(name, f"{name} {column_of(expectation)} unique", [(index, expectation)])
            for data, run_name in _parts(subject, column_of(expectation), scratch):
                run(data, run_name)
        results[name] = runs.result(name, skipped)
    if docs_dir is not None:
        runs.write_docs(docs_dir)
    return results


def validate_on_spark(views: dict[str, object], window: Window = Window(), docs_dir: Path | None = None,
                      notation: str = "cards") -> dict[str, dict]:
    """Run each contract's suite, in one run, on its `view` as a Spark DataFrame (contract name ->
    view, set-valued columns as text): Spark holds the log, so nothing needs cutting. Returns what
    `validate` returns."""
    runs = _Runs(window, on_spark=True)
    results = {}
    for name, data in views.items():
        runnable, skipped = expectations_of(name, set(data.columns), window, notation)
        if runnable:
            runs.suite(name, name, runnable)(data, "whole log")
        results[name] = runs.result(name, skipped)
    if docs_dir is not None:
        runs.write_docs(docs_dir)
    return results


def _kind(contract_name: str, column: str | None) -> str | None:
    return ingest.contract(contract_name)["meta"]["columns"][column]["kind"] if column else None


def _outcome(result, text_of: pl.DataFrame | None, kind: str | None) -> dict:
    """One run's result of one expectation, in plain values; `text_of` maps an id column's codes back
    to its ids (GX hands the codes back as floats), and an amount's or a time's number is shown as the
    value it stands for (`_shown`)."""
    details = result.result or {}
    examples = [_plain(v) for v in details.get("partial_unexpected_list", [])[:EXAMPLES]]
    if text_of is not None:
        wanted = [int(v) for v in examples if v is not None]
        ids = dict(text_of.filter(pl.col("code").is_in(wanted)).unique().iter_rows())
        examples = [None if v is None else ids[int(v)] for v in examples]
    else:
        examples = as_read(examples, kind)
    errors = [info.get("exception_message") for info in _exception_infos(result.exception_info)
              if info.get("raised_exception")]
    return {"success": bool(result.success), "unexpected_count": details.get("unexpected_count"),
            "element_count": details.get("element_count"), "examples": examples, "errors": errors}


def as_read(examples: list, kind: str | None) -> list:
    """Examples of the view's values as the log's reader knows them: text as it was before `html_safe`,
    an amount's or a time's number as the value it stands for (`_shown`)."""
    if kind in ("amount", "timestamp"):
        return [None if v is None else _shown(int(v), kind) for v in examples]
    return [_ENTITY.sub(lambda found: _CHARACTERS[found.group()], v) if isinstance(v, str) else v for v in examples]


def _added_up(outcomes: list[dict]) -> dict:
    """One expectation's results over every run: met when met in each, counts summed, the first examples."""
    def total(key: str) -> int | None:
        counts = [outcome[key] for outcome in outcomes if outcome[key] is not None]
        return sum(counts) if counts else None

    entry = {
        "success": all(outcome["success"] for outcome in outcomes),
        "unexpected_count": total("unexpected_count"),
        "element_count": total("element_count"),
        "examples": kept_short([v for outcome in outcomes for v in outcome["examples"]][:EXAMPLES]),
    }
    errors = [error for outcome in outcomes for error in outcome["errors"]]
    if errors:
        entry["error"] = errors[0]
    return entry


def _exception_infos(info: dict) -> list[dict]:
    """GX reports one exception_info, or one per metric keyed by metric id."""
    return [info] if "raised_exception" in info else [v for v in info.values() if isinstance(v, dict)]


def _shown(number: int, kind: str) -> str:
    """An example of the view's amounts (1/10,000) or times (epoch seconds) as the log's reader knows
    it: "-3.00", "2031-01-01T00:00:00Z", or "unreadable" (the audit's quarantine and findings name
    each such value as written)."""
    if number == UNREADABLE:
        return "unreadable"
    if kind == "amount":
        return e12_text(number * 10**8)  # 1/10,000 as 1/10^12: the settlement's exact text of money
    return datetime.fromtimestamp(number, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _plain(value: object) -> object:
    """A GX example value as JSON can hold it (a missing value, NaN in pandas, becomes null)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return value if isinstance(value, (str, int, float, bool)) else str(value)


@contextmanager
def staged_docs(target: Path | None) -> Iterator[Path | None]:
    """A new hidden folder beside `target` (None without one) for Data Docs written as `validate` runs,
    removed on the way out however it ends, a stop by signal included; `publish_docs` moves them into
    place once they are complete. An InputError naming `target` when it cannot be made, or when it
    holds anything this tool did not write there (`owned.claim`), which replacing it would destroy."""
    if target is None:
        yield None
        return
    target = target.absolute()  # "." has no parent of its own to stage beside
    if Path.cwd().is_relative_to(target):
        raise InputError(f"{target}: is the working folder (or holds it), which a run would replace; give another")
    if target.exists() and not target.is_dir():
        raise InputError(f"{target}: is a file, not a folder for the Data Docs")
    with owned.locked(target.parent, f"{target}: cannot write the Data Docs here"):
        owned.claim(target.parent, [target.name])
        with stops.run_folder(target.parent, f".{target.name}-", f"{target}: cannot write the Data Docs here"
                              ) as staging:
            (staging / target.name).mkdir()
            yield staging / target.name


def publish_docs(staging: Path, target: Path, exit_code: int) -> None:
    """The Data Docs of `staged_docs` moved into place, a stop ignored meanwhile; after, it ends the
    run with `exit_code`, the contract's result (`stops.publishing`)."""
    target = target.absolute()
    with stops.publishing(exit_code):
        try:
            owned.publish(staging.parent, target.parent, [target.name])
        except OSError as error:
            raise InputError(f"{target}: cannot write the Data Docs here ({error.strerror})") from None
