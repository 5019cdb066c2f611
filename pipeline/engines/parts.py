"""Rows written by part, so that a part of a whole log can be read back for its size alone.

A check that must see every row with the same key together (a join on round_id, a uniqueness test)
cannot run on pieces of the log. Each piece is written a file per part of the key (a hash modulo the
number of parts), and one part is read back from its own files.

The number of parts grows with the log (a part is a fraction of a piece), so a file per part and
piece would grow as its square, and the writers a piece holds open with it. Past `Tuning.fan_out`
parts (each open file holds a writer, so memory and the number of files grew with the parts), a
piece is written a file per bucket of consecutive parts, and when the first part is read every
bucket is split into its parts, a bucket at a time.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import polars as pl

from . import stored
from .. import tuning

BUCKETS = "buckets"


def part_of(key: pl.Expr, parts: int) -> pl.Expr:
    """The part a row goes to: its key's 64-bit hash modulo `parts` (equal keys, same part)."""
    return (key.hash(seed=0) % parts).alias("part")


def _sink(frame: pl.LazyFrame, key: str, folder: Path, name: str, **options) -> pl.LazyFrame | None:
    """`frame` written into `folder` a file per value of its column `key` (KEY/NAME-N.parquet), as it
    streams: sorted by part into one file, with small row groups for a part's scan to skip the others
    by, the sort held the piece and took longer. The files are read back here and never published,
    each part whole: lz4 writes faster than zstd, and no statistics are kept, which only a search
    would use."""
    def file_of(written: pl.io.partition.FileProviderArgs) -> str:
        return f"{written.partition_keys[key][0]}/{name}-{written.index_in_partition}.parquet"

    return frame.sink_parquet(pl.PartitionBy(folder, key=key, include_key=False, file_path_provider=file_of),
                              compression="lz4", statistics=False, mkdir=True, **options)


def write(frame: pl.LazyFrame, part: pl.Expr, parts: int, folder: Path, name: str) -> pl.LazyFrame:
    """The sink (lazy) writing `frame` by `part` (numbering `parts` parts from 0) into `folder`: a
    file per part it has rows of, or past `Tuning.fan_out` parts a file per bucket of them (see `read`)."""
    parted = frame.with_columns(part.alias("part"))
    per_bucket = -(-parts // tuning.current().fan_out)
    if per_bucket == 1:
        return _sink(parted, "part", folder, name, lazy=True)
    bucketed = parted.with_columns(part_bucket=pl.col("part") // per_bucket)
    return _sink(bucketed, "part_bucket", folder / BUCKETS, name, lazy=True)


def read(folder: Path, part: int, schema: pl.Schema) -> pl.LazyFrame:
    """The rows of one part from every file `write` put in `folder`; `schema` is the written frames',
    for a part no row fell in (it has no file)."""
    _unbucket(folder)
    if not (folder / str(part)).is_dir():
        return pl.LazyFrame(schema=schema)
    return stored.scan(folder / str(part))


def filled(folder: Path) -> list[int]:
    """The parts `write` put a row of in `folder`, in order."""
    _unbucket(folder)
    return sorted(int(path.name) for path in folder.iterdir()) if folder.is_dir() else []


def _unbucket(folder: Path) -> None:
    """At the first read of a folder written by bucket, every bucket split into its parts (and
    removed), a bucket at a time: a pass over a bucket's rows with a writer per part in it."""
    buckets = folder / BUCKETS  # there only when `write` filed by bucket (a part's folder is its number)
    if buckets.is_dir():
        for bucket in sorted(buckets.iterdir()):
            _sink(stored.scan(bucket), "part", folder, "split", lazy=False,
                  row_group_size=tuning.current().split_row_group)
            shutil.rmtree(bucket)
        buckets.rmdir()


def each(frames: list[pl.LazyFrame], part: pl.Expr, parts: int, collect: Callable[[pl.LazyFrame], pl.DataFrame],
         scratch: Path | None) -> Iterator[pl.DataFrame]:
    """The rows of `frames` (one query each, run by `collect`) a part at a time, `part` numbering them
    from 0 to `parts` - 1. With a `scratch` folder, each frame is written there a file per part (`write`)
    and each part read back alone (`read`), so memory holds a part, not the log: held whole, the columns
    integrity's windows over shoes need grew the audit's peak with the log. Without one (a Spark task,
    which holds its partition anyway), they are held and filtered."""
    if scratch is None:
        held = pl.concat([collect(frame) for frame in frames])
        yield from (held.filter(part == k) for k in range(parts))
        return
    for i, frame in enumerate(frames):
        collect(write(frame, part, parts, scratch, f"{i:06d}"))
    schema = frames[0].collect_schema()
    yield from (collect(read(scratch, k, schema)) for k in range(parts))
