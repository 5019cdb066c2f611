"""The audit run: ingest -> replay -> checks -> findings (and settlement, integrity, fairness).

All row work is lazy polars; every output comes from one plan through `pl.collect_all`. Files are
written to a staging folder inside the output directory and moved into place only when the run is
complete, so a run that dies never leaves a findings file that looks complete, a failed run leaves the
previous result whole, and a re-run replaces it.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from collections.abc import Callable
from pathlib import Path

import polars as pl

from pipeline import __version__, cards, contract, evidence, fairness, ingest, integrity, profiles, report, settlement
from pipeline.checks import CHECKS, CODES
from pipeline.errors import EXIT_CLEAN, EXIT_FLAGGED, InputError
from pipeline.findings import FINDINGS_SCHEMA, round_findings
from pipeline.replay import replay

QUARANTINE_COLUMNS = ("source_file", "source_row", *ingest.columns("round_log"))
OUTPUTS = ("findings.parquet", "quarantine.parquet", "bets_quarantine.parquet", "fairness.parquet",
           "evidence.json", "summary.json", "report.html")
DOCS = "contract"  # the Great Expectations Data Docs folder in the output directory


def replayable(parsed: pl.LazyFrame) -> pl.LazyFrame:
    """Rows fit to replay, with card values beside their codes, replayed."""
    values = {c.replace("_card", ""): cards.value_expr(pl.col(ingest.code_column(c)))
              for c in ingest.CARD_COLUMNS}
    return replay(parsed.filter(pl.col("reject").is_null()).with_columns(**values))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def profiles_in(log: ingest.Log, default: str) -> list[str]:
    """The profiles a run needs: the default and every name in the log's `profile` column, all known."""
    profiles.load(default)
    names = {default}
    if "profile" in log.columns:
        found = ingest.collect(log.path, [log.frame.select(pl.col("profile").drop_nulls().unique())])[0]
        for name in found["profile"]:
            try:
                profiles.load(name)
            except InputError as error:
                raise InputError(f"{log.path}: column profile: {error}") from None
            names.add(name)
    return sorted(names)


@dataclass(frozen=True)
class Options:
    """How to run an audit; the defaults are the nightly job's."""

    bets: Path | None = None
    profile: str = profiles.DEFAULT
    mapping: ingest.Mapping | None = None
    bets_mapping: ingest.Mapping | None = None
    validate: bool = True  # run the Great Expectations suites and write their Data Docs
    window: contract.Window = contract.Window()
    fairness_threshold: float = fairness.DEFAULT_THRESHOLD
    selection: ingest.Selection = ingest.Selection()
    on_phase: Callable[[str], None] = lambda phase: None  # told each phase as it starts (progress display)
    across_rounds: bool = True  # integrity and fairness; off only to measure what they cost


@dataclass(frozen=True)
class Result:
    summary: dict
    out_dir: Path

    @property
    def exit_code(self) -> int:
        return self.summary["exit_code"]


@dataclass
class _Plan:
    """One pass over the data: files to sink and small frames to collect, from one scan."""

    sinks: dict[str, pl.LazyFrame] = field(default_factory=dict)
    frames: dict[str, pl.LazyFrame] = field(default_factory=dict)

    def run(self, path: Path, staging: Path) -> dict[str, pl.DataFrame]:
        sinks = [frame.sink_parquet(staging / name, lazy=True) for name, frame in self.sinks.items()]
        collected = ingest.collect(path, [*sinks, *self.frames.values()])[len(sinks):]
        return dict(zip(self.frames, collected))


REPLAYED = "replayed.parquet"  # the first pass's result, read by the second; never published


def _first_pass(log: ingest.Log, bet_log: ingest.Log | None, options: Options) -> _Plan:
    """Read and parse the log once: quarantine, counts, the contract's views, and the replayed rounds.

    The replayed rounds go to a staging Parquet file that every check of the second pass scans, so
    nothing is parsed twice and memory stays bounded whatever the size of the log.
    """
    plan = _Plan()
    parsed = ingest.parse_rounds(log.frame).with_columns(pl.col("profile").fill_null(options.profile))
    rejected = pl.col("reject").is_not_null()
    plan.sinks[REPLAYED] = replayable(parsed)
    plan.sinks["quarantine.parquet"] = parsed.filter(rejected).select(*QUARANTINE_COLUMNS, reason=pl.col("reject"))
    plan.frames["rows_per_file"] = log.frame.group_by("source_file").agg(pl.len().alias("rows"))
    if bet_log is not None:
        plan.frames["bets_per_file"] = bet_log.frame.group_by("source_file").agg(pl.len().alias("rows"))
    plan.frames["rounds"] = parsed.select(
        rows_read=pl.len(), rows_quarantined=rejected.sum(),
        suited_cards=pl.sum_horizontal((pl.col(ingest.code_column(c)) % 8 != 0).fill_null(False).cast(pl.UInt32)
                                       for c in ingest.CARD_COLUMNS).sum(),
    )
    if options.validate:
        plan.frames["rounds_view"] = contract.view(log, "round_log")
        if bet_log is not None:
            plan.frames["bets_view"] = contract.view(bet_log, "bet_log")
    return plan


def _second_pass(log: ingest.Log, bet_log: ingest.Log | None, names: list[str], options: Options,
                 started: datetime, staging: Path) -> _Plan:
    """Every check over the replayed rounds (and the bets), and the fairness counts."""
    plan = _Plan()
    replayed = pl.scan_parquet(staging / REPLAYED)
    decks = pl.LazyFrame({"profile": names, "decks": [profiles.load(n).decks for n in names]},
                         schema={"profile": pl.String, "decks": pl.Int64})
    findings = [round_findings(replayed)]
    if options.across_rounds:
        findings.append(integrity.integrity_findings(replayed, decks, log.columns, started))
        levels = [level for level in fairness.LEVELS if level in log.columns]
        if levels:
            plan.frames["fairness"] = fairness.observed_counts(replayed, levels)
    if bet_log is not None:
        quarantined = pl.scan_parquet(staging / "quarantine.parquet")
        settled = settlement.settle(bet_log.frame, settlement.round_facts(replayed), quarantined, names)
        findings.append(settlement.bet_findings(settled).cast(FINDINGS_SCHEMA))
        plan.frames["bets"] = settlement.bet_counts(settled)
        plan.sinks["bets_quarantine.parquet"] = settled.filter(pl.col("reject").is_not_null()).select(
            *settlement.BET_COLUMNS, reason=pl.col("reject"))
    plan.sinks["findings.parquet"] = pl.concat(findings)
    return plan


def audit(rounds: Path | str | list, out_dir: Path, options: Options = Options()) -> Result:
    """Audit a round log (a file, a directory, a glob or a list: see `ingest.expand`) into `out_dir`."""
    started = datetime.now(UTC)
    if options.validate:
        contract.preload()
    log = ingest.scan(rounds, "round_log", options.mapping, options.selection)
    bet_log = ingest.scan(options.bets, "bet_log", options.bets_mapping) if options.bets else None
    names = profiles_in(log, options.profile)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".audit-", dir=out_dir))
    try:
        options.on_phase("reading and replaying")
        counted = _first_pass(log, bet_log, options).run(log.path, staging)
        options.on_phase("checking")
        counted |= _second_pass(log, bet_log, names, options, started, staging).run(log.path, staging)
        options.on_phase("fairness statistics")
        tests = _fairness(counted, options, staging)
        findings = pl.read_parquet(staging / "findings.parquet")
        summary = _summary(started, log, bet_log, names, counted, findings, tests, options)
        if options.validate:
            options.on_phase("input contract (Great Expectations)")
            summary["contract"] = {
                role: contract.validate(counted[f"{role}_view"], name, options.window, staging / DOCS)
                for role, name in (("rounds", "round_log"), ("bets", "bet_log")) if f"{role}_view" in counted
            }
            if not all(result["success"] for result in summary["contract"].values()):
                summary["exit_code"] = EXIT_FLAGGED
        (staging / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        options.on_phase("report")
        gathered = evidence.gather(findings, log, bet_log, options.profile)
        (staging / "evidence.json").write_text(json.dumps(gathered, indent=1, default=str) + "\n")
        report.write(staging)
        _publish(staging, out_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Result(summary, out_dir)


def _fairness(counted: dict[str, pl.DataFrame], options: Options, staging: Path) -> pl.DataFrame | None:
    """Write fairness.parquet and add TABLE_STATS findings; None when the log has no table, dealer or shoe."""
    if "fairness" not in counted:
        return None
    levels = [c for c in fairness.LEVELS if c in counted["fairness"].columns]
    decks_of = {name: profiles.load(name).decks for name in counted["fairness"]["profile"].unique()}
    tests = fairness.statistics(fairness.group_counts(counted["fairness"], decks_of, levels),
                                options.fairness_threshold)
    tests.write_parquet(staging / "fairness.parquet")
    flagged = fairness.table_findings(tests, options.fairness_threshold)
    if flagged.height:
        found = pl.concat([pl.read_parquet(staging / "findings.parquet"), flagged])
        found.write_parquet(staging / "findings.parquet")
    return tests


def _publish(staging: Path, out_dir: Path) -> None:
    """Move the finished outputs into place; remove what an earlier run left that this one did not write."""
    for name in OUTPUTS:
        if (staging / name).exists():
            os.replace(staging / name, out_dir / name)
        elif (out_dir / name).exists():
            (out_dir / name).unlink()
    if (staging / DOCS).exists():
        contract.move_docs(staging / DOCS, out_dir / DOCS)
    elif (out_dir / DOCS).exists():
        shutil.rmtree(out_dir / DOCS)


def _inputs(role: str, log: ingest.Log, mapping: ingest.Mapping | None, rows: pl.DataFrame) -> list[dict]:
    """One provenance entry per file: path, format, rows read from it, SHA-256 (and the mapping)."""
    counts = dict(rows.iter_rows())
    entries = []
    for path, file_format in zip(log.files, log.formats):
        entry = {"role": role, "path": str(path), "format": file_format, "rows": counts.get(str(path), 0),
                 "sha256": sha256(path)}
        if mapping is not None:
            entry["mapping"] = {"path": str(mapping.path), "sha256": sha256(mapping.path)}
        entries.append(entry)
    return entries


def _summary(started: datetime, log: ingest.Log, bet_log: ingest.Log | None, names: list[str],
             counted: dict[str, pl.DataFrame], findings: pl.DataFrame, tests: pl.DataFrame | None,
             options: Options) -> dict:
    rounds = counted["rounds"].row(0, named=True)
    by_check = dict(findings.group_by("check").len().iter_rows())
    codes = (*CODES, *integrity.CODES, "TABLE_STATS", *(("SETTLEMENT",) if bet_log is not None else ()))
    checks = {c.code: "ran" if c.needs is None or c.needs in log.columns
              else f"skipped: the log has no {c.needs} column" for c in CHECKS}
    checks |= integrity.requirements(log.columns, rounds["suited_cards"])
    checks["TABLE_STATS"] = "ran" if "table_id" in log.columns else "skipped: the log has no table_id column"
    if not options.across_rounds:
        checks |= {code: "skipped: turned off" for code in (*integrity.CODES, "TABLE_STATS")}
    inputs = _inputs("rounds", log, options.mapping, counted["rows_per_file"])
    summary = {
        "tool": {"name": "baccarat-audit", "version": __version__},
        "started_at": started.isoformat(timespec="seconds"),
        "inputs": inputs,
        "rules": {
            "contract": {"schemas/round_log.json": sha256(ingest.SCHEMAS / "round_log.json")},
            "profiles": {name: profiles.load(name).sha256 for name in names},
        },
        "rows_read": rounds["rows_read"],
        "rounds_audited": rounds["rows_read"] - rounds["rows_quarantined"],
        "rows_quarantined": rounds["rows_quarantined"],
        "rounds_flagged": findings.filter((pl.col("source") == "rounds") & pl.col("round_id").is_not_null())
        ["source_row"].n_unique(),
        "findings": {code: by_check.get(code, 0) for code in codes},
        "selection": {"tables": list(options.selection.tables), "shoes": list(options.selection.shoes),
                      "since": options.selection.since and options.selection.since.isoformat(),
                      "until": options.selection.until and options.selection.until.isoformat()}
        if options.selection else None,
        "checks": checks,
    }
    if tests is not None:
        table_level = tests.filter(pl.col("level") == "table")
        summary["fairness"] = {
            "threshold": options.fairness_threshold,
            "correction": "Benjamini-Hochberg over every table's chi-square, natural and pair tests",
            "tables_flagged": sorted(set(table_level.filter(pl.col("flagged"))["group"])),
            "tables": table_level.to_dicts(),
        }
    flagged = summary["rounds_flagged"] or summary["rows_quarantined"] or by_check.get("TABLE_STATS", 0)
    if bet_log is not None:
        bet = counted["bets"].row(0, named=True)
        inputs += _inputs("bets", bet_log, options.bets_mapping, counted["bets_per_file"])
        summary["rules"]["contract"]["schemas/bet_log.json"] = sha256(ingest.SCHEMAS / "bet_log.json")
        summary |= {
            "bets_read": bet["bets_read"],
            "bets_settled": bet["bets_read"] - bet["bets_quarantined"],
            "bets_quarantined": bet["bets_quarantined"],
            "bets_flagged": bet["bets_flagged"],
            "overpaid": settlement.e12_text(bet["overpaid_e12"] or 0),
            "underpaid": settlement.e12_text(bet["underpaid_e12"] or 0),
        }
        flagged = flagged or bet["bets_flagged"] or bet["bets_quarantined"]
    summary["exit_code"] = EXIT_FLAGGED if flagged else EXIT_CLEAN
    return summary


def first_findings(result: Result, count: int) -> list[dict]:
    """The first `count` findings of a finished run, in log order."""
    return pl.scan_parquet(result.out_dir / "findings.parquet").head(count).collect().to_dicts()
