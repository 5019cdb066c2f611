"""The Spark engine gives the polars engine's findings, row for row (Spark in local mode)."""

import shutil

import polars as pl
import pytest

from conftest import ASSETS
from pipeline import audit, generate

pytest.importorskip("pyspark", reason="the spark extra is not installed (.ci/run installs it)")
if shutil.which("java") is None:
    pytest.skip("Spark needs Java 17+", allow_module_level=True)

from pipeline import spark  # noqa: E402

PER_ROUND = audit.Options(validate=False, across_rounds=False)


def test_spark_and_polars_give_the_same_findings_and_quarantine(tmp_path):
    log = generate.generate(25_000, seed=51, fault_rate=0.02, tables=3)  # several Arrow batches per task
    paths = generate.write(log, tmp_path / "log")
    inputs = [str(paths["parquet"]), str(ASSETS / "mixed_notation.csv")]
    on_spark = spark.audit(inputs, tmp_path / "spark", master="local[2]")
    on_polars = audit.audit(inputs, tmp_path / "polars", PER_ROUND).summary
    for name in ("findings.parquet", "quarantine.parquet"):
        expected = pl.read_parquet(tmp_path / "polars" / name)
        assert pl.read_parquet(tmp_path / "spark" / name).equals(expected), name
    assert expected.height == 4  # the hand-written rows that cannot be replayed
    for key in ("rows_read", "rounds_audited", "rows_quarantined", "rounds_flagged"):
        assert on_spark[key] == on_polars[key], key
    assert {k: v for k, v in on_spark["findings"].items()} == {
        k: on_polars["findings"][k] for k in on_spark["findings"]}
    assert on_spark["findings"]["DUPLICATE_ROUND"] > 2
