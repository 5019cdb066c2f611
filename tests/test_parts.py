"""Rows written by part and read back a part at a time (pipeline.engines.parts), by bucket past `Tuning.fan_out`."""

import polars as pl
import pyarrow.parquet as pq
import pytest

from baccarat_audit.engines import parts
from baccarat_audit import tuning
from baccarat_audit.tuning import Tuning


@pytest.mark.parametrize("fan_out", [3, 256])
def test_each_part_reads_back_exactly_its_rows_from_every_piece(tmp_path, fan_out):
    """Four pieces written by ten parts: each part read back holds every row of its key and no other,
    however the parts are filed; past `fan_out` parts a piece is written into no more than `fan_out` files."""
    # Parts of about 120 rows split in row groups of 50: three row groups each.
    with tuning.using(Tuning(fan_out=fan_out, split_row_group=50)):
        _each_part_reads_back_exactly_its_rows(tmp_path, fan_out)


def _each_part_reads_back_exactly_its_rows(tmp_path, fan_out):
    count = 10
    pieces = [pl.DataFrame({"round_id": [f"R{i}-{j}" for j in range(300)], "stake": range(300)}) for i in range(4)]
    for i, piece in enumerate(pieces):
        parts.write(piece.lazy(), parts.part_of(pl.col("round_id"), count), count, tmp_path, f"{i:06d}").collect()
    assert len(list(tmp_path.rglob("*.parquet"))) <= len(pieces) * min(fan_out, count)
    log = pl.concat(pieces).with_columns(parts.part_of(pl.col("round_id"), count))
    schema = pieces[0].schema
    read = [parts.read(tmp_path, k, schema).collect() for k in range(count)]
    for k, rows in enumerate(read):
        assert rows.schema == schema
        assert sorted(rows["round_id"]) == sorted(log.filter(pl.col("part") == k)["round_id"]), k
    assert sum(rows.height for rows in read) == log.height
    assert not (tmp_path / parts.BUCKETS).exists()
    # A part split from its bucket is in small row groups: read in one, it was decoded whole by the join.
    split = [pq.ParquetFile(f).metadata for f in tmp_path.rglob("split-*.parquet")]
    assert (len(split) > 0) == (fan_out < count)
    assert all(m.row_group(g).num_rows <= 50 for m in split for g in range(m.num_row_groups))


def test_a_part_no_row_fell_in_reads_as_empty_with_the_written_schema(tmp_path):
    """Only the parts a row fell in are `filled`, asked before any part is read (the buckets split
    first); a folder nothing was written to has none."""
    frame = pl.LazyFrame({"key": [7, 7, 7]})
    with tuning.using(Tuning(fan_out=2)):
        parts.write(frame, pl.col("key") % 6, 6, tmp_path, "000000").collect()
    assert parts.filled(tmp_path / "unwritten") == []
    assert parts.filled(tmp_path) == [1]
    assert [parts.read(tmp_path, k, frame.collect_schema()).collect().height for k in range(6)] == [0, 3, 0, 0, 0, 0]
