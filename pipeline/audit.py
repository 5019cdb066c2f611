"""The audit run: ingest -> replay -> checks -> findings, written to an output directory.

All row work is lazy polars; the three outputs (findings, quarantine, counts) come from one scan
through `pl.collect_all`. Files are written under a temporary name and moved into place, so a run that
dies never leaves a findings file that looks complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from pipeline import __version__, cards, ingest
from pipeline.checks import CHECKS, CODES
from pipeline.errors import EXIT_CLEAN, EXIT_FLAGGED, InputError
from pipeline.findings import round_findings
from pipeline.replay import replay

QUARANTINE_COLUMNS = ("source_row", *ingest.contract("round_log")["columns"], "reason")


def replayable(parsed: pl.LazyFrame) -> pl.LazyFrame:
    """Rows fit to replay, with card values in place of card codes, replayed."""
    values = {c.replace("_card", ""): cards.value_expr(pl.col(ingest.code_column(c)))
              for c in ingest.CARD_COLUMNS}
    return replay(parsed.filter(pl.col("reject").is_null()).with_columns(**values))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Result:
    summary: dict
    out_dir: Path

    @property
    def exit_code(self) -> int:
        return self.summary["exit_code"]


def audit(rounds: Path, out_dir: Path) -> Result:
    """Audit one round log into `out_dir` (findings.parquet, quarantine.parquet, summary.json)."""
    rounds = Path(rounds)
    started = datetime.now(UTC)
    log = ingest.scan(rounds, "round_log")
    parsed = ingest.parse_rounds(log.frame)
    # Checks that read a column the file does not have are reported as skipped, not passed.
    checks_ran = {
        c.code: "ran" if c.needs is None or c.needs in log.columns
        else f"skipped: the log has no {c.needs} column"
        for c in CHECKS
    }
    quarantine = parsed.filter(pl.col("reject").is_not_null()).select(
        *QUARANTINE_COLUMNS[:-1], reason=pl.col("reject")
    )
    counts = parsed.select(
        rows_read=pl.len(), rows_quarantined=pl.col("reject").is_not_null().sum()
    )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".audit-", dir=out_dir))
    try:
        _, _, counted = ingest.collect(
            log.path,
            [
                round_findings(replayable(parsed)).sink_parquet(staging / "findings.parquet", lazy=True),
                quarantine.sink_parquet(staging / "quarantine.parquet", lazy=True),
                counts,
            ],
        )
        findings = pl.read_parquet(staging / "findings.parquet")
        by_check = dict(findings.group_by("check").len().iter_rows())
        summary = {
            "tool": {"name": "baccarat-audit", "version": __version__},
            "started_at": started.isoformat(timespec="seconds"),
            "inputs": [{"role": "rounds", "path": str(rounds), "format": log.format,
                        "sha256": sha256(rounds)}],
            "rules": {"contract": "schemas/round_log.json",
                      "contract_sha256": sha256(ingest.SCHEMAS / "round_log.json")},
            "rows_read": counted["rows_read"][0],
            "rounds_audited": counted["rows_read"][0] - counted["rows_quarantined"][0],
            "rows_quarantined": counted["rows_quarantined"][0],
            "rounds_flagged": findings["source_row"].n_unique(),
            "findings": {code: by_check.get(code, 0) for code in CODES},
            "checks": checks_ran,
        }
        flagged = summary["rounds_flagged"] or summary["rows_quarantined"]
        summary["exit_code"] = EXIT_FLAGGED if flagged else EXIT_CLEAN
        (staging / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        for name in ("findings.parquet", "quarantine.parquet", "summary.json"):
            os.replace(staging / name, out_dir / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Result(summary, out_dir)


def first_findings(result: Result, count: int) -> list[dict]:
    """The first `count` findings of a finished run, in log order."""
    return pl.scan_parquet(result.out_dir / "findings.parquet").head(count).collect().to_dicts()
