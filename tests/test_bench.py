"""The benchmark measures the audit's work: on a faulted log, its row-by-row replay and its bare replay
flag the rounds the audit's per-round checks flag. The bench prints whether they do on its own logs;
this holds them to it on every run of the suite."""

import importlib.util
import json
from pathlib import Path

import polars as pl

from pipeline import audit

BENCH = Path(__file__).parent.parent / "bench" / "bench.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_bench_replays_flag_the_rounds_the_per_round_checks_flag(faulted_log, tmp_path):
    """Some rows also get a card no notation spells, an opening card or a third: the audit quarantines
    them, and both replays pass over them."""
    bench, log = _bench(), tmp_path / "rounds.parquet"
    row = pl.int_range(pl.len())
    pl.read_parquet(faulted_log["parquet"]).with_columns(
        player_card_2=pl.when(row % 300 == 7).then(pl.lit("ZZ")).otherwise(pl.col("player_card_2")),
        banker_card_3=pl.when(row % 300 == 150).then(pl.lit("11H")).otherwise(pl.col("banker_card_3")),
    ).write_parquet(log)
    audit.audit(log, tmp_path / "out", audit.Options(validate=False, across_rounds=False))
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["rows_quarantined"] == 40
    flagged = bench.per_round_flagged(tmp_path / "out")
    assert flagged > 100  # 5% of 6,000 rounds faulted, most of them in a way a single round shows
    assert bench.row_by_row(log) == flagged
    assert bench.bare_replay(log) == flagged
