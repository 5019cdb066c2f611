"""The Spark engine gives the polars engine's findings, row for row (Spark in local mode)."""

import shutil

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from conftest import ASSETS
from pipeline import audit, generate

pytest.importorskip("pyspark", reason="the spark extra is not installed (.ci/run installs it)")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java 17+", allow_module_level=True)

from pipeline import spark  # noqa: E402

WITHOUT_CONTRACT = audit.Options(validate=False)


def test_spark_and_polars_give_the_same_findings_quarantine_and_fairness(tmp_path):
    """Every check the Spark engine runs (per round, duplicates, integrity, fairness) gives the polars
    engine's findings row for row, on a generated log (several Arrow batches and shoe partitions per
    task, faults of every kind) and a hand-written one (rows that cannot be replayed, mixed notation)."""
    log = generate.generate(25_000, seed=51, fault_rate=0.02, tables=3)
    paths = generate.write(log, tmp_path / "log")
    inputs = [str(paths["parquet"]), str(ASSETS / "mixed_notation.csv")]
    on_spark = spark.audit(inputs, tmp_path / "spark", WITHOUT_CONTRACT, master="local[2]")
    on_polars = audit.audit(inputs, tmp_path / "polars", WITHOUT_CONTRACT).summary
    for name in ("findings.parquet", "quarantine.parquet"):
        expected = pl.read_parquet(tmp_path / "polars" / name)
        assert pl.read_parquet(tmp_path / "spark" / name).equals(expected), name
    assert expected.height == 4  # the hand-written rows that cannot be replayed
    # Expected counts are float sums over cells, whose order a group-by does not fix: equal to rounding.
    assert_frame_equal(pl.read_parquet(tmp_path / "spark" / "fairness.parquet"),
                       pl.read_parquet(tmp_path / "polars" / "fairness.parquet"), check_exact=False, rel_tol=1e-12)
    for key in ("rows_read", "rounds_audited", "rows_quarantined", "rounds_flagged", "findings", "checks", "inputs"):
        assert on_spark[key] == on_polars[key], key
    assert all(on_spark["findings"][code] > 0 for code in ("DUPLICATE_ROUND", "CARD_COUNT", "SHOE_SEQUENCE",
                                                            "TIMESTAMP", "PLAYER_DRAW", "BANKER_DRAW"))
    assert on_spark["tool"]["engine"] == "spark" and "report" in on_spark["not_run"]


def test_spark_refuses_what_it_does_not_run(tmp_path):
    from pipeline.errors import InputError

    with pytest.raises(InputError, match="--engine spark does not run --bets"):
        spark.audit([str(ASSETS / "mixed_notation.csv")], tmp_path,
                    audit.Options(bets=ASSETS / "mixed_notation_bets.csv"), master="local[1]")


def test_the_cli_refuses_a_selection_on_spark_in_one_line(tmp_path):
    from typer.testing import CliRunner

    from pipeline.cli import app

    result = CliRunner().invoke(app, ["audit", str(ASSETS / "mixed_notation.csv"), "--engine", "spark",
                                      "--table", "T01", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: --engine spark does not run --table/--shoe/--since/--until yet; use --engine polars"]
