"""The audit run: ingest -> replay -> checks -> findings (and settlement, integrity, fairness).

The log is read once, a piece at a time (`_read_once`): each piece is parsed and replayed in memory,
and from that one frame come its quarantine, its per-round findings, its counts, its fairness cells,
its contract counts and, for a log dealt shoe after shoe, its integrity findings (`integrity.InLogOrder`);
the few columns of its rows that the checks across rounds (duplicates, shoes out of log order) and the
bets read are staged, each check its own streaming query over the staging folder (`staging`). The
bets are settled beside their rounds (`bets_beside`); the summary is written by `summary`. The evidence
reads the rows it explains again from the log.
Files are written to a staging folder inside the output directory and moved into place only when the
run is complete, so a run that dies never leaves a findings file that looks complete, a failed run
leaves the previous result whole, and a re-run replaces it.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from contextvars import copy_context
from functools import partial
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import polars as pl

from .. import owned, stops, tuning
from ..rules import cards, profiles
from ..inputs import profile_files
from ..checks import contract, expectations, fairness, integrity, open_shoes
from ..outputs import evidence, report
from ..inputs import discover, ingest
from . import parts, stored
from .bets_beside import bets_in_scope, check_bets
from .staging import STAGED, STAGING_PARQUET, Queries, copies_by_key, sink_in_log_order, staged_pieces
from ..checks.round_checks import DUPLICATE, PER_ROUND
from .preload import preload
from ..errors import InputError, OutputError, first_line
from ..checks.findings import HeldKeys, in_log_order, published, round_findings
from ..inputs.ids import id_key
from ..rules.replay import replay
from ..inputs.selection import Selection
from ..outputs.shown import kept_short
from ..outputs.summary import add_contract, finish, sha256, summarize
from ..inputs.timestamps import utc_column, with_timestamp

QUARANTINE_COLUMNS = ("source_file", "source_row", *ingest.columns("round_log"))
OUTPUTS = discover.AUDIT_OUTPUTS
DOCS = discover.AUDIT_DOCS  # the Great Expectations Data Docs folder in the output directory
SUMMARY = discover.AUDIT_SUMMARY  # what a nightly job reads first: counts, exit code, provenance
OPEN_SHOES = discover.AUDIT_OPEN_SHOES  # each table's last shoe, for the next night's `--after`


def replayed(parsed: pl.LazyFrame) -> pl.LazyFrame:
    """Every parsed row with its card values and its replay (meaningless where `reject` is set)."""
    values = {c.replace("_card", ""): cards.value_expr(pl.col(ingest.code_column(c)))
              for c in ingest.CARD_COLUMNS}
    return replay(parsed.with_columns(**values))


def prepared(rows: pl.LazyFrame, profile: str, notation: str = "cards") -> pl.LazyFrame:
    """Rows of a log (`ingest.Log.frame`) as every check reads them: parsed (card codes, `reject`),
    the default profile filled in, replayed, with `id_key` (for duplicates) and `dealt_utc`."""
    parsed = ingest.parse_rounds(rows, notation).with_columns(pl.col("profile").fill_null(profile))
    keyed = replayed(parsed).with_columns(id_key=id_key(pl.col("round_id")))
    return with_timestamp(keyed, "dealt_at", utc_column("dealt_at"))


def run_id_of(options: Options, logs: list[ingest.Log]) -> str:
    """A new id for each run; with `as_of`, the id of what was audited as of then: the same inputs (by
    SHA-256), options and present give the same id, as they give the same outputs."""
    if options.as_of is None:
        return uuid.uuid4().hex
    audited = {"as_of": options.as_of.astimezone(UTC).isoformat(),
               "inputs": [[sha256(path) for path in log.files] for log in logs],
               "mappings": [mapping and mapping.path and sha256(mapping.path)
                            for mapping in (options.mapping, options.bets_mapping)],
               "profiles": [sha256(Path(reference)) for reference in (options.profile, *(
                   options.mapping.values.get("profile", {}).values() if options.mapping else ()))
                            if profile_files.is_file(reference)],
               "options": [options.profile, options.validate, options.window, options.fairness_threshold,
                           options.selection, options.across_rounds, sorted(options.fail_on)],
               "after": _carried_sha256(options.after)}
    return hashlib.sha256(json.dumps(audited, default=str).encode()).hexdigest()[:32]


def profiles_in(named: Iterable[str | None], label: Path, default: str, mapping: ingest.Mapping | None = None
                ) -> list[str]:
    """The profiles a run needs: the default and every profile `named` by the rows of the log whose
    structure is sound (a malformed row is quarantined, its fields out of place), all known.

    A profile is read from a file only where the command names it (`--profile PATH.toml`, or a
    `mapping` of the column: `--profiles-dir`): a log's own value is a name, so that a log cannot
    point the audit at a file of its choosing."""
    profile_files.load(default)
    names = {default}
    given = {default, *(mapping.values.get("profile", {}).values() if mapping else ())}
    for name in sorted(set(named) - {None}):
        try:
            if profile_files.is_file(name) and name not in given:
                raise InputError(f"unknown rules profile {name!r} (a log names its profiles; a file is "
                                 "given by --profile PATH.toml or --profiles-dir)")
            profile_files.load(name)
        except InputError as error:
            raise InputError(f"{label}: column profile: {error}") from None
        names.add(name)
    return sorted(names)


#: What a run can be flagged for; `Options.fail_on` chooses which of them set exit code 1.
FAIL_ON = ("findings", "quarantine", "contract")


@dataclass(frozen=True)
class Options:
    """How to run an audit; the defaults are the nightly job's."""

    bets: Path | None = None
    profile: str = profiles.DEFAULT
    mapping: ingest.Mapping | None = None
    bets_mapping: ingest.Mapping | None = None
    validate: bool = True  # hold the log to the contract's suites (evaluated by polars: `expectations`)
    data_docs: bool = False  # and write Great Expectations' Data Docs of them (GX's own run)
    window: contract.Window = contract.Window()
    fairness_threshold: float = fairness.DEFAULT_THRESHOLD
    selection: Selection = Selection()
    # Told each phase as it starts, and how many of its pieces are done (for the progress display).
    on_phase: Callable[..., None] = lambda phase, done=None, total=None: None
    across_rounds: bool = True  # integrity and fairness; off only to measure what they cost
    fail_on: frozenset[str] = frozenset(FAIL_ON)  # what makes exit code 1 (see `FAIL_ON`)
    # The present for the checks that compare with it (TIMESTAMP); None: the run's start. Fixed, the
    # same log gives the same findings whenever it is audited.
    as_of: datetime | None = None
    command: tuple[str, ...] | None = None  # the command line that asked for the run, for provenance
    # A house's rules profiles: the log's `profile` names (and `profile`) looked for here first as
    # NAME.toml (see `with_house_profiles`).
    profiles_dir: Path | None = None
    tuning: tuning.Tuning = tuning.Tuning()  # the sizes that bound memory: measured defaults
    # The previous night's output folder: the shoes open at its end are carried in (`open_shoes`).
    after: Path | None = None


def with_house_profiles(options: Options) -> Options:
    """`options` as both engines run them: the default profile found in `profiles_dir` when it is
    there, and the round log's mapping reading the house's profile names as their files
    (`ingest.with_profiles`)."""
    if options.profiles_dir is None:
        return options
    house = profile_files.in_folder(options.profiles_dir)
    return replace(options, profile=house.get(options.profile, options.profile),
                   mapping=ingest.with_profiles(options.mapping, house), profiles_dir=None)


@dataclass(frozen=True)
class Result:
    summary: dict
    out_dir: Path

    @property
    def exit_code(self) -> int:
        return self.summary["exit_code"]


CELLS = "fairness.cells"  # each piece's fairness cells (`fairness.observed_counts`); never published
#: What is staged of each row, by what reads it back. The text of cards, totals and outcome is not:
#: what quotes it (the per-round findings, the quarantine, the contract's counts) is taken from the
#: frame read. Every run: the places and ids that duplicates and the evidence read.
STAGED_KEYED = ("source_file", "source_row", "log_row", "round_id", "id_key", "reject", "table_id", "shoe_id",
                "hand_no", "dealt_at")
_CODES = tuple(map(ingest.code_column, ingest.CARD_COLUMNS))
#: With the checks across rounds: what `integrity` reads where the shoes are out of log order; not
#: staged while the read finds them in order and checks them itself (`integrity.InLogOrder`).
STAGED_FOR_SHOES = ("profile", utc_column("dealt_at"), "burn_cards", "cancelled_cards", *_CODES, "player_drew",
                    "banker_drew")
#: With bets: the replay's facts that the settlement reads (`settlement.round_facts`).
STAGED_FOR_BETS = ("profile", *_CODES, "player_drew", "banker_drew", "natural", "player_final", "banker_final",
                   "result")


def staged_columns(options: Options, shoes: bool = True) -> list[str]:
    """The columns staged of each row in a run with `options`: only what its checks read back; not
    the shoes' (`shoes` False) while the read checks them."""
    wanted = [*STAGED_KEYED, *(STAGED_FOR_SHOES if options.across_rounds and shoes else ()),
              *(STAGED_FOR_BETS if options.bets is not None else ())]
    return list(dict.fromkeys(wanted))


@dataclass
class _Read:
    """What the one read of the log gathered, piece by piece: the counts the summary adds up (`tallies`),
    the contract's counts (`expectations.Singles`) and the profiles named by its rows whose structure
    is sound (`profiles_in`). Its fairness cells (`fairness.observed_counts`) are staged in CELLS."""

    tallies: list[pl.DataFrame]
    levels: list[str]  # the fairness levels the log has (none when the checks across rounds are off)
    contract: list[dict]
    profiles: set[str | None]
    integrity: integrity.InLogOrder | None  # the integrity checks run in the read, for a log dealt shoe after shoe
    staged: list[str]  # the columns staged of each row (`staged_columns`)
    staged_in_order: list[str]  # those staged while `integrity` finds the shoes in log order
    keys: HeldKeys  # the id_key of each row with a round_id, for DUPLICATE_ROUND
    #: The pieces staged so (name, first log_row): staged again whole if a shoe comes back later.
    pieces_in_order: list[tuple[str, int]] = field(default_factory=list)
    carried: pl.DataFrame | None = None  # the previous audit's open shoes, as rows before the log's
    open_shoes: open_shoes.OpenShoes = field(default_factory=open_shoes.OpenShoes)


def _read_once(log: ingest.Log, options: Options, staging: Path, started: datetime,
               carry: pl.DataFrame | None = None) -> _Read:
    """The one read of the log: each piece (see `ingest.Log.pieces`) parsed (cards, reject reason) and
    replayed in memory, then from that frame its quarantine and per-round findings written, its counts,
    fairness cells and contract counts taken, its shoes checked as they are completed (`_Read.integrity`),
    and the columns of its rows that the checks across rounds and the bets read staged (`staged_columns`).
    `log_row` numbers the rows of the log as read, after the rows `carry` brings in (the previous
    audit's open shoes: `open_shoes`), which the shoes' checks read first. `started`: the run's start,
    the present of TIMESTAMP unless `Options.as_of` says otherwise.

    This thread reads each piece, parses and replays it in one query; while the next piece is read, a
    second thread takes it apart (`_take_apart`) and a third checks its shoes (`integrity.InLogOrder`,
    which needs the pieces in log order): the three overlap, and no more than two pieces are held at
    once. The parse and the replay are this thread's, and the shoes have a thread of their own, since
    the thread that took pieces apart was the slower by far (docs/performance.md)."""
    levels = [level for level in fairness.LEVELS if level in log.columns] if options.across_rounds else []
    for folder in (STAGED, "findings.rounds", "quarantine.pieces", *([CELLS] if levels else [])):
        (staging / folder).mkdir()
    singles = (expectations.Singles.of("round_log", log.columns, options.window, parsed_cards=log.notation == "cards",
                                       notation=log.notation)
               if options.validate else None)
    in_log_order = None
    if options.across_rounds:
        def decks_for(named: list[str]) -> dict[str, int]:
            return integrity.decks_of(profiles_in(named, log.path, options.profile, options.mapping))
        in_log_order = integrity.InLogOrder(log.columns, options.as_of or started, decks_for,
                                            staging / "integrity.read", starts_cut=options.selection.since is not None)
    read = _Read([], levels, [], set(), in_log_order, staged_columns(options), staged_columns(options, shoes=False),
                 HeldKeys(sum(log.rows_per_file)))
    rows, first_row = 0, 0 if carry is None else carry.height
    # Let go of as they are read: a piece's frame, once collected, holds its scan's file metadata, and
    # the list of every piece held it for all of them (docs/performance.md).
    pieces = deque(_pieces_read(log))
    count = len(pieces)
    with ThreadPoolExecutor(max_workers=1) as behind, ThreadPoolExecutor(max_workers=1) as shoes:
        taken: list = []
        for i in range(count):
            piece = pieces.popleft()
            options.on_phase("reading and checking each round", i, count)
            frame = _prepared_piece(log, piece, first_row + rows, options.profile)
            rows += frame.height
            for done in taken:
                done.result()  # a failure there is raised here
            if i == 0 and carry is not None:
                read.carried = open_shoes.carried(carry, frame.schema).with_columns(
                    log_row=pl.int_range(pl.len(), dtype=frame.schema["log_row"]))
                _shoes_of(read.carried, read)
            taken = [behind.submit(copy_context().run, _take_apart, frame, f"{i:06d}", log, staging, singles, read),
                     shoes.submit(copy_context().run, _shoes_of, frame, read)]
        for done in taken:
            done.result()
    require_rows(log, rows)
    if in_log_order is not None:
        in_log_order.finish()
        if not in_log_order.in_order:
            _stage_again(log, options, staging, read)
    returned = read.open_shoes.returned()
    if returned.height:
        read.open_shoes.again(returned, _prepared_again(log, options, read))
    still_open = read.open_shoes.table()
    if still_open is not None:
        ingest.write_parquet(still_open, staging / OPEN_SHOES)
    ingest.collect(log.path, [stored.scan(staging / "quarantine.pieces").sink_parquet(
        staging / "quarantine.parquet", lazy=True)])
    return read


def _carried_sha256(after: Path | None) -> str | None:
    """The SHA-256 of the open shoes carried in from `after`: what the run read of it."""
    return sha256(after / OPEN_SHOES) if after is not None and (after / OPEN_SHOES).is_file() else None


def _shoes_of(frame: pl.DataFrame, read: _Read) -> None:
    """A prepared piece (or the carried rows, first) to the checks of shoes in the read, and to the
    shoes still open at its end."""
    if read.integrity is not None:
        read.integrity.add(frame)
    read.open_shoes.add(frame)


def carried_in(after: Path | None) -> pl.DataFrame | None:
    """The shoes open at the end of the audit in folder `after` (`--after`): its open_shoes.parquet, or
    None when it had none. An InputError when `after` holds no audit's outputs, or that file is not its own."""
    if after is None:
        return None
    ours = owned.listed(after)
    if not (after / SUMMARY).is_file() or SUMMARY not in ours:
        raise InputError(f"{after}: not an audit output directory (no summary.json of baccarat-audit in it); "
                         "--after takes the previous night's --out")
    if OPEN_SHOES not in ours:
        return None
    try:
        return pl.read_parquet(after / OPEN_SHOES)
    except (OSError, pl.exceptions.PolarsError) as error:
        raise InputError(f"{after / OPEN_SHOES}: cannot be read ({first_line(error) or type(error).__name__})") from None


def open_shoes_of(still_open: pl.DataFrame | None, after: Path | None, carry: pl.DataFrame | None) -> dict:
    """What summary.json says of the shoes the next night carries in (`still_open`), and, with `--after`,
    where this one's came from."""
    said = {"open_shoes": open_shoes.listed(still_open)}
    if after is not None:
        said["after"] = {"path": str(after / OPEN_SHOES), "sha256": _carried_sha256(after),
                         "shoes_carried": open_shoes.listed(carry)["count"]}
    return said


def _stage_again(log: ingest.Log, options: Options, staging: Path, read: _Read) -> None:
    """The pieces staged without the shoes' columns while the log seemed dealt shoe after shoe, read,
    prepared and staged again whole, for the keyed checks of integrity (`integrity.integrity_findings`),
    where a shoe came back after another: in a log of tables mixed it shows in the first piece or two."""
    if not read.pieces_in_order:
        return
    pieces = _pieces_read(log)
    for name, first in read.pieces_in_order:
        _stage(_prepared_piece(log, pieces[int(name)], first, options.profile), read.staged, staging, name)
    read.pieces_in_order.clear()


def _prepared_again(log: ingest.Log, options: Options, read: _Read) -> Iterator[pl.DataFrame]:
    """The rows the read prepared, read and prepared again a piece at a time, the carried rows first,
    numbered as the read numbered them: for a table's last shoe that it had left and came back to
    (`OpenShoes.returned`)."""
    first = 0
    if read.carried is not None:
        yield read.carried
        first = read.carried.height
    for piece in _pieces_read(log):
        frame = _prepared_piece(log, piece, first, options.profile)
        first += frame.height
        yield frame


def _prepared_piece(log: ingest.Log, piece: pl.LazyFrame, first_row: int, profile: str) -> pl.DataFrame:
    """A piece of the log as the one read holds it: its rows numbered `log_row` from `first_row`, `prepared`."""
    return ingest.collect(log.path, [prepared(piece.with_row_index("log_row", offset=first_row), profile,
                                              log.notation)])[0]


def _stage(frame: pl.DataFrame, columns: list[str], staging: Path, name: str) -> None:
    """The `columns` of a prepared piece staged as `name`, for the checks across rounds to read back."""
    ingest.write_parquet(frame.select(columns), staging / STAGED / f"{name}.parquet", **STAGING_PARQUET)


def _pieces_read(log: ingest.Log) -> list[pl.LazyFrame]:
    """The log cut as the one read cuts it, a staged file a piece: `Tuning.read_rows` rows at most, and
    never more than `Tuning.piece_rows`."""
    sizes = tuning.current()
    return list(log.pieces(min(sizes.read_rows, sizes.piece_rows)))


def _take_apart(frame: pl.DataFrame, name: str, log: ingest.Log, staging: Path, singles: expectations.Singles | None,
                read: _Read) -> None:
    """One piece's rows as read (`ingest.Log.pieces`, numbered `log_row`) and `prepared` (see
    `_read_once`), staged as `name`, its quarantine, per-round findings and fairness cells written, its
    counts and contract counts added to `read`."""
    in_order = read.integrity is not None and read.integrity.in_order
    if in_order:
        read.pieces_in_order.append((name, frame["log_row"][0] if frame.height else 0))
    _stage(frame, read.staged_in_order if in_order else read.staged, staging, name)
    read.keys.add(frame.select(pl.col("id_key").filter(pl.col("round_id").is_not_null())).to_series())
    replayable = frame.lazy().filter(pl.col("reject").is_null())
    queries = {"tallies": tallies(frame.lazy()), "quarantine": quarantined(frame.lazy()),
               "flagged": replayable.filter(pl.any_horizontal(check.flag for check in PER_ROUND)),
               "profiles": frame.lazy().filter(pl.col("malformed").is_null()).select(pl.col("profile").unique())}
    if read.levels:
        queries["fairness"] = fairness.observed_counts(frame.lazy(), read.levels)
    done = dict(zip(queries, ingest.collect(log.path, list(queries.values()))))
    # Rechunked: pl.format panicked on the chunks of a streamed result (pola-rs/polars#25339).
    done["findings"] = round_findings(done["flagged"].rechunk().lazy(), PER_ROUND).collect()
    ingest.write_parquet(done["quarantine"], staging / "quarantine.pieces" / f"{name}.parquet")
    ingest.write_parquet(done["findings"], staging / "findings.rounds" / f"{name}.parquet")
    read.tallies.append(done["tallies"])
    read.profiles.update(done["profiles"]["profile"])
    if read.levels:
        ingest.write_parquet(done["fairness"], staging / CELLS / f"{name}.parquet")
    if singles is not None:
        read.contract.append(singles.count(frame))


def require_rows(log: ingest.Log, rows: int) -> None:
    """A narrowing that keeps no row stops the run: an audit of nothing would pass as clean. (A log
    without a row already stopped `ingest.scan`.)"""
    if not rows:
        raise InputError(f"{log.path}: no row is in the selection ({log.selection}); nothing to audit")


def quarantined(rounds: pl.LazyFrame) -> pl.LazyFrame:
    """The rows of prepared rounds (`prepared`) that cannot be replayed, as quarantine.parquet holds
    them: the log's columns and the reason."""
    return rounds.filter(pl.col("reject").is_not_null()).select(*QUARANTINE_COLUMNS, reason=pl.col("reject"))


def tallies(rounds: pl.LazyFrame) -> pl.LazyFrame:
    """Per file: rows read, rows quarantined, suited cards (CARD_COUNT needs suits), and the first and
    last dealt_at of the rounds audited (the period the audit covers). They add up (`round_counts`)."""
    # Counted a card column at a time, then the counts added: a sum across the columns of each row cost more.
    suited = pl.sum_horizontal((pl.col(ingest.code_column(c)) % 8 != 0).fill_null(False).sum().cast(pl.Int64)
                               for c in ingest.CARD_COLUMNS)
    dealt = pl.col(utc_column("dealt_at")).filter(pl.col("reject").is_null())
    return rounds.group_by("source_file").agg(rows=pl.len().cast(pl.Int64),
                                              rows_quarantined=pl.col("reject").is_not_null().sum().cast(pl.Int64),
                                              suited_cards=suited, first_dealt=dealt.min(), last_dealt=dealt.max())


def round_counts(per_file: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """What the summary counts of the rounds, from `tallies` (of one query, or added up over many)."""
    per_file = per_file.group_by("source_file").agg(pl.col("rows", "rows_quarantined", "suited_cards").sum(),
                                                    pl.col("first_dealt").min(), pl.col("last_dealt").max())
    return {"rows_per_file": per_file.select("source_file", "rows"),
            "rounds": per_file.select(rows_read=pl.col("rows").sum(), rows_quarantined=pl.col("rows_quarantined").sum(),
                                      suited_cards=pl.col("suited_cards").sum(), first_dealt=pl.col("first_dealt").min(),
                                      last_dealt=pl.col("last_dealt").max())}


def _merge_findings(log: ingest.Log, run: Queries, run_id: str, mapping: ingest.Mapping | None) -> None:
    """findings.parquet: the per-round findings in log order, then each integrity check's, the bets' and
    the tables' (TABLE_STATS), in one write. Each piece's findings come by check (`round_findings`),
    and a duplicate's from every piece: they are put in log order a piece of the log at a time
    (`sink_in_log_order`), since findings grow with the log."""
    staging = run.staging
    per_round = sorted([*(staging / "findings.rounds").glob("*.parquet"), *(staging / "findings.duplicates").glob("*")])
    sink_in_log_order(stored.scan(per_round), log, "findings.per_round.parquet", run, in_log_order)
    found = [stored.scan(staging / f"findings.{part}.parquet")
             for part in ("per_round", "integrity", "bets", "tables")
             if (staging / f"findings.{part}.parquet").exists()]
    # A reader of the file alone learns there that its round_ids were made by the audit, not recorded.
    derived = {"round_id": mapping.derived_id} if mapping is not None and mapping.derived_id else None
    ingest.collect(log.path, [published(pl.concat(found), run_id).sink_parquet(
        staging / "findings.parquet", metadata=derived, row_group_size=tuning.current().filed_row_group,
        lazy=True)])


def _check(log: ingest.Log, bet_log: ingest.Log | None, bet_pieces: list[pl.LazyFrame],
           settle_pieces: deque[pl.LazyFrame], names: list[str], options: Options, started: datetime, staging: Path,
           read: _Read) -> tuple[dict[str, pl.DataFrame], dict[str, expectations.Counted]]:
    """Every check across rounds over the staged rounds (and the bets in scope, `bet_pieces`, and cut
    as the one read cut the round log, `settle_pieces`: see `check_bets`); returns
    the small frames the summary needs, with what the one read (`read`) counted, and by contract what
    its expectations need that was counted on the way (`expectations.Counted`)."""
    run, label = Queries(staging), log.path
    counted = round_counts(pl.concat(read.tallies))
    staged = [stored.scan(piece) for piece in staged_pieces(staging)]
    pieces = [piece.filter(pl.col("reject").is_null()) for piece in staged]
    options.on_phase("checking across rounds: repeated round_ids")
    collect = partial(run.frame, label=label)
    (staging / "findings.duplicates").mkdir()
    # The copies of every round_id, quarantined rows included (the contract counts them): DUPLICATE_ROUND
    # is of the rounds replayed, and the contract's uniqueness is judged among them (`expectations.Counted`).
    with_id = [piece.filter(pl.col("round_id").is_not_null()) for piece in staged]
    copies = copies_by_key(with_id, "id_key", run, label, "copies", read.keys.repeated("id_key"))
    on_the_way = {"round_log": expectations.Counted(read.contract, {"round_id": copies})}
    for k, of_part in enumerate(copies):
        options.on_phase("checking across rounds: repeated round_ids", k, len(copies))
        run.sink(f"findings.duplicates/{k:06d}.parquet",
                 round_findings(of_part.filter(pl.col("reject").is_null()), DUPLICATE), label)
    if options.across_rounds:
        options.on_phase("checking across rounds: shoes (CARD_COUNT, SHOE_SEQUENCE, TIMESTAMP)")
        if read.integrity is not None and read.integrity.in_order:
            found = read.integrity.findings()
        else:
            # The shoes carried in (`--after`) first, as the staged pieces hold rows.
            carried = ([] if read.carried is None
                       else [open_shoes.shaped_as(read.carried, pieces[0].collect_schema()).lazy()])
            found = integrity.integrity_findings([*carried, *pieces], integrity.decks_of(names), log.columns,
                                                 options.as_of or started, collect,
                                                 starts_cut=options.selection.since is not None,
                                                 scratch=staging / "integrity")
        # The carried rows' own findings were the previous audit's.
        found = found.filter(pl.col("source_file") != open_shoes.CARRIED)
        sink_in_log_order(found, log, "findings.integrity.parquet", run,
                          lambda rows: rows.sort(integrity.IN_ORDER), first_by="kind")
    if bet_log is not None:
        options.on_phase("settling the bets beside their rounds")
        repeated = collect(pl.concat([of_part.select("round_id") for of_part in copies])
                           if copies else pl.LazyFrame(schema={"round_id": pl.String}))["round_id"]
        singles = expectations.Singles.of("bet_log", bet_log.columns, options.window) if options.validate else None
        bet_counts, on_the_way["bet_log"] = check_bets(bet_log, bet_pieces, settle_pieces, label, pieces, names, run,
                                                       staging, repeated, singles, ranked=log.ranked)
        counted |= bet_counts
    return counted, on_the_way


def kinds_to_fail_on(kinds: str | Iterable[str], named: str) -> frozenset[str]:
    """What makes exit code 1: text of kinds separated by commas (`--fail-on`), or a list of kinds (the
    Python API, where an empty list fails on nothing). An InputError naming `named` for a kind not in
    `FAIL_ON`, and for text naming none: a job's unset variable (`--fail-on "$KINDS"`) would pass every night."""
    if isinstance(kinds, str):
        found = [kind.strip() for kind in kinds.split(",") if kind.strip()]
        known = bool(found)
    else:
        found = list(kinds) if isinstance(kinds, Iterable) else [kinds]
        known = True
    if not known or not all(isinstance(kind, str) and kind in FAIL_ON for kind in found):
        raise InputError(f"{named} {kinds!r}: expected some of {', '.join(FAIL_ON)}")
    return frozenset(found)


def audit(rounds: Path | str | list, out_dir: Path, options: Options = Options()) -> Result:
    """Audit a round log (a file, a directory, a glob or a list: see `discover.expand`) into `out_dir`."""
    try:
        with tuning.using(options.tuning), locked(Path(out_dir)):
            return _audit(rounds, Path(out_dir), options)
    except OutputError as error:
        raise InputError(f"{out_dir}: an output cannot be written ({error})") from None


@ingest.one_row_group_ahead()
def _audit(rounds: Path | str | list, out_dir: Path, options: Options) -> Result:
    started = datetime.now(UTC)
    preload("scipy.special")  # the fairness tails
    out_dir = Path(out_dir)
    owned.claim(out_dir, outputs_of(options))  # before anything is read
    options = with_house_profiles(options)
    log = ingest.scan(rounds, "round_log", options.mapping, options.selection)
    bet_log = ingest.scan(options.bets, "bet_log", options.bets_mapping) if options.bets else None
    run_id = run_id_of(options, [log, *([bet_log] if bet_log else [])])
    carry = carried_in(options.after)
    with staging_in(out_dir, outputs_of(options)) as staging:
        read = _read_once(log, options, staging, started, carry)
        names = profiles_in(read.profiles, log.path, options.profile, options.mapping)
        tested = partial(fairness_tests, stored.scan(staging / CELLS) if read.levels else None, options, staging,
                         log.ranked)
        with ThreadPoolExecutor(max_workers=1) as beside:
            # The fairness statistics read only the cells the read staged: worked out on a thread of their
            # own while the checks across rounds run, each using the cores the other leaves; not beside
            # the bets, which leave none, so that the statistics would only hold their memory longer.
            testing = beside.submit(copy_context().run, tested) if bet_log is None else None
            # Settled, and held to their contract: the bets of the rounds the narrowing keeps.
            sizes = tuning.current()
            # Cut as the checks across rounds cut a log, and in pieces of `Tuning.bet_rows` to be settled.
            bet_pieces, settle_pieces = (bets_in_scope(bet_log, options.selection, staging, sizes.piece_rows,
                                                       min(sizes.bet_rows, sizes.piece_rows))
                                         if bet_log is not None else ([], deque()))
            counted, on_the_way = _check(log, bet_log, bet_pieces, settle_pieces, names, options, started, staging,
                                         read)
            options.on_phase("fairness statistics")
            tests = tested() if testing is None else testing.result()
        if tests is not None:
            # Kept apart until the merge: appended after it, they made a second write of every finding.
            fairness.table_findings(tests, options.fairness_threshold).write_parquet(
                staging / "findings.tables.parquet")
        options.on_phase("writing the findings in log order")
        _merge_findings(log, Queries(staging), run_id, options.mapping)
        if options.data_docs:
            contract.preload()  # imported only now: beside the checks it raised their peak (docs/performance.md)
        findings = stored.scan(staging / "findings.parquet")  # read by queries: it grows with the log
        summary = summarize(started, run_id, log, bet_log, names, counted, findings, tests, options,
                            staging / "flagged")
        summary |= open_shoes_of(read.open_shoes.table(), options.after, carry)
        if options.validate:
            options.on_phase("input contract")
            subjects = [contract.Subject("round_log", log.path, log.columns,
                                         list(log.pieces(tuning.current().piece_rows)), summary["rows_read"],
                                         log.notation)]
            if bet_log is not None:
                subjects.append(contract.Subject("bet_log", bet_log.path, bet_log.columns, bet_pieces,
                                                 summary["bets_read"]))
            add_contract(summary, expectations.evaluate(subjects, options.window, on_the_way), options.fail_on)
            if options.data_docs:  # Great Expectations' own run, for its pages; its counts are the same
                options.on_phase("Data Docs (Great Expectations)")
                contract.validate(subjects, staging, options.window, staging / DOCS)
        summary = finish(summary)
        (staging / SUMMARY).write_text(json.dumps(summary, indent=2) + "\n")
        options.on_phase("report")
        explained = _rows_explained(log, staging, findings, options.profile)
        write_report(staging, findings, log, [explained.lazy()], bet_log, options.profile)
        publish(staging, out_dir, summary["exit_code"])
    return Result(summary, out_dir)


def locked(out_dir: Path) -> AbstractContextManager:
    """`out_dir` held for this run alone (`owned.locked`); an InputError when it is a file."""
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir}: is a file, not an output directory")
    return owned.locked(out_dir, f"{out_dir}: cannot write the output directory")


@contextmanager
def staging_in(out_dir: Path, names: list[str]) -> Iterator[Path]:
    """A new staging folder inside `out_dir` (made if need be), where the outputs are written until
    `publish`, and removed on the way out however the run ends, a stop by signal included
    (`stops.run_folder`). Before it is made: an InputError when one of `names` is held by what this
    tool did not write (`owned.claim`), and what killed runs left is removed (`owned.clean_leftovers`);
    an InputError naming the directory when it cannot be made or written."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputError(f"{out_dir}: is a file, not an output directory")
    owned.claim(out_dir, names)
    owned.clean_leftovers(out_dir)
    with stops.run_folder(out_dir, ".audit-", f"{out_dir}: cannot write the output directory") as staging:
        with owned.hold(staging):
            yield staging


def write_report(staging: Path, findings: pl.LazyFrame, log: ingest.Log, rounds: list[pl.LazyFrame],
                 bet_log: ingest.Log | None, profile: str) -> None:
    """evidence.json (the first findings of each check, explained from `rounds`, prepared rows that
    hold at least the rounds explained) and report.html, beside the other outputs in `staging`."""
    gathered = kept_short(evidence.gather(findings, log.path, rounds, bet_log, profile))
    (staging / "evidence.json").write_text(json.dumps(gathered, indent=1, default=str) + "\n")
    report.write(staging)


def _rows_explained(log: ingest.Log, staging: Path, findings: pl.LazyFrame, profile: str) -> pl.DataFrame:
    """The round rows the evidence explains (see `evidence.gather`), read again from the log and
    prepared: the rows of the first findings of each check, and every row of the rounds their bets were
    placed on. The staged rows say which piece of the log holds each (a staged file per piece of the
    one read, `_read_once`), and only those pieces are read, cut as that read cut them."""
    places, round_ids = evidence.rounds_wanted(findings)
    place = ["source_file", "source_row"]
    staged = stored.scan(staging / STAGED, file_column="staged")
    wanted = [staged.join(places.lazy(), on=place, how="semi")]
    if round_ids.len():
        wanted.append(staged.filter(pl.col("round_id").is_in(round_ids.implode())))
    found = ingest.collect(log.path, [pl.concat(wanted).select("staged", *place).unique()])[0]
    pieces = _pieces_read(log)
    rows = [prepared(pieces[int(Path(file).stem)], profile, log.notation).join(at.lazy(), on=place, how="semi")
            for (file,), at in found.group_by("staged")]
    return ingest.collect(log.path, [pl.concat(rows) if rows else prepared(pieces[0], profile, log.notation).clear()])[0]


def fairness_tests(cells: pl.LazyFrame | None, options: Options, staging: Path, ranked: bool = True
                   ) -> pl.DataFrame | None:
    """Write fairness.parquet from the fairness `cells` (`fairness.observed_counts` of the log's pieces,
    in any order: counts add up); return the table level's tests (None without cells: a log without a
    table, dealer or shoe; without the pair tests when its cards are written as points).

    A level at a time (dealer, shoe, then table, as the report reads them), its groups counted from
    its cells a part at a time (`Tuning.cells_per_part` cells a part, about: a cell a shoe, they grow
    with the log), the parts ranges of the groups in order (`_group_bounds`), each part tested a chunk
    of groups at a time (`fairness.statistics_by_chunk`): written in order, they need no merge."""
    if cells is None:
        return None
    levels = sorted((c for c in fairness.LEVELS if c in cells.collect_schema()), key=lambda c: (c == "table_id", c))
    named = cells.select(pl.col("profile").unique().drop_nulls()).collect()["profile"]
    decks_of = integrity.decks_of(named.to_list())
    skipped = () if ranked else fairness.RANKED
    parts_of_shoes = -(-cells.select(pl.len()).collect().item() // tuning.current().cells_per_part)
    folder = staging / "fairness.pieces"
    folder.mkdir()
    written: list[Path] = []
    for level in levels:
        count = 1 if level == "table_id" else max(1, parts_of_shoes)
        of_level = cells.select(pl.exclude([c for c in levels if c != level])).filter(pl.col(level).is_not_null())
        part = pl.lit(_group_bounds(of_level, level, count)).search_sorted(pl.col(level), side="right")
        for k, rows in enumerate(parts.each([of_level], part, count, pl.LazyFrame.collect,
                                            folder / f"{level}.cells" if count > 1 else None)):
            counts = fairness.group_counts(rows, decks_of, [level])
            for i, tests in enumerate(fairness.statistics_by_chunk(counts, options.fairness_threshold, skipped)):
                written.append(folder / f"{level}-{k:06d}-{i:06d}.parquet")
                tests.write_parquet(written[-1])
    stored.scan(written).sink_parquet(staging / "fairness.parquet")
    return stored.scan(staging / "fairness.parquet").filter(pl.col("level") == "table").collect()


def _group_bounds(cells: pl.LazyFrame, level: str, count: int) -> pl.Series:
    """`count` - 1 values of `level` that cut the groups of `cells` into `count` ranges of about as
    many cells each, in order, taken from every 64th cell's value; equal values fall in one range.
    No bound for one range, and the cells are not read for it."""
    if count == 1:
        return pl.Series(level, [], cells.collect_schema()[level])
    sample = cells.select(level).gather_every(64).collect().to_series().sort()
    return sample.gather([sample.len() * i // count for i in range(1, count)]) if sample.len() else sample


def outputs_of(options: Options) -> list[str]:
    """The names a run with `options` may write in its output directory (the Data Docs with the contract)."""
    return [*OUTPUTS, *([DOCS] if options.validate and options.data_docs else [])]


def publish(staging: Path, out_dir: Path, exit_code: int) -> None:
    """Move the finished outputs into place, replacing and removing only what earlier runs of this
    tool wrote (`owned.publish`). A stop by signal among the moves is ignored, and the run ends as it
    would have; after them, it ends the run with its `exit_code` (`stops.publishing`)."""
    with stops.publishing(exit_code):
        owned.publish(staging, out_dir, [*OUTPUTS, DOCS], last=SUMMARY)


def first_findings(result: Result, count: int) -> list[dict]:
    """The first `count` findings of a finished run, in log order."""
    return stored.scan(result.out_dir / "findings.parquet").head(count).collect().to_dicts()
