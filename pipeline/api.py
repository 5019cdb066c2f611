"""The library: what a notebook or an orchestrator calls, the same audit as the command line's.

`audit` takes a round log (and bets) as paths or as polars frames and returns what it found as polars
frames with the summary; `explain` replays one round step by step, as `explain --json` prints it;
`odds` gives a profile's exact figures. Bad input raises `InputError`, whose message is the line the
command line prints.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from .rules import exact_odds, profiles
from .inputs import profile_files
from .outputs import explanation
from .inputs import discover, ingest, timestamps
from .checks import integrity
from .checks.round_checks import card_name
from .inputs.timestamps import utc_column
from .engines import run
from . import tuning
from .errors import InputError
from .inputs.selection import Selection

#: A log as `audit` and `explain` take it: a file, a folder, a glob, a list of them, or a polars frame
#: with the contract's columns (as a file would hold them).
Log = Path | str | list | pl.DataFrame | pl.LazyFrame


@dataclass(frozen=True)
class Audit:
    """An audit's outputs, read back: the frames are the files of the output directory, whole."""

    summary: dict  # summary.json
    findings: pl.DataFrame  # findings.parquet, in log order
    quarantine: pl.DataFrame  # quarantine.parquet: the rows of the round log not audited, with why
    bets_quarantine: pl.DataFrame | None  # bets_quarantine.parquet; None: no bets were audited
    fairness: pl.DataFrame | None  # fairness.parquet; None: not tested (no table, dealer or shoe)
    out_dir: Path | None  # where the outputs, report.html included, were written; None: nowhere

    @property
    def exit_code(self) -> int:
        """What the command line would exit with: 0 clean, 1 flagged (see `fail_on`)."""
        return self.summary["exit_code"]


def audit(rounds: Log, *, bets: Log | None = None, out_dir: Path | str | None = None,
          profile: str = profiles.DEFAULT, profiles_dir: Path | str | None = None, mapping: str | Path | None = None,
          bets_mapping: str | Path | None = None, contract: bool = True, as_of: datetime | str | None = None,
          fail_on: str | Iterable[str] = run.FAIL_ON, after: Path | str | None = None) -> Audit:
    """Audit `rounds` (and `bets`) as `baccarat-audit audit` does (`after`: the previous night's
    `out_dir`, as `--after`). The outputs are written to `out_dir`
    when one is given (report.html and evidence.json too), else to a temporary folder, removed once
    they are read. A frame is audited as a Parquet file written to a temporary folder: its findings
    name that file in `source_file` and number its rows from 1 in `source_row`. `fail_on` is one kind,
    kinds separated by commas, or a list of kinds (empty: exit code 0 whatever is found); `as_of` a
    datetime or ISO 8601 text."""
    kinds = run.kinds_to_fail_on(fail_on, "fail_on")
    as_of = None if as_of is None else timestamps.moment(as_of, "as_of")
    with ExitStack() as stack:
        rounds = stack.enter_context(_as_file(rounds, "rounds"))
        bets = stack.enter_context(_as_file(bets, "bets")) if bets is not None else None
        out = Path(out_dir) if out_dir is not None else Path(stack.enter_context(
            tempfile.TemporaryDirectory(prefix="baccarat-audit-")))
        options = run.Options(bets=bets, profile=profile, mapping=_mapping(mapping),
                              bets_mapping=_mapping(bets_mapping, "bet_log"), validate=contract, as_of=as_of,
                              fail_on=kinds, after=None if after is None else Path(after),
                              profiles_dir=None if profiles_dir is None else Path(profiles_dir))
        done = run.audit(rounds, out, options)
        read = {name: pl.read_parquet(out / f"{name}.parquet") if (out / f"{name}.parquet").is_file() else None
                for name in ("findings", "quarantine", "bets_quarantine", "fairness")}
        return Audit(done.summary, **read, out_dir=None if out_dir is None else out)


def explain(rounds: Log, round_id: str, *, bets: Log | None = None, profile: str = profiles.DEFAULT,
            profiles_dir: Path | str | None = None, mapping: str | Path | None = None,
            bets_mapping: str | Path | None = None, as_of: datetime | str | None = None) -> list[dict]:
    """Every row of the round log with `round_id`, replayed step by step (or quarantined, with why),
    with the findings of the checks across rounds that name it (its shoe's, read whole; `as_of` the
    present for TIMESTAMP, default now) and its bets settled when `bets` are given: what `explain
    --json` prints, as documented by schemas/explain.schema.json. `explanation.found_anything` of it is
    the exit code's question."""
    as_of = None if as_of is None else timestamps.moment(as_of, "as_of")
    with ExitStack() as stack:
        rounds = stack.enter_context(_as_file(rounds, "rounds"))
        bets = stack.enter_context(_as_file(bets, "bets")) if bets is not None else None
        house = run.with_house_profiles(run.Options(profile=profile, mapping=_mapping(mapping), profiles_dir=(
            None if profiles_dir is None else Path(profiles_dir))))
        profile, round_mapping, bet_mapping = house.profile, house.mapping, _mapping(bets_mapping, "bet_log")
        profile_files.load(profile)
        rows = ingest.rows_for_round(rounds, "round_log", round_id, round_mapping)
        bet_rows = ingest.rows_for_round(bets, "bet_log", round_id, bet_mapping) if bets else []
        bet_ids = sorted({row["bet_id"] for row in bet_rows if row["bet_id"] is not None})
        bet_places = ingest.places_of(bets, "bet_log", "bet_id", bet_ids, bet_mapping) if bet_ids else []
        for row in rows:
            row["profile"] = row["profile"] or profile
        # Held to the profiles as the audit holds a log: an unknown one names the file and column.
        label = discover.expand(rounds)[0]  # the log as audit names it: its first file or folder (+N more)
        run.profiles_in([row["profile"] for row in rows if row["malformed"] is None], label, profile, round_mapping)
        if not rows:
            raise InputError(f"{label}: no row has round_id {round_id!r}{_derived_hint(rounds, round_mapping)}")
        ranked = round_mapping is None or round_mapping.notation == "cards"
        explained = [explanation.explain(row, ranked) for row in rows if row["reject"] is None]
        explanation.note_copies(explained)
        for shoe_id in sorted({entry["shoe_id"] for entry in explained if entry["shoe_id"] is not None}):
            found = _across_rounds(rounds, round_mapping, shoe_id, profile, as_of or datetime.now(UTC))
            for entry in (entry for entry in explained if entry["shoe_id"] == shoe_id):
                entry["across_rounds"] = found.filter((pl.col("source_file") == entry["source_file"])
                                                      & (pl.col("source_row") == entry["source_row"])).to_dicts()
        rejected = [{"round_id": round_id, "source_file": row["source_file"], "source_row": row["source_row"],
                     "quarantined": row["reject"]} for row in rows if row["reject"] is not None]
        if bets:  # with each replayed row; with the first quarantined one when none was replayed
            unsettled = explanation.unsettled(round_id, len(explained), len(rejected))
            for explained_row in explained:
                explained_row["bets"] = explanation.settle_bets(explained_row, bet_rows, unsettled)
            if not explained:
                rejected[0]["bets"] = explanation.settle_bets(rows[0], bet_rows, unsettled)
            for entry in explained + rejected[:1]:
                explanation.note_bet_copies(entry.get("bets", []), bet_places)
        return explained + rejected


def odds(profile: str = profiles.DEFAULT, decks: int | None = None) -> exact_odds.Odds:
    """A profile's exact figures (outcome probabilities, each bet's cases, house edges), as fractions,
    by enumerating every ordered deal from a full shoe of `decks` (default: the profile's)."""
    return exact_odds.odds(profile_files.load(profile), decks)


def _across_rounds(rounds: Path | str | list, mapping: ingest.Mapping | None, shoe_id: str, profile: str,
                   present: datetime) -> pl.DataFrame:
    """The findings of the checks across rounds (CARD_COUNT, SHOE_SEQUENCE, TIMESTAMP) in one shoe:
    its rows read whole from the log, replayed, and checked as the audit checks every shoe; each
    with its file, row, check, expected, recorded and detail."""
    log = ingest.scan(rounds, "round_log", mapping, Selection(shoes=(shoe_id,)))
    shoe = pl.concat(list(log.pieces(tuning.current().piece_rows))).with_row_index("log_row")
    replayed = ingest.collect(log.path, [run.prepared(shoe, profile, log.notation).filter(pl.col("reject").is_null())])[0]
    names = run.profiles_in(replayed["profile"], log.path, profile, mapping)
    decks = integrity.decks_of(names)
    found = integrity.integrity_findings([replayed.lazy()], decks, log.columns, present,
                                         lambda frame: ingest.collect(log.path, [frame])[0])
    found = found.sort(integrity.IN_ORDER).select("source_file", "source_row", "check", "expected", "recorded",
                                                  "detail").collect()
    return pl.DataFrame([finding | _other_rounds(finding, replayed, log.columns) for finding in found.iter_rows(named=True)],
                        schema={**found.schema, **OTHER_ROUNDS})


#: What a finding across rounds names besides its own row: the rounds of the other copies of a card
#: (CARD_COUNT), the hand before (TIMESTAMP, dealt earlier than it).
OTHER_ROUNDS = {"other_copies": pl.List(pl.Struct({"round_id": pl.String, "source_file": pl.String,
                                                   "source_row": pl.Int64})),
                "hand_before": pl.Struct({"round_id": pl.String, "hand_no": pl.String, "dealt_at": pl.String,
                                          "source_file": pl.String, "source_row": pl.Int64})}


def _other_rounds(finding: dict, shoe: pl.DataFrame, columns: frozenset[str]) -> dict:
    """The other rounds of its shoe a finding across rounds is about (`OTHER_ROUNDS`), from the shoe's
    replayed rows: each copy of the card CARD_COUNT counted (its dealt and listed cards, as it counts
    them), or the row before in shoe order (hand_no, then the log's order) that TIMESTAMP compared with."""
    place = ("source_file", "source_row")
    here = (pl.col("source_file") == finding["source_file"]) & (pl.col("source_row") == finding["source_row"])
    if finding["check"] == "CARD_COUNT":
        card = finding["recorded"].split(" ", 1)[1]
        shown = integrity.shown_cards([c for c in integrity.EXTRA_CARDS if c in columns])
        held = shoe.select("round_id", *place, card=pl.concat_list(list(shown.values()))).explode("card")
        copies = held.filter((card_name(pl.col("card")) == card) & ~here).select("round_id", *place)
        return {"other_copies": copies.with_columns(pl.col("source_row").cast(pl.Int64)).to_dicts(), "hand_before": None}
    if finding["check"] == "TIMESTAMP" and (finding["expected"] or "").startswith("not before"):
        # As TIMESTAMP orders a shoe, among its rows whose dealt_at it could read.
        ordered = shoe.filter(pl.col(utc_column("dealt_at")).is_not_null()).with_columns(
            hand=pl.col("hand_no").cast(pl.Int64, strict=False)).sort("log_row").sort(
            "hand", maintain_order=True).with_row_index("at")
        at = ordered.filter(here)["at"]
        if at.len() and at[0] > 0:
            before = ordered.row(at[0] - 1, named=True)
            return {"other_copies": None, "hand_before": {
                "round_id": before["round_id"], "hand_no": before["hand_no"], "dealt_at": before["dealt_at"],
                "source_file": before["source_file"], "source_row": before["source_row"]}}
    return {"other_copies": None, "hand_before": None}


def _derived_hint(rounds: Path | str | list, mapping: ingest.Mapping | None) -> str:
    """Where the mapping derives round_ids, how they read (the log's first), for a round looked for by
    one of its parts alone."""
    if mapping is None or not mapping.round_id:
        return ""
    log = ingest.scan(rounds, "round_log", mapping)
    first = ingest.collect(log.path, [next(log.pieces(1)).select("round_id").head(1)])[0]["round_id"]
    example = f", such as {first[0]!r}" if first.len() and first[0] is not None else ""
    return f"; this log's round_ids are derived from {', '.join(mapping.round_id)}, joined by '/'{example}"


def _mapping(name_or_path: str | Path | None, contract_name: str = "round_log") -> ingest.Mapping | None:
    return None if name_or_path is None else ingest.load_mapping(name_or_path, contract_name)


@contextmanager
def _as_file(log: Log, role: str) -> Iterator[Path | str | list]:
    """A log as the audit reads it: paths as they are; a polars frame written to `ROLE.parquet` in a
    temporary folder, removed on the way out."""
    if not isinstance(log, pl.DataFrame | pl.LazyFrame):
        yield log
        return
    schema = log.collect_schema()
    odd = next(((name, dtype) for name, dtype in schema.items() if _unwritable(dtype)), None)
    if odd is not None:
        raise InputError(f"the {role} frame: column {odd[0]} is of type {odd[1]}, which a log cannot hold; "
                         "cast it to text or a 64-bit number")
    with tempfile.TemporaryDirectory(prefix="baccarat-audit-frame-") as folder:
        path = Path(folder) / f"{role}.parquet"
        (log.collect() if isinstance(log, pl.LazyFrame) else log).write_parquet(path)
        yield path


def _unwritable(dtype: pl.DataType) -> bool:
    """Whether a column of `dtype` (or a field within it) has no Parquet form the audit reads."""
    if isinstance(dtype, pl.Object | pl.Int128 | pl.UInt128):
        return True
    if isinstance(dtype, pl.List | pl.Array):
        return _unwritable(dtype.inner)
    return isinstance(dtype, pl.Struct) and any(_unwritable(field.dtype) for field in dtype.fields)
