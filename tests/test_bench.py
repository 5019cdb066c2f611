"""The benchmark measures the audit's work: on a faulted log, its row-by-row replay, its bare replay and
its DuckDB peer query flag the rounds the audit's per-round checks flag (and the peer its duplicates).
The bench prints whether they do on its own logs; this holds them to it on every run of the suite."""

import importlib.util
import json
from pathlib import Path

import polars as pl
import pytest

from baccarat_audit.engines import run

BENCH = Path(__file__).parent.parent / "bench" / "bench.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _spoilt(faulted_log, tmp_path) -> Path:
    """The faulted log with a card no notation spells on some rows, an opening card or a third (the
    audit quarantines them, and every replay passes over them), and some rows exported twice."""
    log, row = tmp_path / "rounds.parquet", pl.int_range(pl.len())
    rounds = pl.read_parquet(faulted_log["parquet"]).with_columns(
        player_card_2=pl.when(row % 300 == 7).then(pl.lit("ZZ")).otherwise(pl.col("player_card_2")),
        banker_card_3=pl.when(row % 300 == 150).then(pl.lit("11H")).otherwise(pl.col("banker_card_3")),
    )
    pl.concat([rounds, rounds.slice(1000, 25)]).write_parquet(log)
    return log


def test_the_bench_replays_flag_the_rounds_the_per_round_checks_flag(faulted_log, tmp_path):
    bench, log = _bench(), _spoilt(faulted_log, tmp_path)
    run.audit(log, tmp_path / "out", run.Options(validate=False, across_rounds=False))
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["rows_quarantined"] == 40
    flagged = bench.per_round_flagged(tmp_path / "out")
    assert flagged > 100  # 5% of 6,000 rounds faulted, most of them in a way a single round shows
    assert bench.row_by_row(log) == flagged
    assert bench.bare_replay(log) == flagged


def test_the_duckdb_peer_flags_the_rounds_and_duplicates_the_audit_flags(faulted_log, tmp_path):
    pytest.importorskip("duckdb", reason="the bench's extra: pip install -e '.[bench]'")
    bench, log = _bench(), _spoilt(faulted_log, tmp_path)
    result = run.audit(log, tmp_path / "out", run.Options(validate=False, across_rounds=False))
    assert bench.duckdb_peer(log, tmp_path / "peer" / "flagged.parquet") == bench.per_round_flagged(tmp_path / "out")
    duplicates = pl.read_parquet(tmp_path / "peer" / "flagged.parquet")["duplicate_round"].sum()
    assert duplicates == result.summary["findings"]["DUPLICATE_ROUND"] >= 50
