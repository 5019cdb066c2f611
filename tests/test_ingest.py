"""Bad input: every case gets one line naming the file and what was expected, or a quarantine with
reasons while the rest is audited. Never a traceback; the counts always add up."""

import csv
import json
import math
import os
import struct
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from conftest import ASSETS, cli, cli_peak, output
from baccarat_audit.inputs import discover, formats, ingest
from baccarat_audit.engines import run
from baccarat_audit import tuning
from baccarat_audit.errors import InputError
from baccarat_audit.inputs.selection import Selection
from baccarat_audit.inputs.timestamps import timestamp, with_timestamp
from baccarat_audit.tuning import Tuning

HEADER = "round_id,player_card_1,banker_card_1,player_card_2,banker_card_2,player_card_3,banker_card_3,player_total"
GOOD = "R1,KS,9H,5D,QC,,,5"


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, str):
        content = content.encode()
    path.write_bytes(content)
    return path


def _parquet_bytes(tmp_path: Path) -> bytes:
    pl.read_csv(ASSETS / "mixed_notation.csv", infer_schema=False).write_parquet(tmp_path / "whole.parquet")
    return (tmp_path / "whole.parquet").read_bytes()


def _corrupt(data: bytes) -> bytes:
    middle = bytearray(data)
    middle[8:-200] = b"\x55" * len(middle[8:-200])
    return bytes(middle)


def _nested(folder: Path, column: pl.Expr) -> Path:
    log = pl.read_csv(ASSETS / "mixed_notation.csv", infer_schema=False).with_columns(column)
    log.write_parquet(folder / "nested.parquet")
    return folder / "nested.parquet"


def _headers_only(folder: Path) -> Path:
    for name in ("a.csv", "b.csv"):
        write(folder / name, HEADER + "\n")
    return folder


EMPTY = "{}player_card_1 is empty; player_card_2 is empty; banker_card_1 is empty; banker_card_2 is empty"

UNRUNNABLE = {
    "missing file": (lambda d: d / "nowhere.csv", "nowhere.csv: no such file"),
    "an empty directory": (lambda d: d, "the directory holds no .csv, .jsonl or .parquet file"),
    "neither CSV nor Parquet": (lambda d: write(d / "log.xlsx", "PK\x03\x04"), "neither CSV (.csv), JSON"),
    "empty file": (lambda d: write(d / "empty.csv", ""), "the file is empty"),
    "header only": (lambda d: write(d / "header.csv", HEADER + "\n"), "the header has no rows under it"),
    "a folder of headers only": (lambda d: _headers_only(d), "none of its 2 files has a row under its header"),
    "required column missing": (lambda d: write(d / "cols.csv", "round_id,player_card_1\nR1,KS\n"),
                                "required column banker_card_1"),
    "duplicate columns": (lambda d: write(d / "dup.csv", "round_id," + HEADER + "\nR0," + GOOD + "\n"),
                          "column round_id appears more than once in the header"),
    "truncated Parquet": (lambda d: write(d / "cut.parquet", _parquet_bytes(d)[:300]),
                          "not a readable parquet file"),
    "corrupt Parquet": (lambda d: write(d / "bad.parquet", _corrupt(_parquet_bytes(d))), "parquet"),
    "a list column": (lambda d: _nested(d, pl.col("round_id").str.split(",")),
                      "column round_id is stored as List(String); expected text, a number or a timestamp"),
    "a struct column": (lambda d: _nested(d, pl.struct("banker_card_1")), "column banker_card_1 is stored as Struct"),
    "a binary column": (lambda d: _nested(d, pl.col("round_id").cast(pl.Binary)), "column round_id is stored as Binary"),
    "a duration column": (lambda d: _nested(d, pl.duration(seconds=pl.int_range(pl.len())).alias("player_total")),
                          "column player_total is stored as Duration"),
}


@pytest.mark.parametrize("case", UNRUNNABLE)
def test_input_that_cannot_be_audited_gets_one_line_and_exit_2(case, tmp_path):
    make, message = UNRUNNABLE[case]
    path = make(tmp_path)
    completed = cli("audit", path, "--out", tmp_path / "out", "--no-contract")
    assert completed.returncode == 2
    assert completed.stdout == ""
    line = completed.stderr
    assert line.startswith("error: ") and line.count("\n") == 1, line
    assert str(path.name) in line and message in line
    assert not (tmp_path / "out" / "findings.parquet").exists()


AUDITABLE = {
    "too many and too few fields": (
        f"{HEADER}\n{GOOD}\nR2,KS,9H,5D,QC,,,5,extra\nR3,KS,9H,5D,QC\n\"R4\",\"KS\",9H,5D,QC,,,5\n",
        {2: "the row has 9 fields, the header 8", 3: "the row has 5 fields, the header 8"},
    ),
    "bytes that are not UTF-8": (
        f"{HEADER}\n{GOOD}\n".encode() + b"R2,K\xffS,9H,5D,QC,,,5\nR3,KS,9H,5D,QC,,,5\n",
        {2: "player_card_1 holds bytes that are not UTF-8; player_card_1 'K\ufffdS' is not a card"},
    ),
    "a text total": (f"{HEADER}\n{GOOD}\nR2,KS,9H,5D,QC,,,five\n", {}),
    "a line of one field": (
        f"{HEADER}\n{GOOD}\nR3\n{GOOD}\n",
        {2: "the row has 1 field, the header 8; " + EMPTY.format("")},
    ),
}


@pytest.mark.parametrize("case", AUDITABLE)
def test_rows_that_cannot_be_replayed_are_quarantined_and_the_rest_audited(case, tmp_path):
    content, reasons = AUDITABLE[case]
    path = write(tmp_path / "log.csv", content)
    completed = cli("audit", path, "--out", tmp_path / "out", "--no-contract")
    assert completed.returncode == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    quarantine = pl.read_parquet(tmp_path / "out" / "quarantine.parquet")
    assert dict(quarantine.select("source_row", "reason").iter_rows()) == reasons
    assert summary["rows_read"] == summary["rounds_audited"] + summary["rows_quarantined"]
    assert summary["rows_read"] == content.count(b"\n" if isinstance(content, bytes) else "\n") - 1


#: Kinds of line a CSV log holds, each as written (for row i) and the reason it is quarantined, if any.
LINES = {
    "good": (lambda i: f"R{i},KS,9H,5D,QC,,,5", None),
    "quoted": (lambda i: f'"R{i}","KS",9H,5D,QC,,,5', None),
    "comma in quotes": (lambda i: f'"R{i},a",KS,9H,5D,QC,,,5', None),
    "blank": (lambda i: "", None),  # not a record: counted as a line skipped
    "blanks": (lambda i: " \t ", None),
    "too few fields": (lambda i: f"R{i},KS,9H", "the row has 3 fields, the header 8"),
    "too many fields": (lambda i: f"R{i},KS,9H,5D,QC,,,5,x", "the row has 9 fields, the header 8"),
    "not a card": (lambda i: f"R{i},XX,9H,5D,QC,,,5", "player_card_1 'XX' is not a card"),
    "no round_id": (lambda i: ",KS,9H,5D,QC,,,5", "round_id is empty"),
}


@settings(max_examples=15, deadline=None)
@given(st.lists(st.sampled_from(sorted(LINES)), min_size=1, max_size=12), st.booleans(), st.booleans(), st.booleans())
def test_every_line_of_a_csv_log_is_audited_or_quarantined_with_its_reason(tmp_path_factory, kinds, crlf, ends, bom):
    """Drawn logs of good, bad and blank lines, with Windows line ends or not, a last line ended or not,
    and a byte order mark or not: every line under the header is a row, audited or quarantined with the
    reason its kind gives, or a blank line skipped and counted, and the counts add up."""

    if kinds[-1] == "blank":  # an unended blank last line is no line at all
        ends = True
    end = "\r\n" if crlf else "\n"
    text = ("\ufeff" if bom else "") + end.join([HEADER, *(LINES[kind][0](i) for i, kind in enumerate(kinds))])
    folder = tmp_path_factory.mktemp("log")
    path = write(folder / "log.csv", text + (end if ends else ""))
    blank = sum(kind in ("blank", "blanks") for kind in kinds)
    if blank == len(kinds):
        with pytest.raises(InputError, match="the header has no rows under it"):
            run.audit(path, folder / "out", run.Options(validate=False, across_rounds=False))
        return
    summary = run.audit(path, folder / "out", run.Options(validate=False, across_rounds=False)).summary
    assert summary["inputs"][0].get("lines_skipped", 0) == blank
    quarantine = pl.read_parquet(folder / "out" / "quarantine.parquet")
    quarantined = dict(quarantine.select("source_row", "reason").iter_rows())
    expected = {i + 1: LINES[kind][1] for i, kind in enumerate(kinds) if LINES[kind][1]}
    assert {row: reason.split("; ")[0] for row, reason in quarantined.items()} == expected, (text, quarantined)
    assert (summary["rows_read"], summary["rows_quarantined"]) == (len(kinds) - blank, len(expected))
    assert summary["rounds_audited"] == len(kinds) - blank - len(expected)


def test_a_text_total_is_a_finding_not_a_rejection(tmp_path):
    path = write(tmp_path / "log.csv", f"{HEADER}\n{GOOD}\nR2,KS,9H,5D,QC,,,five\n")
    cli("audit", path, "--out", tmp_path, "--no-contract")
    findings = pl.read_parquet(tmp_path / "findings.parquet")
    assert findings.select("round_id", "check", "expected", "recorded").rows() == [("R2", "PLAYER_TOTAL", "5", "five")]


def test_typed_parquet_columns_are_read_as_text(tmp_path):
    """A numeric round_id and integer totals in Parquet are accepted and read as their text."""
    log = pl.read_csv(ASSETS / "mixed_notation.csv", infer_schema=False).filter(pl.col("round_id") == "R3")
    log.with_columns(round_id=pl.lit(3), player_total=pl.lit(6), banker_total=pl.lit(7)).write_parquet(
        tmp_path / "typed.parquet")
    completed = cli("audit", tmp_path / "typed.parquet", "--out", tmp_path / "out", "--no-contract")
    findings = pl.read_parquet(tmp_path / "out" / "findings.parquet")
    assert completed.returncode == 1
    assert findings.select("round_id", "check").rows() == [("3", "OUTCOME")]


def test_a_reason_quoting_a_value_with_line_breaks_is_kept_whole_and_other_rows_have_none(tmp_path):
    """Reasons are joined, then an empty join made null by a regular expression (see
    `ingest.reasons_text`): a value that spans lines is quoted whole, and a row with no reason has
    none, not an empty one."""
    log = pl.read_csv(ASSETS / "mixed_notation.csv", infer_schema=False).head(3)
    log.with_columns(player_card_1=pl.when(pl.col("round_id") == log["round_id"][1]).then(pl.lit("K\nS\n"))
                     .otherwise("player_card_1")).write_parquet(tmp_path / "broken.parquet")
    cli("audit", tmp_path / "broken.parquet", "--out", tmp_path / "out", "--no-contract")
    quarantine = pl.read_parquet(tmp_path / "out" / "quarantine.parquet")
    assert quarantine.select("round_id", "reason").rows() == [(log["round_id"][1], "player_card_1 'K\nS' is not a card")]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["rows_read"] == 3 and summary["rows_quarantined"] == 1


FLOATS = [1.0, 2.0, 2.5, float("nan"), float("inf"), None, -0.0, 1e20]


def test_whole_floats_are_read_as_whole_numbers_and_nan_as_not_recorded(tmp_path):
    """pandas stores an integer column with gaps as floats: 6.0 is a total of 6, not a wrong total, and
    NaN is a gap. Other floats stay as they are, and are then flagged."""
    frame = pl.DataFrame({"hand_no": FLOATS, "total": pl.Series(FLOATS, dtype=pl.Float32)})
    text = frame.select(ingest.as_text(pl.col("hand_no"), pl.Float64), ingest.as_text(pl.col("total"), pl.Float32))
    expected = ["1", "2", "2.5", None, "inf", None, "0", "1e+20"]
    assert text["hand_no"].to_list() == expected and text["total"].to_list()[:7] == expected[:7]


def test_decimals_are_read_without_the_zeros_that_end_their_places():
    """A database's NUMBER exported as decimal(38,10) holds a hand_no of 6 as 6.0000000000: hand 6,
    as a float 6.0 is. A decimal of no places keeps its zeros."""
    frame = pl.DataFrame({"wide": ["6", "12.5", "0", "-3", "100", None], "whole": ["6", "12", "0", "-3", "100", None]}
                         ).with_columns(wide=pl.col("wide").cast(pl.Decimal(38, 10)),
                                        money=pl.col("wide").cast(pl.Decimal(18, 2)),
                                        whole=pl.col("whole").cast(pl.Decimal(10, 0)))
    text = frame.select(ingest.as_text(pl.col(c), frame.schema[c]).alias(c) for c in frame.columns)
    assert text["wide"].to_list() == text["money"].to_list() == ["6", "12.5", "0", "-3", "100", None]
    assert text["whole"].to_list() == ["6", "12", "0", "-3", "100", None]


def test_a_parquet_log_of_decimals_audits_as_its_whole_numbers(tmp_path):
    log = pl.read_csv(ASSETS / "mixed_notation.csv", infer_schema=False).filter(pl.col("round_id") == "R1").head(1)
    decimals = log.with_columns(pl.col("player_total", "banker_total").cast(pl.Decimal(38, 10)),
                                shoe_id=pl.lit("S1"), hand_no=pl.lit(1).cast(pl.Decimal(38, 10)))
    pl.concat([decimals, decimals.with_columns(round_id=pl.lit("R2"), hand_no=pl.lit("2.5").cast(pl.Decimal(38, 10)))]
              ).write_parquet(tmp_path / "decimals.parquet")
    cli("audit", tmp_path / "decimals.parquet", "--out", tmp_path / "out", "--no-contract")
    findings = pl.read_parquet(tmp_path / "out" / "findings.parquet")
    assert findings.select("round_id", "check", "recorded").rows() == [("R2", "SHOE_SEQUENCE", "2.5")]


def test_timestamps_are_read_as_iso_text_in_utc():
    at = [datetime(2026, 11, 1, 18, 0, 0), datetime(2026, 11, 1, 18, 0, 0, 250000), None]
    frame = pl.DataFrame({"naive": at}).with_columns(
        utc=pl.col("naive").dt.replace_time_zone("UTC"),
        malta=pl.col("naive").dt.replace_time_zone("UTC").dt.convert_time_zone("Europe/Malta"),
        ms=pl.col("naive").dt.cast_time_unit("ms").dt.replace_time_zone("UTC"))
    text = frame.select(ingest.as_text(pl.col(c), frame.schema[c]).alias(c) for c in frame.columns)
    assert text["naive"].to_list() == ["2026-11-01T18:00:00", "2026-11-01T18:00:00.250000", None]
    for column in ("utc", "malta", "ms"):
        assert text[column].to_list() == ["2026-11-01T18:00:00Z", "2026-11-01T18:00:00.250000Z", None], column
    assert text.select(timestamp(pl.col("utc")))["utc"].to_list() == frame["utc"].to_list()


def test_a_parquet_log_of_floats_audits_as_its_whole_numbers(tmp_path):
    log = pl.read_csv(ASSETS / "mixed_notation.csv", infer_schema=False).filter(pl.col("round_id") == "R1").head(1)
    assert log.select("player_total", "banker_total").row(0) == ("5", "9")  # a clean round: Banker natural 9
    floats = log.with_columns(pl.col("player_total", "banker_total").cast(pl.Float64),
                              shoe_id=pl.lit("S1"), hand_no=pl.Series([1.0]))
    pl.concat([floats, floats.with_columns(round_id=pl.lit("R2"), hand_no=pl.lit(2.5)),
               floats.with_columns(round_id=pl.lit("R3"), hand_no=pl.lit(float("nan")))]
              ).write_parquet(tmp_path / "floats.parquet")
    cli("audit", tmp_path / "floats.parquet", "--out", tmp_path / "out", "--no-contract")
    findings = pl.read_parquet(tmp_path / "out" / "findings.parquet")
    assert findings.select("round_id", "check", "recorded").rows() == [("R2", "SHOE_SEQUENCE", "2.5")]


def test_a_failed_run_leaves_the_previous_result_whole(tmp_path, clean_log):
    out = tmp_path / "out"
    assert cli("audit", clean_log["parquet"], "--out", out, "--no-contract").returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    broken = write(tmp_path / "broken.parquet", _corrupt(_parquet_bytes(tmp_path)))
    assert cli("audit", broken, "--out", out, "--no-contract").returncode == 2
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no staging folder left either


def test_an_unreadable_file_is_one_line(tmp_path, monkeypatch):
    """Root reads any file here, so the refusal of the operating system is simulated."""
    from baccarat_audit.inputs import ingest

    path = write(tmp_path / "locked.csv", f"{HEADER}\n{GOOD}\n")

    def refuse(self, *args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(InputError, match=r"locked.csv: cannot be read \(Permission denied\)$"):
        ingest.scan(path, "round_log")


def test_dealt_at_spellings_read_as_utc_and_the_rest_as_null():
    from datetime import UTC, datetime

    spellings = {
        "2026-11-01T18:00:00Z": datetime(2026, 11, 1, 18, tzinfo=UTC),
        "2026-11-01 18:00:00": datetime(2026, 11, 1, 18, tzinfo=UTC),
        "2026-11-01T18:00:00": datetime(2026, 11, 1, 18, tzinfo=UTC),
        "2026-11-01T18:00:00.123Z": datetime(2026, 11, 1, 18, 0, 0, 123000, tzinfo=UTC),
        "2026-11-01T18:00:00.5+01:00": datetime(2026, 11, 1, 17, 0, 0, 500000, tzinfo=UTC),
        "2026-11-01T18:00:00+0100": datetime(2026, 11, 1, 17, tzinfo=UTC),
        "2026-13-01T18:00:00Z": None,
        "yesterday": None,
    }
    frame = pl.DataFrame({"t": [*spellings, None]})
    read = frame.select(timestamp(pl.col("t")))["t"].to_list()
    assert read == [*spellings.values(), None]
    # The staged rounds take dealt_utc from the same parse in steps: it reads every spelling alike.
    assert with_timestamp(frame.lazy(), "t", "utc").collect()["utc"].to_list() == read


def test_every_character_polars_trims_is_trimmed_from_short_and_long_text_alike(tmp_path):
    """Cards, outcomes and other short text are trimmed only where they hold a blank (a search cheaper
    than the trim on a few characters): a log with every Unicode character before and after a card,
    an outcome and a round_id reads each as polars' own trim (`str.strip_chars`) has it, empty as null."""
    every = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    values = {"round_id": [f"{c}R-{i}{c}" for i, c in enumerate(every)],
              **{card: [f"{c}KS{c}" for c in every] for card in ingest.required("round_log")[1:]},
              "outcome": [f"{c}B{c}" for c in every]}
    values = {name: [*column, " ", ""] for name, column in values.items()}  # blank and empty: null
    pl.DataFrame(values).write_parquet(tmp_path / "rounds.parquet")
    read = ingest.scan(tmp_path / "rounds.parquet", "round_log").frame.select(*values).collect()
    trimmed = pl.DataFrame(values).select(pl.all().str.strip_chars().replace("", None))
    assert read.equals(trimmed)
    assert (read["player_card_1"] == "KS").sum() == 25  # Unicode's White_Space, each trimmed away


FIELD_TEXT = st.text(alphabet='ab7KS ,"\té♣', max_size=6)  # commas and quotes, blanks, beyond ASCII


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(FIELD_TEXT, min_size=5, max_size=9), min_size=1, max_size=30))
def test_csv_rows_are_read_field_for_field_as_python_reads_them(tmp_path_factory, rows):
    """Rows of drawn fields, written by Python's csv module (fields with a comma or a quote quoted
    whole, quotes doubled), are read as Python reads them back: each field trimmed, empty as null;
    a row with fewer or more fields than the header is malformed, naming both counts."""
    names = ["round_id", "player_card_1", "banker_card_1", "player_card_2", "banker_card_2", "player_card_3",
             "banker_card_3"]
    path = tmp_path_factory.mktemp("csv") / "drawn.csv"
    with path.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows([names, *rows])
    with path.open(newline="") as handle:
        written = list(csv.reader(handle))[1:]
    read = ingest.scan(path, "round_log").frame.collect()
    for row, fields in zip(read.iter_rows(named=True), written, strict=True):
        if len(fields) == len(names):
            assert row["malformed"] is None
            assert [row[name] for name in names] == [field.strip() or None for field in fields]
        else:
            assert row["malformed"] == f"the row has {len(fields)} fields, the header {len(names)}"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 31)),
    st.sampled_from(["T", " "]), st.integers(min_value=0, max_value=6),  # digits of a second's fraction
    st.one_of(st.none(), st.just("Z"), st.integers(min_value=-14 * 60, max_value=14 * 60)),  # offset minutes
    st.booleans()), min_size=1, max_size=40))
def test_any_iso_8601_date_time_is_read_as_its_instant_in_utc(drawn):
    """dealt_at in every spelling the audit reads, drawn: a separator, a fraction of the second cut to
    0 to 6 digits, and a Z, an offset (with or without its colon) or no zone (UTC). Read as the instant
    it names, by the filter's parse and by the staged column's, alike."""
    texts, instants = [], []
    for wall, separator, digits, zone, colon in drawn:
        fraction = f".{wall.microsecond:06d}"[:digits + 1] if digits else ""
        if zone is None or zone == "Z":
            offset, written = 0, "" if zone is None else "Z"
        else:
            hours, minutes = divmod(abs(zone), 60)
            offset, written = zone, f"{'-' if zone < 0 else '+'}{hours:02d}{':' if colon else ''}{minutes:02d}"
        texts.append(f"{wall:%Y-%m-%d}{separator}{wall:%H:%M:%S}{fraction}{written}")
        cut = wall.replace(microsecond=int(fraction[1:].ljust(6, "0")) if digits else 0)
        instants.append((cut - timedelta(minutes=offset)).replace(tzinfo=UTC))
    frame = pl.DataFrame({"t": texts})
    assert frame.select(timestamp(pl.col("t")))["t"].to_list() == instants, texts
    assert with_timestamp(frame.lazy(), "t", "utc").collect()["utc"].to_list() == instants, texts


def test_the_test_on_stored_text_keeps_every_row_the_selection_keeps():
    """`Selection.stored` runs before the trim, and on Parquet rules out whole files by their statistics:
    every spelling the contract reads as a time in the window (`--since` or `--until`) must pass it,
    padded or not, with an offset, a sign or spaces around it, and every table_id the selection keeps;
    and its test of dealt_at alone must still rule out days outside the window."""
    import itertools
    from datetime import UTC, datetime, timedelta

    days = [datetime(2025, 12, 20, tzinfo=UTC) + timedelta(days=d) for d in range(50)]  # across a new year
    forms = ["{Y}-{m:02}-{d:02}T{t}Z", "{Y}-{m:02}-{d:02} {t}", "{Y}-{m:02}-{d:02}T{t}.5+23:59",
             "{Y}-{m:02}-{d:02}T{t}-23:59", "{Y}-{m:02}-{d:02}T{t}-14:00", "{Y}-{m}-{d}T{t}Z", "{Y}-{m}-{d:02}T{t}Z",
             "{Y}-{m:02}-{d}T{t}+01:00", "+{Y}-{m:02}-{d:02}T{t}Z", " {Y}-{m:02}-{d:02}T{t}Z", "\t{Y}-{m}-{d} {t}",
             "\u00a0{Y}-{m:02}-{d:02}T{t}Z ", "\u3000{Y}-{m:02}-{d:02}T{t}Z"]
    texts = [form.format(Y=day.year, m=day.month, d=day.day, t=t)
             for day in days for t in ("00:00:00", "12:00:00", "23:59:59") for form in forms]
    tables = [" T01", "T01 ", "T02", "\u00a0T10\t", "T1"] * (len(texts) // 5)
    stored = pl.DataFrame({"dealt_at": texts[:len(tables)], "table_id": tables})
    trimmed = stored.select(pl.all().str.strip_chars())  # what the log frame holds
    assert trimmed.select(timestamp(pl.col("dealt_at")).null_count()).item() == 0  # every spelling is read
    ruled_out = {"since": False, "until": False}
    for moment in [day + timedelta(hours=h) for day in days for h in (0, 13)]:
        for wanted, side in itertools.product(((), ("T01",), ("T10", "T02")), ("since", "until")):
            selection = Selection(tables=wanted, **{side: moment})
            kept = trimmed.select(selection.predicate())
            passes = stored.select(selection.stored({"dealt_at": "dealt_at", "table_id": "table_id"}))
            tested = pl.DataFrame({"kept": kept.to_series(), "passes": passes.to_series()})
            assert tested.filter(pl.col("kept") & ~pl.col("passes")).height == 0, (side, moment, wanted)
            if not wanted:  # the test on dealt_at alone
                ruled_out[side] |= tested.filter(~pl.col("passes")).height > 0
    assert ruled_out == {"since": True, "until": True}


@st.composite
def spelled(draw, instant: datetime) -> str:
    """`instant` (naive, UTC) as a log may store a dealt_at the contract reads: in a zone up to a day
    off UTC (with its offset), or in UTC (a Z or no zone); month and day padded or not; a fraction;
    and now and then a sign or white space around it."""
    # Offsets at the ends of the range too, where a date as written is a day off the date in UTC.
    minutes = draw(st.one_of(st.sampled_from([-(24 * 60 - 1), -14 * 60, 14 * 60, 24 * 60 - 1]),
                             st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1)))
    hours, rest = divmod(abs(minutes), 60)
    zone = draw(st.sampled_from(["Z", "", f"{'-' if minutes < 0 else '+'}{hours:02d}:{rest:02d}"]))
    wall = instant + timedelta(minutes=minutes if zone not in ("Z", "") else 0)
    # Mostly padded and plain: a date written otherwise sorts apart from the date (and
    # `test_the_test_on_stored_text_keeps_every_row_the_selection_keeps` names each such spelling).
    month, day = (str(n) if draw(st.integers(0, 3)) == 0 else f"{n:02d}" for n in (wall.month, wall.day))
    fraction = draw(st.sampled_from(["", ".5", f".{wall.microsecond:06d}"]))
    text = f"{wall.year}-{month}-{day}{draw(st.sampled_from(['T', ' ']))}{wall:%H:%M:%S}{fraction}{zone}"
    if draw(st.integers(0, 3)):
        return text
    blanks = st.sampled_from(["", " ", "\t", "\u00a0", "\u3000"])
    return draw(blanks) + draw(st.sampled_from(["", "+"])) + text + draw(blanks)


@st.composite
def narrowed_logs(draw) -> tuple[list[tuple[str, str]], datetime]:
    """A moment and a few rows (dealt_at, table_id) dealt within 26 hours of it: the day a dealt_at as
    stored is tested wide of the window (`Selection.stored`) is where such a test can fail."""
    moment = draw(st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 31)))
    near = st.one_of(st.integers(min_value=-60, max_value=60), st.integers(min_value=-26 * 60, max_value=26 * 60)
                     ).map(lambda m: moment + timedelta(minutes=m))
    rows = draw(st.lists(st.tuples(near.flatmap(spelled), st.sampled_from([" T01", "T02", "T01\u00a0"])),
                         min_size=1, max_size=6))
    return rows, moment.replace(tzinfo=UTC)


@settings(max_examples=200, deadline=None)
@given(narrowed_logs(), st.sampled_from([(), ("T01",)]))
def test_a_narrowing_never_rules_out_a_row_it_keeps(tmp_path_factory, log, tables):
    """What runs before the trim (`Selection.stored`) and what rules a Parquet file out unread (its row
    groups' statistics, `Selection.rules_out_by`) let through every row the narrowing keeps, on
    drawn spellings of dealt_at and drawn windows (a sound test of the spellings the other tests name)."""
    rows, moment = log
    stored = pl.DataFrame(rows, schema={"dealt_at": pl.String, "table_id": pl.String}, orient="row")
    assert stored.select(timestamp(pl.col("dealt_at").str.strip_chars())).null_count().item() == 0, rows
    path = tmp_path_factory.mktemp("narrowed") / "log.parquet"
    stored.write_parquet(path, row_group_size=2)
    columns = {"dealt_at": "dealt_at", "table_id": "table_id"}
    for side in ("since", "until"):
        selection = Selection(tables=tables, **{side: moment})
        kept = stored.select(pl.all().str.strip_chars()).select(selection.predicate()).to_series()
        passes = stored.select(selection.stored(columns)).to_series()
        assert not (kept & ~passes).any(), (side, rows)
        assert not (kept.any() and selection.rules_out_by(pq.read_metadata(path), columns)), (side, rows)


def test_a_ragged_csv_read_in_pieces_quarantines_the_same_rows(tmp_path):
    """A CSV file is cut into pieces by line; each piece's field counts must stay with its rows."""

    content, reasons = AUDITABLE["too many and too few fields"]
    path = write(tmp_path / "log.csv", content * 1 + "\n".join(content.splitlines()[1:] * 3) + "\n")
    whole = run.audit(path, tmp_path / "whole", run.Options(validate=False))
    cut = run.audit(path, tmp_path / "cut", run.Options(validate=False, tuning=Tuning(piece_rows=2)))
    assert whole.summary["rows_quarantined"] == cut.summary["rows_quarantined"] == 8
    assert pl.read_parquet(tmp_path / "whole" / "quarantine.parquet").equals(
        pl.read_parquet(tmp_path / "cut" / "quarantine.parquet"))


def test_a_file_named_twice_by_other_paths_is_read_once(tmp_path, monkeypatch):
    """Read twice, every round would be its own duplicate."""
    (tmp_path / "logs").mkdir()
    log = write(tmp_path / "logs" / "rounds.csv", f"{HEADER}\n{GOOD}\n")
    (tmp_path / "link.csv").symlink_to(log)
    (tmp_path / "hard.csv").hardlink_to(log)
    monkeypatch.chdir(tmp_path)
    label, files, _ = discover.expand(["logs/rounds.csv", str(log), "logs/../logs/rounds.csv", "link.csv", "hard.csv",
                                     "logs"])
    assert files == [Path("logs/rounds.csv")]
    completed = cli("audit", "logs/rounds.csv", log, "link.csv", "hard.csv", "--out", tmp_path / "out",
                    "--no-contract")
    assert completed.returncode == 0 and "1 row read: 1 round audited" in completed.stdout, completed.stdout + completed.stderr


def test_on_a_file_system_without_inode_numbers_a_file_is_told_apart_by_its_resolved_path(tmp_path, monkeypatch):
    """FAT and some network shares number no inode (st_ino 0): every file would be one file. A link
    still leads to its target's path; a hard link, a path of its own, is then read as another file."""
    (tmp_path / "logs").mkdir()
    logs = [write(tmp_path / "logs" / f"{night}.csv", f"{HEADER}\n{GOOD}\n") for night in ("mon", "tue")]
    (tmp_path / "link.csv").symlink_to(logs[0])
    (tmp_path / "hard.csv").hardlink_to(logs[0])
    stat = Path.stat
    monkeypatch.setattr(Path, "stat", lambda path, **kw: os.stat_result((stat(path, **kw)[0], 0, *stat(path, **kw)[2:])))
    monkeypatch.chdir(tmp_path)
    _, files, _ = discover.expand(["logs", "link.csv", "logs/../logs/mon.csv", "hard.csv"])
    assert files == [Path("logs/mon.csv"), Path("logs/tue.csv"), Path("hard.csv")]


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_file_whose_name_looks_like_a_glob_is_read_as_itself(tmp_path, suffix):
    """night[1].csv is a name: read as a pattern it matched night1.csv, whose rows were then read in
    its place (and, grouped with its neighbours, its own rows were lost)."""
    log = pl.read_csv(ASSETS / "mixed_notation.csv", infer_schema=False)
    names = ["night1", "night[1]", "night[2]"]
    for k, name in enumerate(names):
        rows = log.slice(k * 3, 3)
        rows.write_csv(tmp_path / f"{name}.csv") if suffix == "csv" else rows.write_parquet(tmp_path / f"{name}.parquet")
    for inputs in (tmp_path, [str(tmp_path / f"{name}.{suffix}") for name in names]):  # a folder, or the names
        opened = ingest.scan(inputs, "round_log")
        read = opened.frame.collect()
        assert opened.rows_per_file == (3, 3, 3)
        for k, name in enumerate(names):
            mine = read.filter(pl.col("source_file") == str(tmp_path / f"{name}.{suffix}"))
            assert mine["round_id"].to_list() == log["round_id"].slice(k * 3, 3).to_list()


def test_files_in_a_log_folder_that_are_not_logs_are_named_not_passed_over_unseen(tmp_path):
    """A log compressed as the tool does not read (bzip2), a marker, a hidden file or an earlier audit's
    outputs beside the logs are not read, and the summary, the command's output and the report name
    each with why."""
    rounds, bets = tmp_path / "rounds" / "date=2026-11-04", tmp_path / "bets"
    rounds.mkdir(parents=True)
    bets.mkdir()
    write(rounds / "T01.csv", f"{HEADER}\n{GOOD}\n")
    write(rounds / "T02.csv.bz2", b"BZh91AY not read")
    write(rounds / "_SUCCESS", "")
    write(rounds / ".T01.csv.crc", "")
    write(bets / "bets.csv", "bet_id,round_id,bet_type,stake,paid\nB1,R1,player,10,0\n")
    write(bets / "README", "the bets of 2026-11-04")
    earlier = tmp_path / "rounds" / "earlier"
    assert cli("audit", rounds / "T01.csv", "--out", earlier, "--no-contract").returncode == 0
    completed = cli("audit", tmp_path / "rounds", "--bets", bets, "--out", tmp_path / "out", "--no-contract")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    ours = "written by baccarat-audit"
    assert summary["inputs_not_read"] == [
        {"role": "rounds", "path": str(rounds / ".T01.csv.crc"), "reason": "hidden"},
        {"role": "rounds", "path": str(rounds / "T02.csv.bz2"), "reason": discover.NOT_A_LOG},
        {"role": "rounds", "path": str(rounds / "_SUCCESS"), "reason": discover.NOT_A_LOG},
        *({"role": "rounds", "path": str(earlier / name), "reason": ours}
          for name in sorted([".baccarat-audit.json", *(p.name for p in earlier.iterdir() if p.name[0] != ".")])),
        {"role": "bets", "path": str(bets / "README"), "reason": discover.NOT_A_LOG}]
    assert (f"Not read: {len(summary['inputs_not_read'])} entries of the inputs: {rounds / '.T01.csv.crc'} (hidden), "
            f"{rounds / 'T02.csv.bz2'} ({discover.NOT_A_LOG})") in completed.stdout
    report = (tmp_path / "out" / "report.html").read_text()
    assert "<h3>Not read</h3>" in report and str(bets / "README") in report


@pytest.mark.parametrize("zone", [None, "UTC", "Europe/Malta"])
def test_a_dealt_at_stored_as_a_timestamp_is_narrowed_as_its_text_is(tmp_path, zone):
    """A Parquet timestamp gets a test of its own on both sides of the window (which reaches the row
    groups' statistics): it keeps every round the window does, and rules out the days far from it."""
    from datetime import UTC, timedelta


    rounds = pl.read_parquet(Path(__file__).parent.parent / "data" / "rounds.parquet")
    at = pl.col("dealt_at").str.to_datetime(time_zone="UTC") + pl.duration(days=pl.int_range(pl.len()) // 200)
    at = at.dt.replace_time_zone(None) if zone is None else at.dt.convert_time_zone(zone)
    typed = rounds.with_columns(dealt_at=at)
    typed.write_parquet(tmp_path / "typed.parquet", row_group_size=100)
    typed.with_columns(dealt_at=pl.col("dealt_at").dt.replace_time_zone("UTC") if zone is None else
                       pl.col("dealt_at").dt.convert_time_zone("UTC")).with_columns(
        dealt_at=pl.col("dealt_at").dt.to_string("%Y-%m-%dT%H:%M:%SZ")).write_parquet(tmp_path / "text.parquet")
    window = Selection(since=datetime(2026, 11, 4, 18, 20, tzinfo=UTC),
                              until=datetime(2026, 11, 6, 20, 0, tzinfo=UTC))
    results = {name: run.audit(tmp_path / f"{name}.parquet", tmp_path / name,
                                 run.Options(validate=False, selection=window)) for name in ("typed", "text")}
    assert results["typed"].summary["rows_read"] == results["text"].summary["rows_read"] > 400
    found = {name: pl.read_parquet(tmp_path / name / "findings.parquet").drop("run_id", "source_file", "dealt_at")
             for name in results}
    assert found["typed"].equals(found["text"])
    dtype = typed.schema["dealt_at"]
    passes = typed.select(window.stored({}, ("dealt_at", dtype))).to_series()
    kept = typed.select(ingest.as_text(pl.col("dealt_at"), dtype)).select(window.predicate()).to_series()
    assert not (kept & ~passes).any()
    utc = typed["dealt_at"].dt.replace_time_zone("UTC") if zone is None else typed["dealt_at"].dt.convert_time_zone("UTC")
    far = (utc < window.since - timedelta(days=1)) | (utc > window.until + timedelta(days=1))
    assert far.sum() > 800 and not (passes & far).any()


def test_a_file_with_only_a_header_among_others_is_an_input_of_no_rows(tmp_path):
    """A table closed for the night still writes its header: the night's other files are audited."""
    (tmp_path / "logs").mkdir()
    write(tmp_path / "logs" / "T01.csv", f"{HEADER}\n{GOOD}\n")
    write(tmp_path / "logs" / "T02.csv", f"{HEADER}\n")
    pl.DataFrame(schema={c: pl.String for c in HEADER.split(",")}).write_parquet(tmp_path / "logs" / "T03.parquet")
    completed = cli("audit", tmp_path / "logs", "--out", tmp_path / "out", "--no-contract")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [(Path(i["path"]).name, i["rows"]) for i in summary["inputs"]] == [("T01.csv", 1), ("T02.csv", 0),
                                                                              ("T03.parquet", 0)]
    assert summary["rows_read"] == summary["rounds_audited"] == 1


def test_spans_cut_large_files_and_put_small_ones_together_in_order():
    """Every row of every file lands in exactly one piece, in order, and no piece exceeds its size;
    a file without rows takes no span."""
    sizes = [("a", 25), ("b", 3), ("c", 0), ("d", 4), ("e", 10)]
    pieces = list(ingest.spans(sizes, 10))
    assert pieces == [[("a", 0, 10)], [("a", 10, 10)], [("a", 20, 5), ("b", 0, 3)], [("d", 0, 4)], [("e", 0, 10)]]
    assert list(ingest.spans([("a", 0)], 10)) == []


@pytest.mark.parametrize("stored", ["parquet", "csv"])
@pytest.mark.parametrize("selection", [Selection(), Selection(tables=("T02",))])
def test_whole_files_of_one_shape_read_together_give_the_rows_each_gives_alone(faulted_log, selection, stored,
                                                                               tmp_path):
    """A table's nightly files in Hive folders (table_id from the folder), the whole files of one shape
    read by one scan: every row keeps its file, its row in the file and its folder's values, as when
    each file is read alone. Among them a file without rows, one of another shape (hand_no stored as a
    number; in CSV, the columns in another order), one of the other format, and in CSV a file with
    broken lines (a field too many, bytes that are not UTF-8, a blank line, no line end at its end);
    pieces of 777 rows cut some files and leave others whole."""
    log = pl.read_parquet(faulted_log["parquet"]).drop("table_id")
    other = "csv" if stored == "parquet" else "parquet"
    sizes, start, files = [300, 50, 0, 1200, 10, 7, 90, 400], 0, []
    for night in range(100):
        if start >= log.height:
            break
        table = f"T0{night % 3 + 1}"
        folder = tmp_path / "logs" / f"table_id={table}" / f"date=2026-{night // 28 + 1:02d}-{night % 28 + 1:02d}"
        folder.mkdir(parents=True)
        rows = log.slice(start, sizes[night % len(sizes)])
        if night == 13:
            rows = rows.with_columns(pl.col("hand_no").cast(pl.Int64)) if stored == "parquet" else rows.reverse()
        file = folder / f"rounds.{other if night == 9 else stored}"
        if file.suffix == ".parquet":
            rows.write_parquet(file)
        else:
            rows.select(reversed(rows.columns) if night == 13 else rows.columns).write_csv(file)
        if night == 4 and stored == "csv":
            with file.open("ab") as handle:
                handle.write(b"R-extra,a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p\nR-\xff,,\n\nR-last")
        files += [file] if rows.height else []
        start += rows.height
    opened = ingest.scan(tmp_path / "logs", "round_log", selection=selection)
    alone = pl.concat([ingest.scan(f, "round_log").frame for f in sorted(files)]).collect()
    if selection:
        alone = alone.filter(selection.predicate())
    assert alone.height > 1000 and alone["table_id"].n_unique() == (1 if selection else 3)
    if stored == "csv":  # the broken lines are read, each as itself, in a file read with others
        malformed = alone["malformed"].drop_nulls()  # night 4 is T02's
        assert malformed.str.contains("field|UTF-8").sum() == 3  # the blank line is no row
    plans = [opened._read_with((i, 0, n)) for i, n in enumerate(opened.rows_per_file)]
    assert max(map(plans.count, plans)) > 1  # some whole files read by one scan
    assert opened.frame.collect().equals(alone)
    # A query a piece, as the audit reads them: polars 2.1 reads two cuts of one CSV file in one plan
    # as the same cut (in `Log.pieces` a piece never holds two cuts of one file).
    assert pl.concat([piece.collect() for piece in opened.pieces(777)]).equals(alone)


@pytest.mark.parametrize("selection", [Selection(), Selection(tables=("T02",))])
def test_parquet_files_that_differ_only_in_columns_the_contract_does_not_read_are_read_together(
        faulted_log, selection, tmp_path):
    """Nightly Parquet files of which every other one has a column of its own (a note), and one has
    its columns in another order, are read by one scan of them all, and give the rows each gives
    alone: the note is left, and every row keeps its file and its row in the file."""
    log = pl.read_parquet(faulted_log["parquet"])
    files = []
    for night in range(12):
        rows = log.slice(night * 150, 150)
        if night % 2:
            rows = rows.with_columns(note=pl.lit(f"night {night}"))
        if night == 5:
            rows = rows.select(reversed(rows.columns))
        files.append(tmp_path / f"2026-11-{night + 1:02d}.parquet")
        rows.write_parquet(files[-1])
    opened = ingest.scan(tmp_path, "round_log", selection=selection)
    alone = pl.concat([ingest.scan(f, "round_log").frame for f in files]).collect()
    if selection:
        alone = alone.filter(selection.predicate())
    assert alone.height >= 300
    read = opened._selected(tuple(range(len(files))))  # the files the selection does not rule out
    assert len(read) > 1 and len({opened._read_with((i, 0, opened.rows_per_file[i])) for i in read}) == 1
    assert opened.frame.collect().equals(alone)
    assert pl.concat([piece.collect() for piece in opened.pieces(777)]).equals(alone)


@pytest.mark.parametrize("selection", [Selection(), Selection(tables=("T02",))])
@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_files_of_two_shapes_in_turn_are_read_by_a_scan_each_and_merged_in_log_order(faulted_log, suffix, selection,
                                                                                      tmp_path, monkeypatch):
    """Nightly files of which every other one stores a column otherwise (in Parquet hand_no as floats,
    as pandas stores a column with gaps; in CSV, the columns in another order) are read by one scan per
    shape, not a plan per file, and their rows come in log order: by file, then row; narrowed too."""
    # The tables' hands in turn, so that every night holds some of each table.
    log = pl.read_parquet(faulted_log["parquet"]).sort(pl.col("hand_no").cast(pl.Int64, strict=False), "table_id",
                                                       maintain_order=True)
    files = []
    for night in range(12):
        rows = log.slice(night * 150, 150)
        files.append(tmp_path / f"2026-11-{night + 1:02d}.{suffix}")
        if suffix == "parquet":
            (rows.with_columns(pl.col("hand_no").cast(pl.Float64)) if night % 2 else rows).write_parquet(files[-1])
        else:
            (rows.select(reversed(rows.columns)) if night % 2 else rows).write_csv(files[-1])
    opened = ingest.scan(tmp_path, "round_log", selection=selection)
    alone = pl.concat([ingest.scan(f, "round_log").frame for f in files]).collect().filter(selection.predicate())
    assert alone["source_file"].n_unique() == 12 and alone["hand_no"].str.contains(r"\.").not_().all()
    with tuning.using(Tuning(plans=2)):  # a piece of 12 files read by a plan each would be cut in 6
        pieces = list(opened.pieces(10_000))
    assert len(pieces) == 1 and pieces[0].collect().equals(alone)
    assert opened.frame.collect().equals(alone)
    assert pl.concat([piece.collect() for piece in opened.pieces(777)]).equals(alone)


def narrowed_by_statistics(folder: Path, selection: Selection, columns: dict[str, str],
                           timed: str | None = None) -> tuple[set[str], set[str], pl.DataFrame]:
    """The Parquet files in `folder` whose statistics rule them out (by name), those a narrowed scan of
    the folder reads, and the rows it keeps, held equal to those the narrowing keeps of each file alone."""
    files = sorted(folder.glob("*.parquet"))
    ruled_out = {f.stem for f in files if selection.rules_out_by(pq.read_metadata(f), columns, timed)}
    narrowed = ingest.scan(folder, "round_log", selection=selection)
    kept = narrowed.frame.collect()
    alone = pl.concat([ingest.scan(f, "round_log").frame for f in files]).collect().filter(selection.predicate())
    assert kept.equals(alone)
    return ruled_out, {f.stem for f in narrowed.files_read}, kept


WINDOW = Selection(since=datetime(2026, 11, 3, tzinfo=UTC), until=datetime(2026, 11, 3, 23, 59, tzinfo=UTC))


def test_parquet_statistics_rule_out_a_file_only_when_none_of_its_values_can_trim_to_a_wanted_one(tmp_path):
    """A Parquet file whose every row group's least and greatest table_id leave no room for a wanted
    one is ruled out as it is opened, unread. A table_id with white space around it (a space, a
    no-break space, an ideographic space) trims to the wanted one and keeps its file, as does a file
    written without statistics, and one whose second row group holds the table."""
    log = pl.read_csv(ASSETS.parent.parent / "data" / "rounds.csv", infer_schema=False)
    t01, t03 = (log.filter(pl.col("table_id") == table).head(40) for table in ("T01", "T03"))
    # Each among values that sort only below (T01) or only above (T03) the wanted one, or alone.
    planted = {"spaced": (t01, " T02", 1), "no-break": (t03, "\u00a0T02", 1), "ideographic": (t01, "T02\u3000", 40)}
    for name, (rows, table_id, count) in planted.items():
        rows.with_row_index().with_columns(table_id=pl.when(pl.col("index") < count).then(pl.lit(table_id))
                                           .otherwise("table_id")).drop("index").write_parquet(tmp_path / f"{name}.parquet")
    t01.write_parquet(tmp_path / "t01.parquet")
    t03.write_parquet(tmp_path / "t03.parquet")
    pl.concat([t01, log.filter(pl.col("table_id") == "T02").head(1)]).write_parquet(tmp_path / "bare.parquet",
                                                                                    statistics=False)
    pl.concat([t01, log.filter(pl.col("table_id") == "T02").head(40)]).write_parquet(tmp_path / "groups.parquet",
                                                                                     row_group_size=40)
    assert pq.read_metadata(tmp_path / "groups.parquet").num_row_groups == 2
    ruled_out, read, kept = narrowed_by_statistics(tmp_path, Selection(tables=("T02",)),
                                                   {"table_id": "table_id"})
    assert ruled_out == {"t01", "t03"} and read == {"spaced", "no-break", "ideographic", "bare", "groups"}
    assert kept.height == 1 + 1 + 40 + 1 + 40 and set(kept["table_id"]) == {"T02"}
    assert not Selection(tables=("T01",)).rules_out_by(pq.read_metadata(tmp_path / "t01.parquet"),
                                                               {"table_id": "table_id"})


def test_parquet_statistics_rule_out_a_night_only_when_none_of_its_dealt_at_can_fall_in_the_window(tmp_path):
    """Under --since and --until, a Parquet file whose every row group's least and greatest dealt_at
    text leave no room for a time the window keeps is ruled out as it is opened: all of it before the
    day before the window, or all of it starting with one date written in full after the day after.
    A file whose texts could hold one (a space before a date, a date written short, dates that do not
    share a day) is kept for the query, which keeps the rows in the window."""
    log = pl.read_csv(ASSETS.parent.parent / "data" / "rounds.csv", infer_schema=False).head(20)
    nights = {"before": ["2026-10-30T20:00:00Z"], "after": ["2026-11-05T10:00:00Z", "2026-11-05T23:59:00Z"],
              "spaced": ["2026-10-30T20:00:00Z", " 2026-10-30T21:00:00Z"],
              "short": ["2026-11-05T10:00:00Z", "2026-11-3T10:00:00Z"],  # the least and greatest, Nov 5 and 3
              "midnight": ["2026-11-04T23:00:00Z", "2026-11-05T01:00:00Z"], "within": ["2026-11-03T12:00:00Z"]}
    for name, times in nights.items():
        log.with_columns(dealt_at=pl.Series([times[i % len(times)] for i in range(log.height)])).write_parquet(
            tmp_path / f"{name}.parquet")
    ruled_out, read, kept = narrowed_by_statistics(tmp_path, WINDOW, {"dealt_at": "dealt_at"})
    assert ruled_out == {"before", "after"} and read == {"short", "within"} and kept.height == 10 + 20


def test_parquet_statistics_rule_out_a_night_of_timestamps_only_when_all_are_a_day_outside_the_window(tmp_path):
    """A dealt_at stored as a timestamp (milliseconds without a zone, read as UTC; microseconds in UTC;
    nanoseconds in Paris) rules out a file by its statistics when all of it is more than a day outside
    the window, as `Selection.stored` tests a row; a file a day before or after it to the microsecond,
    or one reaching into it, is kept for the query."""
    log = pl.read_csv(ASSETS.parent.parent / "data" / "rounds.csv", infer_schema=False).head(20)
    nights = {"before": ([datetime(2026, 10, 30, 20)], pl.Datetime("ms")),
              "after": ([datetime(2026, 11, 5, 10), datetime(2026, 11, 5, 11)], pl.Datetime("us", "UTC")),
              "a-day-before": ([datetime(2026, 11, 1, 12), datetime(2026, 11, 2)], pl.Datetime("us", "UTC")),
              "a-day-after": ([datetime(2026, 11, 4, 23, 59), datetime(2026, 11, 6)], pl.Datetime("ms")),
              "reaching": ([datetime(2026, 10, 30), datetime(2026, 11, 3, 1)], pl.Datetime("ms")),
              "within": ([datetime(2026, 11, 3, 12)], pl.Datetime("ns", "Europe/Paris"))}
    for name, (times, dtype) in nights.items():
        utc = pl.Series([times[i % len(times)] for i in range(log.height)])
        dealt_at = utc.dt.replace_time_zone("UTC").dt.convert_time_zone(dtype.time_zone) if dtype.time_zone else utc
        log.with_columns(dealt_at=dealt_at.cast(dtype)).write_parquet(tmp_path / f"{name}.parquet")
        assert pl.read_parquet_schema(tmp_path / f"{name}.parquet")["dealt_at"] == dtype
    ruled_out, read, kept = narrowed_by_statistics(tmp_path, WINDOW, {}, "dealt_at")
    assert ruled_out == {"before", "after"} and read == {"reaching", "within"} and kept.height == 10 + 20


def test_a_hive_folder_value_is_read_as_hive_escapes_it(tmp_path):
    """Hive and Spark write a partition value's `:`, `/`, `%` and the like as %XX (`table_id=VIP%3A1` for
    VIP:1): the column holds the value, and a narrowing by it finds its folder. A `%` that escapes
    nothing stays as it is."""
    log = pl.read_csv(ASSETS.parent.parent / "data" / "rounds.csv", infer_schema=False).drop("table_id")
    for k, name in enumerate(("VIP%3A1", "100%", "T%2F02%25")):
        folder = tmp_path / f"table_id={name}" / "date=2026-11-01"
        folder.mkdir(parents=True)
        log.slice(10 * k, 10).write_csv(folder / "rounds.csv")
    read = ingest.scan(tmp_path, "round_log").frame.collect()
    assert read["table_id"].value_counts(sort=True, name="rows").sort("table_id").rows() == [
        ("100%", 10), ("T/02%", 10), ("VIP:1", 10)]
    narrowed = ingest.scan(tmp_path, "round_log", selection=Selection(tables=("VIP:1",)))
    assert narrowed.frame.collect()["round_id"].to_list() == log["round_id"].head(10).to_list()


STORED_TYPES = {
    "Int8": (pl.Int8, st.integers(-128, 127)), "UInt16": (pl.UInt16, st.integers(0, 2**16 - 1)),
    "Int64": (pl.Int64, st.integers(-(2**63), 2**63 - 1)), "UInt64": (pl.UInt64, st.integers(0, 2**64 - 1)),
    "Float64": (pl.Float64, st.one_of(st.integers(-(2**60), 2**60).map(float), st.floats(allow_nan=True))),
    "Float32": (pl.Float32, st.one_of(st.integers(-(2**24), 2**24).map(float), st.floats(width=32))),
    "Decimal": (pl.Decimal(38, 10), st.decimals(min_value=-(10**27), max_value=10**27, places=10, allow_nan=False)),
}


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(STORED_TYPES)).flatmap(
    lambda name: st.tuples(st.just(name), st.lists(STORED_TYPES[name][1], min_size=1, max_size=20))))
def test_a_typed_parquet_column_is_read_as_the_number_it_holds(tmp_path_factory, drawn):
    """A hand_no stored as an integer, a float or a decimal, drawn: read as text that names the same
    number; a whole float or decimal as the whole number (6.0 and 6.0000000000 are 6), NaN as not
    recorded, any other float as text that reads back as that float."""
    name, values = drawn
    dtype = STORED_TYPES[name][0]
    path = tmp_path_factory.mktemp("typed") / "log.parquet"
    rows = {c: ["R1", "KS", "2S", None, "3S", "4S", None][i] for i, c in enumerate(
        ["round_id", "player_card_1", "player_card_2", "player_card_3", "banker_card_1", "banker_card_2", "banker_card_3"])}
    frame = pl.DataFrame({**{c: [v] * len(values) for c, v in rows.items()}, "hand_no": values},
                         schema_overrides={"hand_no": dtype, "player_card_3": pl.String, "banker_card_3": pl.String})
    frame.write_parquet(path)
    stored = frame["hand_no"].to_list()  # as Parquet holds them (a Float32 is rounded to one)
    read = ingest.scan(path, "round_log").frame.collect()["hand_no"].to_list()
    for value, text in zip(stored, read, strict=True):
        if isinstance(value, float) and math.isnan(value):
            assert text is None
        elif isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 2**53:
            assert text == str(int(value))
        elif isinstance(value, float):  # read back at the width it was stored at: a Float32's 0.3 is "0.3"
            read_back = float(text) if dtype == pl.Float64 else struct.unpack("f", struct.pack("f", float(text)))[0]
            assert read_back == value, (value, text)
        elif isinstance(value, Decimal):  # as text, exact: Decimal's normalize rounds to 28 digits
            whole, _, places = f"{value:f}".partition(".")
            assert text == (f"{whole}.{places.rstrip('0')}".rstrip(".") if value else "0"), (value, text)
        else:
            assert text == str(value)


def test_gzip_and_zstd_compressed_logs_are_read_as_their_text(tmp_path):
    """A log compressed as logs are shipped (night.csv.gz, night.csv.zst, or gzip bytes in a .csv) is
    audited as its text is: the same findings row for row, the compressed file named and hashed in
    the provenance; a folder of them is read whole."""
    import gzip
    import hashlib

    import pyarrow as pa

    text = (ASSETS.parent.parent / "data" / "rounds.csv").read_bytes()
    (tmp_path / "logs").mkdir()
    files = {"night.csv.gz": gzip.compress(text), "night.csv.zst": pa.compress(text, codec="zstd", asbytes=True),
             "gzip-bytes.csv": gzip.compress(text)}
    for name, data in files.items():
        (tmp_path / "logs" / name).write_bytes(data)
    (tmp_path / "plain.csv").write_bytes(text)
    plain = run.audit(tmp_path / "plain.csv", tmp_path / "plain", run.Options(validate=False))
    for name, data in files.items():
        done = run.audit(tmp_path / "logs" / name, tmp_path / name.replace(".", "-"), run.Options(validate=False))
        assert done.summary["findings"] == plain.summary["findings"], name
        assert output(done.out_dir / "findings.parquet").drop("source_file").equals(
            output(plain.out_dir / "findings.parquet").drop("source_file")), name
        (entry,) = done.summary["inputs"]
        assert (entry["path"], entry["format"], entry["sha256"]) == (
            str(tmp_path / "logs" / name), "csv", hashlib.sha256(data).hexdigest())
    whole = run.audit(tmp_path / "logs", tmp_path / "whole", run.Options(validate=False))
    assert whole.summary["rows_read"] == 3 * plain.summary["rows_read"] and not whole.summary["inputs_not_read"]


def test_a_csv_log_longer_than_the_chunks_its_lines_are_found_in_reads_the_same_in_pieces(faulted_log, tmp_path):
    """A CSV log's pieces begin where its lines do, found by reading the file a chunk of some MiB at a
    time (`formats.LineStarts`): pieces that begin deep in later chunks, at lines of every length, give
    the rows the log gives read whole."""
    rows = pl.read_csv(faulted_log["csv"], infer_schema=False)
    copies = pl.concat([rows.with_columns(round_id=pl.col("round_id") + f"-{i}",
                                          shoe_id=pl.col("shoe_id") + "x" * (i % 7)) for i in range(18)])
    path = tmp_path / "long.csv"
    copies.write_csv(path)
    assert path.stat().st_size > 2 * formats.LineStarts.CHUNK
    log = ingest.scan(path, "round_log")
    whole = log.frame.collect()
    assert whole.height == copies.height
    assert pl.concat([piece.collect() for piece in log.pieces(9_973)]).equals(whole)


def test_a_parquet_footer_that_hides_rows_is_refused_naming_the_file(faulted_log, tmp_path):
    """A footer rewritten to say 1 row over a row group of 400: a reader trusting it audits one round."""
    log = tmp_path / "hidden.parquet"
    pl.read_parquet(faulted_log["parquet"]).head(400).write_parquet(log, row_group_size=1000)
    raw = log.read_bytes()
    footer_at = len(raw) - 8 - int.from_bytes(raw[-8:-4], "little")
    # FileMetaData.num_rows (field 3, i64) follows the schema: 400 as a zigzag varint, 1 written in as many bytes.
    at = raw.index(b"\x16\xa0\x06", footer_at)
    log.write_bytes(raw[:at] + b"\x16\x82\x00" + raw[at + 3:])
    footer = pq.read_metadata(log)
    assert (footer.num_rows, footer.row_group(0).num_rows) == (1, 400)
    done = cli("audit", log, "--out", tmp_path / "out", "--no-contract")
    assert done.returncode == 2, done.stderr
    assert done.stderr == f"error: {log}: its footer says 1 rows but its row groups hold 400; the file is damaged or was written wrongly\n"


def test_a_parquet_file_of_one_long_value_on_every_row_is_refused_before_its_rows_are_read(faulted_log, tmp_path):
    """One 1 MiB shoe_id written once in a dictionary page and 2,000 times as its number: an 18 KB
    file that held 8 GB, each row's copy of the value in every step and output. One long value on one
    row is a log's to hold (tests/test_trust.py shortens it where people read it)."""
    import pyarrow.parquet as pq

    rows = pl.read_parquet(faulted_log["parquet"]).head(2000)
    bomb = tmp_path / "bomb.parquet"
    pq.write_table(rows.with_columns(shoe_id=pl.lit("S" * (1 << 20))).to_arrow(), bomb, compression="zstd",
                   dictionary_pagesize_limit=4 << 20)
    size = bomb.stat().st_size
    assert size < 100_000
    done, peak = cli_peak("audit", bomb, "--out", tmp_path / "out")
    assert done.returncode == 2 and peak < 400, (done.stderr, peak)
    held = pl.read_parquet(bomb).select(pl.col(pl.String).str.len_bytes().sum()).row(0, named=True)
    assert done.stderr == (f"error: {bomb}: its text columns hold {sum(held.values()):,} bytes (shoe_id "
                           f"{held['shoe_id']:,}), over 1,000 times the file's {size:,}; a log's values are not "
                           "repeated so (a file that is not a log?)\n")


def test_a_log_of_many_small_files_holds_about_what_one_file_of_its_rows_holds(faulted_log, tmp_path):
    """4,000 one-row files: a scan reads at most `Tuning.scan_files` of them, since polars keeps buffers
    for every file of a scan (all 4,000 in one held 220 MiB more than one file of the same rows)."""
    rows = pl.read_csv(faulted_log["csv"], infer_schema=False).head(4000)
    (tmp_path / "many").mkdir()
    for i in range(rows.height):
        rows.slice(i, 1).write_csv(tmp_path / "many" / f"{i:05d}.csv")
    rows.write_csv(tmp_path / "one.csv")
    peaks = {}
    for name in ("many", "one.csv"):
        done, peaks[name] = cli_peak("audit", tmp_path / name, "--out", tmp_path / f"out-{name}", "--no-contract")
        assert done.returncode == 1, done.stderr
    found = [output(tmp_path / f"out-{name}" / "findings.parquet").drop("source_file", "source_row").sort(pl.all())
             for name in peaks]
    assert found[0].equals(found[1]) and found[0].height > 100
    assert peaks["many"] < peaks["one.csv"] + 120, peaks


def test_a_file_named_twice_is_read_once_and_its_other_name_listed(tmp_path):
    """A hard link beside its file, or one file given twice: its rounds read twice would all be duplicates,
    and a name dropped unsaid would be a file a nightly job never hears of."""
    (tmp_path / "night").mkdir()
    write(tmp_path / "night" / "a.csv", f"{HEADER}\n{GOOD}\n")
    os.link(tmp_path / "night" / "a.csv", tmp_path / "night" / "b.csv")
    for args, other in (([tmp_path / "night"], tmp_path / "night" / "b.csv"),
                        ([tmp_path / "night" / "b.csv", tmp_path / "night" / "a.csv"], tmp_path / "night" / "a.csv")):
        done = cli("audit", *args, "--out", tmp_path / "out", "--no-contract")
        assert done.returncode == 0, done.stderr
        summary = json.loads((tmp_path / "out" / "summary.json").read_text())
        first = next(path for path in (tmp_path / "night" / "a.csv", tmp_path / "night" / "b.csv") if path != other)
        assert summary["rows_read"] == 1
        assert summary["inputs_not_read"] == [
            {"role": "rounds", "path": str(other), "reason": f"the same file as {first}, read once"}]
        assert f"Not read: 1 entry of the inputs: {other} (the same file as {first}, read once)" in done.stdout


def test_a_line_too_long_is_refused_in_json_lines_and_compressed_logs_naming_the_file_itself(tmp_path):
    """The 1 MiB line bound holds for JSON Lines as for CSV, and inside a compressed log it stops the
    decompression where the line passes it, naming the log (not a copy) and the row or line."""
    import gzip

    rounds = [json.dumps({"round_id": f"R{i}", "player_card_1": "KS"}) for i in range(3)]
    long = json.dumps({"round_id": "R9", "extra": "x" * (3 << 20)})
    (tmp_path / "long.jsonl").write_text("\n".join([*rounds, long]) + "\n")
    with gzip.open(tmp_path / "long.jsonl.gz", "wt") as packed:
        packed.write("\n".join([*rounds, long, *rounds * 2000]) + "\n")
    with gzip.open(tmp_path / "long.csv.gz", "wt") as packed:
        packed.write(f"{HEADER}\n{GOOD}\n{'R2,' + 'y' * (3 << 20)}\n")
    for name, where in (("long.jsonl", "line 4"), ("long.jsonl.gz", "line 4"), ("long.csv.gz", "row 2")):
        done, peak = cli_peak("audit", tmp_path / name, "--out", tmp_path / "out", "--no-contract")
        assert done.stderr == (f"error: {tmp_path / name}: {where} is longer than 1,048,576 bytes; no line of a "
                               "round log is, and it would be held whole (a file that is not a log, or lines joined?)\n")
        assert done.returncode == 2 and peak < 600, peak


def test_a_zstd_log_that_begins_with_a_skippable_frame_is_read(tmp_path):
    """What pzstd writes: a skippable frame (magic 0x184D2A50 to 0x184D2A5F), then the compressed text."""
    import pyarrow as pa

    text = (ASSETS.parent.parent / "data" / "rounds.csv").read_bytes()
    skippable = struct.pack("<II", 0x184D2A5E, 4) + b"pzst"
    (tmp_path / "night.csv.zst").write_bytes(skippable + pa.compress(text, codec="zstd", asbytes=True))
    done = cli("audit", tmp_path / "night.csv.zst", "--out", tmp_path / "out", "--no-contract")
    assert done.returncode == 1, done.stderr
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["rows_read"] == 2000
