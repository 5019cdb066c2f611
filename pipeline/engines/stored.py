"""The audit's own Parquet files (staging, scratch, outputs) read back by name, never as a pattern.

Polars takes every path it scans for a glob unless told not to: an output folder named `out[1]` was
read as the pattern matching `out1`, and the audit failed on its own staged files.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl


def scan(path: Path | list[Path]) -> pl.LazyFrame:
    """A file, a list of files, or every Parquet file in a folder (in name order), as one frame."""
    if isinstance(path, Path) and path.is_dir():
        path = sorted(path.glob("*.parquet"))
    return pl.scan_parquet(path, glob=False)
