"""The audit's own Parquet files (staging, scratch, outputs) read back by name, never as a pattern.

Polars takes every path it scans for a glob unless told not to: an output folder named `out[1]` was
read as the pattern matching `out1`, and the audit failed on its own staged files.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl


def scan(path: Path | list[Path], file_column: str | None = None) -> pl.LazyFrame:
    """A file, a list of files, or every Parquet file in a folder (in name order), as one frame; with
    `file_column`, each row's file path in that column."""
    if isinstance(path, Path) and path.is_dir():
        path = sorted(path.glob("*.parquet"))
    return pl.scan_parquet(path, glob=False, include_file_paths=file_column)
