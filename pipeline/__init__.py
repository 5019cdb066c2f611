"""Punto banco hand-history audit: replay recorded rounds and flag every departure from procedure.

Data flow, one module per stage: ingest -> replay -> checks -> findings -> report.
The rules themselves live in `tableau` (drawing) and `cards` (notation and values); the scalar
replay (`coup`) and the vectorized replay (`replay`) are two evaluators of that one statement.
"""

import os

__version__ = "0.1.0"

# Polars reads ahead at least 16 row groups of a Parquet scan, a default sized for object stores. The
# files an audit reads back grow with the log (findings.parquet: 38 row groups at 60M rounds), and a
# query over one then grew with it: a plain copy of the findings of 30M and of 60M rounds peaked at
# 480 and 564 MiB as polars ships, 318 and 470 MiB reading two ahead, 275 and 275 MiB reading one.
# One ahead keeps up with local disks: the audit of 10M rounds with bets took 35.1 to 35.8 s against
# 34.6 to 35.1 s reading two. Set before any query runs (polars reads it per query); a value in the
# environment wins.
os.environ.setdefault("POLARS_ROW_GROUP_PREFETCH_SIZE", "1")
