"""Punto banco hand-history audit: replay recorded rounds and flag every departure from procedure.

Data flow, one module per stage: ingest -> replay -> checks -> findings -> report.
The rules themselves live in `tableau` (drawing) and `cards` (notation and values); the scalar
replay (`coup`) and the vectorized replay (`replay`) are two evaluators of that one statement.
"""

import os

__version__ = "0.1.0"

# Polars reads ahead at least 16 row groups of a Parquet scan, a default sized for object stores.
# The files an audit reads back grow with the log (findings.parquet: 20 row groups of 94,000 rows at
# 30M rounds), so read whole they took the nightly job's peak from 771 MiB at 10M rounds to
# 1,007 MiB at 30M. Two row groups ahead keep up with local disks (146 s instead of 139 s for 30M
# rounds with bets; 790 MiB instead of 900). Set before any query runs (polars reads it per query);
# a value in the environment wins.
os.environ.setdefault("POLARS_ROW_GROUP_PREFETCH_SIZE", "2")
