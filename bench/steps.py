"""The audit's read phase step by step: the CPU time of each step the one read (`run._read_once`) takes
on every piece of a round log, each step run alone, in the read's order, for a table beside the probe's
`--steps` (docs/performance.md, "Where the time goes, beside the probe"). Run with one polars thread, as
the probe's steps run on one:

POLARS_MAX_THREADS=1 python bench/steps.py LOG.parquet
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import baccarat_audit  # noqa: F401  before polars, as the CLI imports it
import polars as pl

from baccarat_audit import tuning
from baccarat_audit.checks import expectations, fairness, integrity, open_shoes
from baccarat_audit.checks.findings import HeldKeys, round_findings
from baccarat_audit.checks.round_checks import PER_ROUND
from baccarat_audit.engines import run
from baccarat_audit.engines.staging import STAGING_PARQUET
from baccarat_audit.inputs import ingest
from baccarat_audit.inputs.ids import id_key
from baccarat_audit.inputs.timestamps import utc_column, with_timestamp


def main(path: Path) -> None:
    log, options = ingest.scan(path, "round_log"), run.Options()
    spent: dict[str, float] = defaultdict(float)

    def step(name: str, work):
        start = time.process_time()
        done = work()
        spent[name] += time.process_time() - start
        return done

    scratch = Path(tempfile.mkdtemp())
    (scratch / run.STAGED).mkdir()
    shoes = integrity.InLogOrder(log.columns, datetime.now(UTC), lambda named: integrity.decks_of(
        run.profiles_in(named, log.path, options.profile)), scratch / "integrity")
    still_open, keys = open_shoes.OpenShoes(), HeldKeys(sum(log.rows_per_file))
    singles = expectations.Singles.of("round_log", log.columns, options.window, parsed_cards=True)
    levels = [level for level in fairness.LEVELS if level in log.columns]
    staged, first = run.staged_columns(options, shoes=False), 0
    sizes = tuning.current()
    for i, piece in enumerate(log.pieces(min(sizes.read_rows, sizes.piece_rows))):
        text = step("read as text (ingest.Log.frame)",
                    lambda: ingest.collect(log.path, [piece.with_row_index("log_row", offset=first)])[0])
        first += text.height
        parsed = step("card codes, reject", lambda: ingest.parse_rounds(text.lazy()).with_columns(
            pl.col("profile").fill_null(options.profile)).collect())
        replayed = step("replay", lambda: run.replayed(parsed.lazy()).collect())
        keyed = step("round_id hashed", lambda: replayed.with_columns(id_key=id_key(pl.col("round_id"))))
        frame = step("dealt_at as UTC", lambda: with_timestamp(keyed.lazy(), "dealt_at", utc_column("dealt_at")).collect())
        step("staged", lambda: ingest.write_parquet(frame.select(staged), scratch / run.STAGED / f"{i:06d}.parquet",
                                                    **STAGING_PARQUET))
        step("round_id hashed", lambda: keys.add(frame.select(
            pl.col("id_key").filter(pl.col("round_id").is_not_null())).to_series()))
        flagged = frame.lazy().filter(pl.col("reject").is_null() & pl.any_horizontal(c.flag for c in PER_ROUND))
        step("per-round flags, findings' texts",
             lambda: round_findings(flagged.collect().rechunk().lazy(), PER_ROUND).collect())
        step("counts, quarantine, profiles", lambda: pl.collect_all([
            run.tallies(frame.lazy()), run.quarantined(frame.lazy()), frame.lazy().select(pl.col("profile").unique())]))
        step("fairness cells", lambda: fairness.observed_counts(frame.lazy(), levels).collect())
        step("contract counts", lambda: singles.count(frame))
        step("CARD_COUNT, SHOE_SEQUENCE, TIMESTAMP", lambda: shoes.add(frame))
        step("open shoes", lambda: still_open.add(frame))
    step("CARD_COUNT, SHOE_SEQUENCE, TIMESTAMP", shoes.finish)
    step("repeated hashes", lambda: keys.repeated("id_key"))
    for name, seconds in spent.items():
        print(f"{seconds:7.2f} s  {name}")
    print(f"{sum(spent.values()):7.2f} s  total ({first:,} rows; the shoes {'in' if shoes.in_order else 'out of'} log order)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
