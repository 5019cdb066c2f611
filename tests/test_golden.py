"""The golden audit: a hostile log and its bets (tests/assets/golden, dealt by its make.py), audited as
CSV and as Parquet, must give the outputs committed beside it, row for row: findings, quarantine and
bet quarantine with their reason texts, fairness counts, and the summary's counts and contract. It
guards every rewrite of the batch path. After a deliberate change of output, rewrite the expected
files with `UPDATE_GOLDEN=1 pytest tests/test_golden.py` and review their diff."""

import json
import os
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from baccarat_audit.engines import run
from baccarat_audit.tuning import Tuning

GOLDEN = Path(__file__).parent / "assets" / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
GROUP_ROWS, READ_ROWS = 97, 150
TABLES = ("findings", "quarantine", "bets_quarantine")
#: What the summary says that does not depend on when, where or by whom the run was made.
SUMMARY_KEYS = ("rows_read", "rounds_audited", "rows_quarantined", "rounds_flagged", "findings", "checks",
                "period", "bets_read", "bets_settled", "bets_quarantined", "bets_flagged", "overpaid",
                "underpaid", "money", "exit_code")


def _logs(file_format: str, folder: Path) -> tuple[Path, Path]:
    """The golden logs as `file_format`: the CSV files, or Parquet files of the same text, in one row
    group or in row groups of GROUP_ROWS."""
    if file_format == "csv":
        return GOLDEN / "rounds.csv", GOLDEN / "bets.csv"
    paths = []
    for name in ("rounds", "bets"):
        path = folder / f"{name}.parquet"
        grouped = GROUP_ROWS if file_format.startswith("parquet in row groups") else None
        pl.read_csv(GOLDEN / f"{name}.csv", infer_schema=False).write_parquet(path, row_group_size=grouped)
        paths.append(path)
    return paths[0], paths[1]


def _comparable(frame: pl.DataFrame) -> pl.DataFrame:
    """Outputs as text, with each file named by its name alone (the same for either format), without
    the run's id (a new one each run)."""
    named = frame.with_columns(pl.col("source_file").str.extract(r"([^/]+)\.(csv|parquet)$", 1))
    return named.select(pl.exclude("run_id").cast(pl.String))


def _fairness(out: Path) -> pl.DataFrame:
    """fairness.parquet with its figures to 9 significant digits (summed in another order, a float may
    differ in its last bits; `fairness.group_counts` fixes the order, so today they do not)."""
    return pl.read_parquet(out / "fairness.parquet").with_columns(pl.col(pl.Float64).round_sig_figs(9))


def _summary(out: Path) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    kept = {key: summary[key] for key in SUMMARY_KEYS}
    fields = ("type", "column", "success", "unexpected_count", "element_count", "skipped")
    kept["contract"] = {role: [[e.get(field) for field in fields] for e in result["expectations"]]
                        for role, result in summary["contract"].items()}
    kept["fairness"] = {"tables_flagged": summary["fairness"]["tables_flagged"]}
    return kept


@pytest.mark.parametrize("file_format", ["csv", "parquet", "parquet in row groups",
                                         "parquet in row groups, read whole"])
def test_the_golden_logs_give_the_golden_outputs(file_format, tmp_path):
    """In row groups of GROUP_ROWS, read READ_ROWS at a time, a piece of the log runs from the middle of
    one row group to the middle of another; read whole, one piece holds every row group, and each of
    its columns is in as many chunks."""
    rounds, bets = _logs(file_format, tmp_path)
    sizes = Tuning(read_rows=READ_ROWS) if file_format == "parquet in row groups" else Tuning()
    result = run.audit(rounds, tmp_path / "out", run.Options(bets=bets, tuning=sizes))
    out = tmp_path / "out"
    found = {name: _comparable(pl.read_parquet(out / f"{name}.parquet")) for name in TABLES}
    found["fairness"] = _fairness(out)
    if UPDATE and file_format == "csv":
        for name, frame in found.items():
            frame.write_csv(GOLDEN / f"expected_{name}.csv")
        (GOLDEN / "expected_summary.json").write_text(json.dumps(_summary(out), indent=1) + "\n")
    for name, frame in found.items():
        expected = pl.read_csv(GOLDEN / f"expected_{name}.csv", schema=frame.schema)
        assert_frame_equal(frame, expected, check_exact=True), name
    assert _summary(out) == json.loads((GOLDEN / "expected_summary.json").read_text())
    assert result.summary["findings"]["SETTLEMENT"] > 0 and result.summary["rows_quarantined"] > 0
