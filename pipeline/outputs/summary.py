"""summary.json: what a nightly job reads first. A run's counts, findings by check, exit code and
provenance (who ran it, on which files by SHA-256, under which contract and rules profiles), the same
for either engine."""

from __future__ import annotations

import getpass
import hashlib
import socket
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from .. import __version__, tuning
from ..rules import cards
from ..inputs import profile_files
from ..checks import fairness, integrity, settlement
from ..inputs import ingest
from ..engines import parts
from ..checks.round_checks import CHECKS, CODES
from ..checks.findings import ON_A_ROUND_ROW, row_key
from ..errors import EXIT_CLEAN, EXIT_FLAGGED
from .shown import kept_short

if TYPE_CHECKING:  # only named in annotations: the run layer imports this module
    from ..engines.run import Options


def sha256(path: Path) -> str:
    stat = Path(path).stat()
    return _sha256(Path(path), stat.st_size, stat.st_mtime_ns)


@cache
def _sha256(path: Path, size: int, mtime_ns: int) -> str:
    """A file's SHA-256, read once while it is unchanged (a run names its inputs' twice: run id, summary)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def run_by() -> dict[str, str | None]:
    """Who ran the audit, for the report's sign-off: the account and the machine (None where unknown)."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no login name and no password entry (a bare container)
        user = None
    return {"user": user, "host": socket.gethostname() or None}


#: Of summary.json: 2 added schema_version, run_id, finished_at, command, period, fail_on; 3 added as_of, run_by
#: (and findings.parquet its run_id, hand_no as an integer and dealt_at as a UTC time); 4 added
#: fairness.outcomes (and fairness.parquet the recorded outcomes' tests); 5 dropped fairness.tables (in
#: fairness.parquet) for tables_tested, tables_not_tested and tables_skipped, and added bets_without_round,
#: bets_not_judged and, when narrowed, each input's rows_selected (fairness.parquet: method, skipped).
SCHEMA_VERSION = 5


def add_contract(summary: dict, validated: dict[str, dict], fail_on: frozenset[str]) -> None:
    """The contract's result (by contract name) into the summary, by role; an unmet expectation flags
    the run when `fail_on` holds "contract"."""
    summary["contract"] = {role: validated[name] for role, name in (("rounds", "round_log"), ("bets", "bet_log"))
                           if name in validated}
    if "contract" in fail_on and not all(result["success"] for result in summary["contract"].values()):
        summary["exit_code"] = EXIT_FLAGGED


def narrowing(summary: dict) -> str | None:
    """What a narrowed run kept of its log (`--table`, `--shoe`, `--since`, `--until`), in words; None
    when it audited every row."""
    chosen = summary.get("selection")
    if not chosen:
        return None
    said = [f"{label} {', '.join(chosen[key])}" for key, label in (("tables", "table"), ("shoes", "shoe"))
            if chosen[key]]
    said += [f"dealt {word} {chosen[key]}" for key, word in (("since", "since"), ("until", "until")) if chosen[key]]
    return "; ".join(said)


def selected_of(summary: dict) -> str:
    """What a narrowed run kept of the log, as the terminal and the report say it after the rows it read:
    " selected (table T01) of 2,000 rows in the log"; empty when not narrowed."""
    kept, in_files = narrowing(summary), rows_in_files(summary)
    return f" selected ({kept}) of {'the' if in_files is None else f'{in_files:,}'} rows in the log" if kept else ""


def rows_in_files(summary: dict) -> int | None:
    """The rows of the round log's files before a selection; None where a file ruled out unread was not counted."""
    counts = [entry["rows"] for entry in summary["inputs"] if entry["role"] == "rounds"]
    return None if None in counts else sum(counts)


def finish(summary: dict) -> dict:
    """The summary as written when the run is done: `finished_at` set."""
    return summary | {"finished_at": datetime.now(UTC).isoformat(timespec="seconds")}


NAMED = 100  # the tables not tested that summary.json names; fairness.parquet holds them all


def _inputs(role: str, log: ingest.Log, mapping: ingest.Mapping | None, rows: pl.DataFrame) -> list[dict]:
    """One provenance entry per file: path, format, rows read from it, SHA-256 (and the mapping). In a
    narrowed run `rows` are the file's, which its SHA-256 vouches for (None: ruled out unread, not
    counted), and `rows_selected` those the selection kept and the audit read."""
    counts = dict(rows.iter_rows())
    entries = []
    in_files = log.rows_in_files if log.selection else (None,) * len(log.files)
    for path, file_format, in_file, skipped in zip(log.files, log.formats, in_files, log.lines_skipped):
        entry = {"role": role, "path": str(path), "format": file_format, "rows": counts.get(str(path), 0),
                 "sha256": sha256(path)}
        if skipped:  # blank lines, or lines the mapping says are not records: counted, not rows
            entry["lines_skipped"] = skipped
        if log.selection:
            entry |= {"rows": in_file, "rows_selected": counts.get(str(path), 0)}
        if mapping is not None and mapping.path is not None:
            entry["mapping"] = {"path": str(mapping.path), "sha256": sha256(mapping.path)}
            if mapping.derived_id:
                entry["mapping"]["round_id"] = mapping.derived_id
        entries.append(entry)
    return entries


def _not_read(role: str, log: ingest.Log) -> list[dict]:
    return [{"role": role, "path": str(path), "reason": reason} for path, reason in log.unread]


def _rounds_flagged(findings: pl.LazyFrame, scratch: Path | None) -> int:
    """Rows of the round log with at least one finding, each made one integer (`row_key`).

    Past `Tuning.piece_rows` findings, and with a `scratch` folder, the pairs are counted a part of the rows
    (by row number) at a time (`parts.each`), that many findings given to each query: counted at
    once, the findings of a log whose every round was found were held whole. (Category codes are
    not the same from one query to the next, so the parts count pairs.)"""
    def flagged(rows: pl.LazyFrame) -> pl.LazyFrame:
        return rows.filter(ON_A_ROUND_ROW)
    total = findings.select(pl.len()).collect().item()
    piece_rows = tuning.current().piece_rows
    if scratch is None or total <= piece_rows:
        return flagged(findings).select(row_key().unique().len()).collect().item()
    chunks = [flagged(findings.slice(start, piece_rows)).select("source_file", "source_row")
              for start in range(0, total, piece_rows)]
    count = len(chunks)
    return sum(rows.unique().height for rows in parts.each(chunks, pl.col("source_row") % count, count,
                                                          lambda frame: frame.collect(), scratch))


def summarize(started: datetime, run_id: str, log: ingest.Log, bet_log: ingest.Log | None, names: list[str],
              counted: dict[str, pl.DataFrame], findings: pl.LazyFrame, tests: pl.DataFrame | None,
              options: Options, scratch: Path | None = None) -> dict:
    """summary.json of a run (either engine), from its counts, findings and fairness tests; `scratch`,
    a folder not yet made, for counting the rounds flagged among many findings (`_rounds_flagged`)."""
    rounds = counted["rounds"].row(0, named=True)
    by_check = dict(findings.group_by("check").len().collect().iter_rows())
    codes = (*CODES, *integrity.CODES, "TABLE_STATS", *(settlement.CODES if bet_log is not None else ()))
    checks = {c.code: "ran" if c.needs is None or c.needs in log.columns
              else f"skipped: the log has no {c.needs} column" for c in CHECKS}
    # Without rounds there are no cards to tell suits by: CARD_COUNT ran, on nothing.
    audited = rounds["rows_read"] - rounds["rows_quarantined"]
    checks |= integrity.requirements(log.columns, rounds["suited_cards"] if audited else 1)
    if not log.ranked:
        checks["CARD_COUNT"] = f"skipped: {cards.POINTS_ONLY}"
    checks["TABLE_STATS"] = "ran" if "table_id" in log.columns else "skipped: the log has no table_id column"
    if not options.across_rounds:
        checks |= {code: "skipped: turned off" for code in (*integrity.CODES, "TABLE_STATS")}
    checks |= {code: "ran" if bet_log is not None else "skipped: no bet log given" for code in settlement.CODES}
    inputs = _inputs("rounds", log, options.mapping, counted["rows_per_file"])
    period = {"first_dealt_at": rounds["first_dealt"], "last_dealt_at": rounds["last_dealt"]}
    summary = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,  # also on every row of findings.parquet
        "tool": {"name": "baccarat-audit", "version": __version__},
        "command": list(options.command) if options.command else None,
        "run_by": run_by(),
        "started_at": started.isoformat(timespec="seconds"),
        "finished_at": None,
        "as_of": (options.as_of or started).astimezone(UTC).isoformat(timespec="seconds"),
        "period": None if period["first_dealt_at"] is None else
        {key: moment.isoformat().replace("+00:00", "Z") for key, moment in period.items()},
        "fail_on": sorted(options.fail_on),
        "inputs": inputs,
        "inputs_not_read": _not_read("rounds", log),
        "rules": {
            "contract": {"schemas/round_log.json": sha256(ingest.SCHEMAS / "round_log.json")},
            "profiles": {name: profile_files.sha256(profile_files.load(name)) for name in names},
            "descriptions": {name: profile_files.load(name).description for name in names},
        },
        "rows_read": rounds["rows_read"],
        "rounds_audited": rounds["rows_read"] - rounds["rows_quarantined"],
        "rows_quarantined": rounds["rows_quarantined"],
        "rounds_flagged": _rounds_flagged(findings, scratch),
        "findings": {code: by_check.get(code, 0) for code in codes},
        "selection": {"tables": list(options.selection.tables), "shoes": list(options.selection.shoes),
                      "since": options.selection.since and options.selection.since.isoformat(),
                      "until": options.selection.until and options.selection.until.isoformat()}
        if options.selection else None,
        "checks": checks,
    }
    if tests is not None:
        table_level = tests.filter(pl.col("level") == "table")
        skipped = (table_level.filter(pl.col("skipped").is_not_null()).group_by("group", maintain_order=True)
                   .agg(pl.col("skipped").first()))
        summary["fairness"] = {
            "threshold": options.fairness_threshold,
            "correction": "Benjamini-Hochberg over every table's chi-square, natural and pair tests",
            "tables_flagged": kept_short(sorted(set(
                table_level.filter(pl.col("flagged") & pl.col("test").is_in(fairness.FLAGGED_TESTS))["group"]))),
            # Each table's tests are in fairness.parquet: listed here, they grew summary.json with the tables.
            "tables_tested": table_level.filter(pl.col("skipped").is_null())["group"].n_unique(),
            "max_quarantined": fairness.MAX_QUARANTINED,
            "tables_not_tested": skipped.height,
            "tables_skipped": kept_short(dict(skipped.head(NAMED).iter_rows())),
            # The recorded outcomes (what was paid) beside the replayed: they flag no table.
            "outcomes": {"correction": "Benjamini-Hochberg over every table's recorded-outcome chi-square, apart",
                         **{key: kept_short(tables) for key, tables in fairness.outcomes_compared(tests).items()}},
        }
        if not log.ranked:
            summary["fairness"]["skipped"] = {test: f"skipped: {cards.POINTS_ONLY}" for test in fairness.RANKED}
    found = summary["rounds_flagged"] or by_check.get("TABLE_STATS", 0)
    quarantined = summary["rows_quarantined"]
    if bet_log is not None:
        bet = counted["bets"].row(0, named=True)
        inputs += _inputs("bets", bet_log, options.bets_mapping, counted["bets_per_file"])
        summary["inputs_not_read"] += _not_read("bets", bet_log)
        summary["rules"]["contract"]["schemas/bet_log.json"] = sha256(ingest.SCHEMAS / "bet_log.json")
        summary |= {
            "bets_read": bet["bets_read"],
            "bets_settled": bet["bets_read"] - bet["bets_quarantined"],
            "bets_quarantined": bet["bets_quarantined"],
            "bets_flagged": bet["bets_flagged"],
            "bets_without_round": bet["bets_without_round"],
            **settlement.money_summary(counted["money"]),
        }
        if bet["bets_without_round"] * 2 > bet["bets_read"]:
            summary["bets_not_judged"] = (
                f"{bet['bets_without_round']:,} of {bet['bets_read']:,} bets name a round that is not in the "
                "round log: the bet log may be of another night or table, and its settlement is no verdict")
        found = found or bet["bets_flagged"] or by_check.get("DUPLICATE_BET", 0)
        quarantined = quarantined or bet["bets_quarantined"]
    flagged = ("findings" in options.fail_on and found) or ("quarantine" in options.fail_on and quarantined)
    summary["exit_code"] = EXIT_FLAGGED if flagged else EXIT_CLEAN
    return summary
