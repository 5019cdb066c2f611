"""The command line: parse arguments, call the library, turn errors into documented exit codes."""

from __future__ import annotations

import json
import signal
import sys
import tempfile
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Annotated

import polars as pl
import typer

from . import __version__, api as library, progress, stops, tuning
from .checks import contract, fairness, settlement
from .rules import exact_odds, profiles
from .inputs import profile_files
from .inputs import ingest, timestamps
from .outputs import explanation as explain_round
from . import generate as generator
from .outputs import report as report_page
from .outputs import summary as summary_of
from .engines import run as audit_run
from .errors import EXIT_CANNOT_RUN, EXIT_CLEAN, EXIT_FAILED, EXIT_FLAGGED, InputError, failure
from .inputs.selection import Selection
from .outputs.shown import counted, shown

app = typer.Typer(
    help="Replay punto banco round logs and flag every departure from the procedure.",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(asked: bool) -> None:
    if asked:
        typer.echo(f"baccarat-audit {__version__}")
        raise typer.Exit()


@app.callback()
def tool(version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_version,
                                               help="Print the version (as summary.json records it) and exit.")]
         = False) -> None:
    """Replay punto banco round logs and flag every departure from the procedure."""


SHOWN = 8  # findings printed by `audit`; all of them are in findings.parquet
ERROR_CHARS = 1000  # an error line is shortened past this: it may quote a value of the log


def _fail(error: InputError) -> typer.Exit:
    typer.echo(f"error: {shown(error, ERROR_CHARS)}", err=True)
    return typer.Exit(error.exit_code)


BetsOption = Annotated[Path | None, typer.Option(help="Bets log, CSV, JSON Lines or Parquet: settle every bet too.")]
ProfileOption = Annotated[str, typer.Option(
    help="Rules profile for rounds without a profile column value: a NAME (schemas/profiles/NAME.toml, or "
    "--profiles-dir), or your own PATH.toml.")]
ProfilesDirOption = Annotated[Path | None, typer.Option(
    help="A house's rules profiles: the log's profile names (and --profile) looked for here first as NAME.toml.")]
BetsMappingOption = Annotated[str | None, typer.Option(help="Column mapping for the bets log.")]
MappingOption = Annotated[str | None, typer.Option(
    help="Column mapping for the round log: a name in schemas/mappings/ or a JSON file.")]


def _moment(text: str) -> datetime:
    """An ISO 8601 date or date-time, with Z or an offset; without one, UTC."""
    try:
        return timestamps.moment(text, "")
    except InputError:
        raise typer.BadParameter(f"{text!r} is not an ISO 8601 date or date-time") from None


def _end(text: str) -> datetime:
    """An inclusive end: a date alone stands for the whole of that day (`--until 2026-11-04` keeps the
    rounds of the 4th), a date-time for itself."""
    moment = _moment(text)
    try:
        date.fromisoformat(text.strip())
    except ValueError:
        return moment
    return timestamps.shifted(moment, timedelta(days=1, microseconds=-1))


SINCE = "ISO 8601 date or date-time; UTC when it has no offset"
UNTIL = "ISO 8601; a date alone: to the end of that day; UTC when it has no offset"
WindowStart = Annotated[datetime | None, typer.Option(
    parser=_moment, metavar="TIME", help=f"Rounds must be dealt at or after this ({SINCE}).")]
WindowEnd = Annotated[datetime | None, typer.Option(
    parser=_end, metavar="TIME", help=f"Rounds must be dealt at or before this ({UNTIL}).")]


def _mapping(name: str | None, contract_name: str = "round_log") -> ingest.Mapping | None:
    return None if name is None else ingest.load_mapping(name, contract_name)


def _window(start: datetime | None, end: datetime | None, options: str = "--window-start/--window-end"
            ) -> contract.Window:
    """Two bounds (as `_moment` and `_end` read them, so with a zone); an end before the start is a usage
    error, not an empty window to audit."""
    window = contract.Window(start, end)
    if window.start and window.end and window.start > window.end:
        first, second = options.split("/")
        raise _fail(InputError(f"{first} {window.start.isoformat()} is after {second} {window.end.isoformat()}"))
    return window


AsOfOption = Annotated[datetime | None, typer.Option(
    parser=_moment, metavar="TIME", help="The present for TIMESTAMP (rounds dealt later are flagged); "
    "default the start of the run. The same log and TIME give the same outputs.")]


@app.command()
def audit(
    rounds: Annotated[list[str], typer.Argument(
        metavar="ROUNDS...", help="Round logs: CSV, JSON Lines or Parquet files, directories (Hive folders too), globs.")],
    out: Annotated[Path, typer.Option(help="Directory for findings, quarantine and summary.")],
    bets: BetsOption = None,
    profile: ProfileOption = profiles.DEFAULT,
    profiles_dir: ProfilesDirOption = None,
    mapping: MappingOption = None,
    bets_mapping: BetsMappingOption = None,
    window_start: WindowStart = None,
    window_end: WindowEnd = None,
    contract_check: Annotated[bool, typer.Option(
        "--contract/--no-contract", help="Hold the log to the input contract (schemas/*.json).")] = True,
    data_docs: Annotated[bool, typer.Option(
        "--data-docs", help="Also write the contract's Great Expectations Data Docs into DIR/contract/.")] = False,
    fairness_threshold: Annotated[float, typer.Option(
        help="Flag a table when its Benjamini-Hochberg corrected p-value is below this.", min=0, max=1)
    ] = fairness.DEFAULT_THRESHOLD,
    table: Annotated[list[str] | None, typer.Option(help="Audit only this table (repeatable).")] = None,
    shoe: Annotated[list[str] | None, typer.Option(help="Audit only this shoe (repeatable).")] = None,
    since: Annotated[datetime | None, typer.Option(
        parser=_moment, metavar="TIME", help=f"Audit only rounds dealt at or after this ({SINCE}).")] = None,
    until: Annotated[datetime | None, typer.Option(
        parser=_end, metavar="TIME", help=f"Audit only rounds dealt at or before this ({UNTIL}).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="Print nothing but errors: no progress, no summary.")] = False,
    fail_on: Annotated[str, typer.Option(
        metavar="KINDS", help="Which of findings, quarantine, contract set exit code 1 (comma-separated).")
    ] = ",".join(audit_run.FAIL_ON),
    as_json: Annotated[bool, typer.Option("--json", help="Print summary.json on stdout instead of the summary.")
                       ] = False,
    as_of: AsOfOption = None,
    after: Annotated[Path | None, typer.Option(
        metavar="PREVIOUS_OUT", help="The previous night's --out: its shoes still open at its end are carried in, "
        "so that a shoe dealt across the cut is checked as one.")] = None,
    engine: Annotated[str, typer.Option(help="polars (this machine) or spark (see README: what it runs).")] = "polars",
    spark_master: Annotated[str, typer.Option(help="Spark master URL for --engine spark.")] = "local[2]",
) -> None:
    """Audit every round of ROUNDS. Exit 0: all clean; 1: findings or quarantine; 2: could not run;
    3: the tool failed."""
    started = time.perf_counter()
    if engine not in ("polars", "spark"):
        raise _fail(InputError(f"unknown engine {engine!r}: polars or spark"))
    try:
        kinds = audit_run.kinds_to_fail_on(fail_on, "--fail-on")
    except InputError as error:
        raise _fail(error) from None
    narrowed = _window(since, until, "--since/--until")
    with progress.phases(enabled=not (quiet or as_json) and engine == "polars") as on_phase:
        try:
            options = audit_run.Options(
                bets=bets, profile=profile, mapping=_mapping(mapping), bets_mapping=_mapping(bets_mapping, "bet_log"),
                validate=contract_check, data_docs=data_docs and contract_check,
                window=_window(window_start, window_end),
                fairness_threshold=fairness_threshold, on_phase=on_phase, fail_on=kinds, command=tuple(sys.argv),
                as_of=as_of, profiles_dir=profiles_dir, after=after,
                selection=Selection(tuple(table or ()), tuple(shoe or ()), narrowed.start, narrowed.end))
            result = audit_run.audit(rounds, out, options) if engine == "polars" else _audit_on_spark(
                rounds, out, options, spark_master)
        except InputError as error:
            raise _fail(error) from None
    s = result.summary
    if as_json:
        typer.echo(json.dumps(s, indent=2))
        raise typer.Exit(result.exit_code)
    if quiet:  # the exit code and summary.json say the rest
        raise typer.Exit(result.exit_code)
    read = f"{counted(s['rows_read'], 'row')}{summary_of.selected_of(s) or ' read'}"
    skipped = sum(entry.get("lines_skipped", 0) for entry in s["inputs"] if entry["role"] == "rounds")
    if skipped:
        read += f" ({counted(skipped, 'line')} skipped: blank, or not records by the mapping)"
    typer.echo(f"{read}: {counted(s['rounds_audited'], 'round')} audited, "
               f"{s['rows_quarantined']} quarantined, {counted(s['rounds_flagged'], 'round')} flagged.")
    if "bets_read" in s:
        typer.echo(f"{counted(s['bets_read'], 'bet')} read: {s['bets_settled']} settled, {s['bets_quarantined']} "
                   f"quarantined, {s['bets_flagged']} wrongly paid (overpaid "
                   f"{settlement.in_currencies(s['money'], 'overpaid')}, underpaid "
                   f"{settlement.in_currencies(s['money'], 'underpaid')}).")
    if "bets_not_judged" in s:
        typer.echo(f"Warning: {s['bets_not_judged']}.")
    if s["inputs_not_read"]:
        names = [f"{shown(u['path'])} ({u['reason']})" for u in s["inputs_not_read"]]
        typer.echo(f"Not read: {counted(len(names), 'entry', plural='entries')} of the inputs: "
                   f"{', '.join(names[:SHOWN])}{' ...' if len(names) > SHOWN else ''}")
    for check, count in s["findings"].items():
        if count:
            typer.echo(f"  {check:<16} {count}")
    for check, state in s["checks"].items():
        if state != "ran":
            typer.echo(f"  {check:<16} {state}")
    skipped = s.get("fairness", {}).get("tables_skipped", {})
    for table, why in list(skipped.items())[:SHOWN]:
        typer.echo(f"  Fairness of table {shown(table)} not tested ({why})")
    if s.get("fairness", {}).get("tables_not_tested", 0) > SHOWN:
        typer.echo(f"  ... {s['fairness']['tables_not_tested']:,} tables not tested in all: fairness.parquet")
    first = audit_run.first_findings(result, SHOWN)
    for finding in first:
        typer.echo(f"  {shown(finding['source_file'])} row {finding['source_row']} round {shown(finding['round_id'])}: "
                   f"{finding['check']}: {shown(finding['detail'])}")
    if sum(s["findings"].values()) > len(first):
        typer.echo("  ... the rest in findings.parquet")
    for role, validation in s.get("contract", {}).items():
        failed = [e for e in validation["expectations"] if e.get("success") is False]
        typer.echo(f"Contract ({role}): {'all expectations met' if not failed else f'{len(failed)} not met'}")
        for e in failed:
            typer.echo(f"  {e['type']} {e['column'] or ''}: {e['unexpected_count']} unexpected, "
                       f"e.g. {_examples(e['examples'])}")
    written = [name for name in (*audit_run.OUTPUTS, audit_run.DOCS) if (out / name).exists()]
    typer.echo(f"Written to {shown(out, ERROR_CHARS)}/: {', '.join(written)}")
    seconds = time.perf_counter() - started
    typer.echo(f"{counted(s['rows_read'], 'round', ',')} in {seconds:.1f} s "
               f"({s['rows_read'] / seconds:,.0f} rounds/s)")
    raise typer.Exit(result.exit_code)


def _examples(values: list) -> str:
    """A contract's examples of unexpected values, each as `shown` makes it."""
    return "[" + ", ".join("None" if v is None else repr(shown(v)) for v in values) + "]"


@app.command()
def validate(
    log: Annotated[Path, typer.Argument(metavar="FILE", help="Round log (or, with --bets, a bets log).")],
    bets: Annotated[bool, typer.Option("--bets", help="FILE is a bets log.")] = False,
    mapping: Annotated[str | None, typer.Option(
        help="Column mapping for FILE (the bet log with --bets): a name in schemas/mappings/ or a JSON file.")] = None,
    window_start: WindowStart = None,
    window_end: WindowEnd = None,
    docs: Annotated[Path | None, typer.Option(help="Write the Great Expectations Data Docs here.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Run the input contract alone. Exit 0: every expectation met; 1: some not met; 2: could not run;
    3: the tool failed."""
    name = "bet_log" if bets else "round_log"
    try:
        opened = ingest.scan(log, name, _mapping(mapping, name))
        # Columns are written to a scratch folder a part at a time, removed as a staging folder is. The Data
        # Docs folder is made first: Great Expectations would log a traceback for each page it cannot write.
        temporary = Path(tempfile.gettempdir())
        with (stops.run_folder(temporary, "baccarat-audit-", f"{temporary}: cannot write a scratch folder") as scratch,
              contract.staged_docs(docs) as staged):
            subject = contract.Subject(name, opened.path, opened.columns, list(opened.pieces(tuning.current().piece_rows)),
                                       sum(opened.rows_per_file), opened.notation)
            result = contract.validate([subject], scratch, _window(window_start, window_end), staged)[name]
            if docs is not None:
                contract.publish_docs(staged, docs, 0 if result["success"] else 1)
    except InputError as error:
        raise _fail(error) from None
    if as_json:
        typer.echo(json.dumps(result, indent=2))
    else:
        for e in result["expectations"]:
            state = e.get("skipped") or ("met" if e["success"] else
                                         f"NOT MET: {e['unexpected_count']} unexpected, e.g. {_examples(e['examples'])}")
            typer.echo(f"{e['type']:<40} {e['column'] or '':<14} {state}")
    raise typer.Exit(0 if result["success"] else 1)


def _audit_on_spark(rounds: list[str], out: Path, options: audit_run.Options, master: str) -> audit_run.Result:
    from .engines import spark

    spark.require()
    profile_files.load(audit_run.with_house_profiles(options).profile)
    return spark.audit(rounds, out, options, master)


@app.command()
def explain(
    rounds: Annotated[list[str], typer.Argument(
        metavar="ROUNDS...", help="Round logs, as audit reads them: CSV, JSON Lines or Parquet files, directories, globs.")],
    round_id: Annotated[str, typer.Argument(metavar="ROUND_ID", help="The round to replay.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the explanation as JSON.")] = False,
    bets: BetsOption = None,
    profile: ProfileOption = profiles.DEFAULT,
    profiles_dir: ProfilesDirOption = None,
    mapping: MappingOption = None,
    bets_mapping: BetsMappingOption = None,
    as_of: AsOfOption = None,
) -> None:
    """Replay one round step by step and set each recorded value beside the replayed one, with the
    findings across its shoe. Exit 0: the round agrees with the procedure; 1: it has a finding or is
    quarantined; 2: could not run."""
    try:
        explained = library.explain(rounds if len(rounds) > 1 else rounds[0], round_id, bets=bets, profile=profile,
                                    profiles_dir=profiles_dir, mapping=mapping, bets_mapping=bets_mapping, as_of=as_of)
    except InputError as error:
        raise _fail(error) from None
    if as_json:
        typer.echo(json.dumps(explained, indent=2))
    else:
        text = "\n\n".join(explain_round.render(e) for e in explained)
        typer.echo("\n".join(shown(line, ERROR_CHARS) for line in text.split("\n")))
    raise typer.Exit(EXIT_FLAGGED if explain_round.found_anything(explained) else EXIT_CLEAN)


@app.command()
def generate(
    rounds: Annotated[int, typer.Option(help="Number of rounds to deal.", min=1)],
    out: Annotated[Path, typer.Option(help="Directory for rounds.csv, rounds.parquet, faults.csv.")],
    seed: Annotated[int, typer.Option(help="Seed of the shuffle and the faults.")] = 1,
    fault_rate: Annotated[float, typer.Option(help="Share of rounds given one fault.", min=0, max=1)] = 0.0,
    tables: Annotated[int, typer.Option(help="Tables the rounds are spread over.", min=1)] = 4,
    bets: Annotated[bool, typer.Option("--bets", help="Also write bets.csv and bets.parquet.")] = False,
    profile: Annotated[list[str] | None, typer.Option(
        help="Rules profile of the tables (its decks too); repeat to give tables different games.")] = None,
    stacked: Annotated[list[str] | None, typer.Option(
        help="A table (e.g. T02) whose shoes favour Banker; repeatable.")] = None,
    start: Annotated[datetime | None, typer.Option(
        parser=_moment, metavar="TIME", help="When the first round of each table is dealt; default "
        "2026-11-01T18:00Z, or whole days earlier where the play would run past the present.")] = None,
) -> None:
    """Deal shoe-faithful rounds into a round log, with faults injected at FAULT_RATE."""
    with progress.phases() as on_phase:
        try:
            log = generator.generate(rounds, seed, fault_rate, tables, tuple(profile or [profiles.DEFAULT]),
                                     with_bets=bets, stacked=tuple(stacked or ()), start=start, on_phase=on_phase)
            on_phase("writing the log")
            paths = generator.write(log, out)
        except InputError as error:
            raise _fail(error) from None
    typer.echo(f"{counted(len(log.rows), 'round')} and {counted(len(log.bets), 'bet')} "
               f"({counted(len(log.faults), 'fault')}) written to "
               f"{out}/; the faults are listed in {paths['faults']}")


@app.command()
def report(
    out: Annotated[Path, typer.Argument(metavar="DIR", help="An audit output directory.")],
) -> None:
    """Rebuild DIR/report.html from an audit's output directory, without re-auditing."""
    try:
        written = report_page.write(out)
    except InputError as error:
        raise _fail(error) from None
    typer.echo(f"Written {written}")


@app.command()
def odds(
    profile: ProfileOption = profiles.DEFAULT,
    decks: Annotated[int | None, typer.Option(help="Decks in the shoe (default: the profile's).", min=1, max=8)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Exact outcome probabilities and house edge of every bet of a profile, by full enumeration."""
    try:
        figures = library.odds(profile, decks)
    except InputError as error:
        raise _fail(error) from None
    if as_json:
        typer.echo(json.dumps(exact_odds.as_json(figures, profile), indent=2))
        return
    typer.echo(f"{profile}, {figures.decks} decks, every ordered deal from a full shoe:")
    named = {outcome: f"P({outcome})" for outcome in figures.outcomes}  # aligned after the parenthesis, not inside
    for outcome, chance in figures.outcomes.items():
        typer.echo(f"  {named[outcome]:<{max(map(len, named.values()))}} = {float(chance):.6f}")
    typer.echo("  house edge per unit staked:")
    for bet, edge in figures.house_edge.items():
        typer.echo(f"    {bet:<20} {float(edge) * 100:8.4f}%")


def main() -> None:
    """Entry point: usage errors become one line on stderr and exit 2, like every input that cannot be
    audited, and like a run stopped by a signal (`stops`, installed by `__main__`); a failure of the tool
    itself is one line too, and exit 3."""
    try:
        with ingest.one_row_group_ahead():  # every command, `validate` too; `run.audit` sets it itself
            code = app(standalone_mode=False)
        if code == TYPER_INTERRUPTED:  # a KeyboardInterrupt: Spark's own Ctrl-C handler, while a session starts
            typer.echo(stops.said(signal.SIGINT.name), err=True)
            code = EXIT_CANNOT_RUN
    except typer.TyperException as error:  # usage errors: unknown option, missing argument, ...
        typer.echo(f"error: {shown(error.format_message(), ERROR_CHARS)}", err=True)
        code = EXIT_CANNOT_RUN
    except OSError as error:  # an output that cannot be written (a folder that cannot be made, a full disk)
        typer.echo(f"error: {shown(error.filename or 'output', ERROR_CHARS)}: cannot be written "
                   f"({error.strerror or shown(error, ERROR_CHARS)})", err=True)
        code = EXIT_CANNOT_RUN
    except (Exception, pl.exceptions.PanicException) as error:  # a panic is not an Exception
        typer.echo(f"error: {failure(error)}", err=True)
        code = EXIT_FAILED
    sys.exit(code or 0)


TYPER_INTERRUPTED = 130  # what typer returns for a KeyboardInterrupt, without a word
