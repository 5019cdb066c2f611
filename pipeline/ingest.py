"""Ingest: open a log lazily, hold it to its contract, and split rows into replayable and quarantined.

Every column is read as text and parsed here, so that a value which cannot be read is caught with
its column and row instead of silently becoming null (polars' `ignore_errors` would hide a bad third
card as "not dealt"). Rows keep their 1-based position in the file (`source_row`, header not counted).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import polars as pl

from pipeline import cards
from pipeline.errors import InputError

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
PARQUET_MAGIC = b"PAR1"


@cache
def contract(name: str) -> dict:
    """A data contract from `schemas/NAME.json`."""
    return json.loads((SCHEMAS / f"{name}.json").read_text())


@cache
def outcome_spellings() -> dict[str, str]:
    """Accepted spellings of a recorded result (upper case) -> PLAYER, BANKER or TIE."""
    spellings = contract("round_log")["outcome_spellings"]
    return {word: outcome for outcome, words in spellings.items() for word in words}


def _format_of(path: Path) -> str:
    if not path.exists():
        raise InputError(f"{path}: no such file")
    if not path.is_file():
        raise InputError(f"{path}: not a file")
    try:
        with path.open("rb") as handle:
            head = handle.read(4)
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror})") from None
    if not head:
        raise InputError(f"{path}: the file is empty; expected a CSV header or a Parquet file")
    if head == PARQUET_MAGIC:
        return "parquet"
    if path.suffix.lower() in {".csv", ".txt"}:
        return "csv"
    raise InputError(f"{path}: neither CSV (.csv) nor Parquet (no PAR1 header)")


@dataclass(frozen=True)
class Log:
    """An opened log: where it is, its format, the columns it has, and its rows as a lazy frame."""

    path: Path
    format: str
    columns: frozenset[str]
    frame: pl.LazyFrame


def scan(path: Path, contract_name: str) -> Log:
    """The log as text columns named by the contract, plus `source_row`.

    Optional columns the file lacks are added as nulls, so that later stages see one shape; a
    required column that is missing is an InputError. Other columns are ignored.
    """
    path = Path(path)
    columns: dict = contract(contract_name)["columns"]
    file_format = _format_of(path)
    if file_format == "parquet":
        try:
            frame = pl.scan_parquet(path)
            schema = frame.collect_schema()
        except pl.exceptions.PolarsError as error:
            raise InputError(f"{path}: not a readable Parquet file ({_first_line(error)})") from None
    else:
        frame = pl.scan_csv(path, infer_schema=False, raise_if_empty=True)
        try:
            schema = frame.collect_schema()
        except pl.exceptions.PolarsError as error:
            raise InputError(f"{path}: not a readable CSV file ({_first_line(error)})") from None
    missing = [c for c, spec in columns.items() if spec["required"] and c not in schema]
    if missing:
        raise InputError(f"{path}: required column {', '.join(missing)} missing "
                         f"(found: {', '.join(schema.names()) or 'none'})")
    text = [
        _clean_text(pl.col(c).cast(pl.String)).alias(c) if c in schema
        else pl.lit(None, dtype=pl.String).alias(c)
        for c in columns
    ]
    return Log(path, file_format, frozenset(schema.names()),
               frame.with_row_index("source_row", offset=1).select("source_row", *text))


def collect(path: Path, frames: list[pl.LazyFrame]) -> list[pl.DataFrame]:
    """`pl.collect_all`, with a read failure met mid-file reported as an InputError on the file."""
    try:
        return pl.collect_all(frames)
    except pl.exceptions.PolarsError as error:
        raise InputError(f"{path}: could not be read to the end ({_first_line(error)})") from None


def _clean_text(column: pl.Expr) -> pl.Expr:
    stripped = column.str.strip_chars()
    return pl.when(stripped != "").then(stripped)


def _first_line(error: Exception) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


CARD_COLUMNS = tuple(f"{hand}_card_{i}" for hand in ("player", "banker") for i in (1, 2, 3))


def code_column(card_column: str) -> str:
    """`player_card_3` -> `player_code_3`: where the parsed card code of a card column goes."""
    return card_column.replace("_card_", "_code_")


def parse_rounds(frame: pl.LazyFrame) -> pl.LazyFrame:
    """Add card codes (`player_code_1` ... `banker_code_3`) and `reject`, the reason a row cannot be replayed.

    A row is replayable when it has a round_id and four readable opening cards, and its third cards
    are readable where present. `reject` names each failing column and its value; null when fine.
    """
    codes = {code_column(c): cards.parse_expr(pl.col(c)) for c in CARD_COLUMNS}
    reasons = [pl.when(pl.col("round_id").is_null()).then(pl.lit("round_id is empty"))]
    for column in CARD_COLUMNS:
        raw, parsed = pl.col(column), pl.col(code_column(column))
        reasons.append(pl.when(raw.is_not_null() & parsed.is_null())
                       .then(pl.format("{} '{}' is not a card", pl.lit(column), raw)))
        if not column.endswith("_3"):
            reasons.append(pl.when(raw.is_null()).then(pl.lit(f"{column} is empty")))
    return frame.with_columns(**codes).with_columns(
        reject=pl.concat_str(reasons, separator="; ", ignore_nulls=True).replace("", None)
    )


def rows_for_round(path: Path, contract_name: str, round_id: str) -> list[dict]:
    """Every row of a log carrying `round_id` (round logs parsed), for an investigation of one round."""
    log = scan(path, contract_name)
    wanted = log.frame.filter(pl.col("round_id") == round_id)
    if contract_name == "round_log":
        wanted = parse_rounds(wanted)
    return collect(log.path, [wanted])[0].to_dicts()
