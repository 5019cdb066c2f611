"""The bets of a run on polars, settled beside their rounds: a bet log written as its rounds were dealt
is read once beside the staged rounds; the bets left over (of rounds elsewhere, quarantined, missing or
on several rows) are settled by part against every row of their round_ids. DUPLICATE_BET, the bets'
quarantine and the bet log's contract counts come on the way."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from contextvars import copy_context
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

from .. import tuning
from ..checks import expectations, settlement
from ..inputs import ingest
from ..inputs.ids import id_key
from ..inputs.selection import Selection
from . import parts, stored
from .staging import STAGED, Queries, copies_by_key, sink_in_log_order


_NO_ROUND = pl.Series("round_id", [], pl.String)  # where no round quarantined is looked up


def check_bets(bet_log: ingest.Log, bet_pieces: list[pl.LazyFrame], settle_pieces: deque[pl.LazyFrame], label: Path,
               pieces: list[pl.LazyFrame], names: list[str], run: Queries, staging: Path, repeated: pl.Series,
               singles: expectations.Singles | None, ranked: bool = True
                ) -> tuple[dict[str, pl.DataFrame], expectations.Counted]:
    """Settle every bet in scope (`bets_in_scope`: `settle_pieces` cut as the one read cuts the round
    log, `bet_pieces` as the staged pieces); write their findings and quarantine and return their
    counts, and what the bet log's contract needs (`expectations.Counted`: its `singles` counted on the
    way, and the bets whose bet_id's key repeats, in parts, numbered `log_row` in log order).
    `pieces` are the replayable rounds of the log named `label`, `repeated` the round_ids on rows
    whose id's key repeats (`copies_by_key`), `ranked` unless its cards are written as points
    (`settlement.settle`).

    The bets are settled in log order beside the rounds they name (`_settle_in_log_order`), a bet log
    written as its rounds were dealt read once beside the staged rounds; the bets left over, of rounds
    elsewhere, quarantined, missing or on several rows, are settled against every row of their round_ids
    (`_settle_left`). The outputs are taken from each batch of settled bets in memory
    (`settlement.outputs`), not from a copy on disk."""
    for folder in ("findings.bets", "bets_quarantine"):
        (staging / folder).mkdir()
    counts = []

    def keep(settled: pl.DataFrame, name: str) -> None:
        outputs = settlement.outputs(settled)
        found = dict(zip(outputs, pl.collect_all(list(outputs.values()))))
        counts.append(found["counts"])
        ingest.write_parquet(found["findings"], staging / "findings.bets" / f"{name}.parquet")
        ingest.write_parquet(found["quarantine"], staging / "bets_quarantine" / f"{name}.parquet")

    # One condition for every piece: the ids are imploded once, not copied into each piece's plan.
    once = pl.col("reject").is_null() & pl.col("round_id").is_not_null() & ~pl.col("round_id").is_in(repeated.implode())
    facts = deque(settlement.round_facts(stored.scan(file).filter(once))
                  for file in sorted((staging / STAGED).glob("*.parquet")))
    contract: list[dict] | None = None if singles is None else []

    def read(piece: pl.LazyFrame) -> pl.DataFrame:  # each piece of bets is held to the contract as it is read
        bets = run.frame(piece, bet_log.path)
        if contract is not None:
            contract.append(singles.count(bets))
        return bets

    left = _settle_in_log_order(settle_pieces, facts, read, run, (bet_log.path, label), keep, names, ranked,
                                staging / "bets.left")
    _settle_left(left, bet_log.path, label, pieces, names, run, staging, ranked, keep)
    if not counts:  # no bet in scope (a narrowing that keeps none): empty outputs, not missing ones
        keep(run.frame(settlement.settle(bet_pieces[0].clear(), settlement.round_facts(pieces[0]).clear(), _NO_ROUND,
                                         names, ranked), bet_log.path), "none")
    # DUPLICATE_BET beside them: a bet_id's copies may sit anywhere in the bet log.
    # Each bet given its place in log order (`log_row`: its piece above its row in the piece), for the
    # contract's first examples of a repeated bet_id.
    keyed = [piece.with_row_index("log_row").with_columns(log_row=pl.col("log_row").cast(pl.UInt64) + (i << 32))
             .filter(pl.col("bet_id").is_not_null()).with_columns(bet_key=id_key(pl.col("bet_id")))
             for i, piece in enumerate(bet_pieces)]
    copies = copies_by_key(keyed, "bet_key", run, bet_log.path, "bet_copies")
    for k, of_part in enumerate(copies):
        run.sink(f"findings.bets/copies-{k:06d}.parquet", settlement.duplicate_bets(of_part.drop("log_row")),
                 bet_log.path)
    # The batches are not in log order (the bets left over come last); a bet's DUPLICATE_BET comes
    # before its SETTLEMENT.
    sink_in_log_order(stored.scan(staging / "findings.bets"), bet_log, "findings.bets.parquet", run,
                      lambda rows: rows.sort("source_file", "source_row", "check"))
    sink_in_log_order(stored.scan(staging / "bets_quarantine"), bet_log, "bets_quarantine.parquet", run)
    return settlement.bet_totals(pl.concat(counts)), expectations.Counted(contract, {"bet_id": copies})


Keep = Callable[[pl.DataFrame, str], None]  # what is kept of a batch of settled bets, by its name


def _settle_in_log_order(bet_pieces: deque[pl.LazyFrame], ahead: deque[pl.LazyFrame], read: Callable, run: Queries,
                         labels: tuple[Path, Path], keep: Keep, names: list[str], ranked: bool, left_over: Path
                         ) -> list[tuple[Path, int]]:
    """Settle the bets of `bet_pieces` (in log order, each `read` once, on a thread of its own ahead of
    the piece looked up) against the round facts `ahead` (in pieces, in log order, of round_ids on one
    row each) held beside them, `keep` each piece's settled bets (on a third thread, while the next
    piece is looked up); return the bets left over, written to the new folder `left_over`, as files
    and their rows. Both are let go of as they are read: a piece, once collected, holds its scan's
    file metadata, and a list of them held it once for every piece (docs/performance.md).
    `labels`: the bet log's and the round log's, which a failure names.

    A window of facts pieces follows the bets: a piece of bets takes in the next facts piece while
    the bets after its last one found are not found, and the new piece finds some of them (or none
    was found yet: rounds without bets are passed); then the pieces before the one that holds the
    last bet's round are let go. A bet whose round is not in the window, or not between the rounds of
    the piece's first and last bets found there (`_between`), is left over. The window holds at most
    `Tuning.window_pieces` pieces."""
    window, left, j = [], [], 0
    left_over.mkdir()
    most = tuning.current().window_pieces
    bet_label, label = labels

    def settled(found: pl.LazyFrame, name: str) -> None:
        keep(run.frame(found, bet_label), name)

    with ThreadPoolExecutor(max_workers=1) as reader, ThreadPoolExecutor(max_workers=1) as settler:
        # The next piece of bets read (and counted for the contract) while this one is looked up among
        # the rounds, and the one before settled and kept: three threads, one piece each.
        coming = reader.submit(copy_context().run, read, bet_pieces.popleft()) if bet_pieces else None
        settling = None
        while coming is not None:
            bets, j = coming.result(), j + 1
            coming = reader.submit(copy_context().run, read, bet_pieces.popleft()) if bet_pieces else None
            # Rounds are looked for by their id's key, then the text compared: a key is unique among the
            # facts (ids on one row each), and an id differing only invisibly from a round's is left over.
            keys = bets.select(pl.when(pl.col("round_id").is_not_null()).then(id_key(pl.col("round_id")))).to_series()
            hit = (keys.is_in(pl.concat([held["id_key"] for held in window]).implode()).fill_null(False) if window
                   else pl.repeat(False, bets.height, eager=True))
            while ahead and len(window) < most and bets.height and not (hit | keys.is_null())[-1]:
                window.append(run.frame(ahead.popleft(), label))
                more = keys.is_in(window[-1]["id_key"].implode()).fill_null(False)
                if not hit.any() and not more.any():
                    window = window[-1:]
                elif not more.any():
                    break
                hit = hit | more
            if not hit.any():
                unfound = bets
            else:
                beside = bets.with_columns(id_key=keys).join(_between(pl.concat(window), keys.filter(hit)).rename(
                    {"round_id": "id_of_round"}), on="id_key", how="left")
                same = (pl.col("round_id") == pl.col("id_of_round")).fill_null(False)
                unfound = beside.filter(~same).select(bets.columns)
                if unfound.height < bets.height:  # the bets found are taken by the settlement's query, not copied first
                    if settling is not None:
                        settling.result()  # a failure there is raised here
                    found = settlement.settle_beside(beside.lazy().filter(same), _NO_ROUND, names, ranked)
                    settling = settler.submit(copy_context().run, settled, found, f"in-order-{j:06d}")
                last = keys.filter(hit)[-1]
                window = window[next(k for k in reversed(range(len(window))) if (window[k]["id_key"] == last).any()):]
            if unfound.height:
                unfound.write_parquet(left_over / f"{j:06d}.parquet")
                left.append((left_over / f"{j:06d}.parquet", unfound.height))
        if settling is not None:
            settling.result()
    return left


def _between(facts: pl.DataFrame, found: pl.Series) -> pl.DataFrame:
    """The rows of `facts` from the round of the first bet `found` (the keys of a piece's bets whose
    round is among them, in bet log order) to the round of the last: in a bet log written as its
    rounds were dealt, every round the piece's bets name, and the join then holds those rounds alone,
    not the whole window. A bet whose round lies outside them is out of that order, and left over."""
    first, last = facts["id_key"].index_of(found[0]), facts["id_key"].index_of(found[-1])
    return facts.slice(first, last - first + 1) if first <= last else facts


def _settle_left(left: list[tuple[Path, int]], bet_label: Path, label: Path, pieces: list[pl.LazyFrame],
                 names: list[str], run: Queries, staging: Path, ranked: bool, keep: Keep) -> None:
    """Settle the bets left over by `_settle_in_log_order` (`left`: files and their rows) against every
    row of the round log with their round_ids (`pieces`, the replayable rounds, and the quarantined
    ones): at once when they are no more than `Tuning.piece_rows`, read from the staged rounds by their
    ids; else a part of the round_ids (by hash) at a time, the files taken `piece_rows` bets at most
    a piece.

    A join holds one side in memory, and a part holds a fraction of it: the bets and the round facts
    are then first written by part (see `pipeline.engines.parts`), and joined one part at a time."""
    if not left:
        return
    quarantined = stored.scan(staging / "quarantine.parquet").select(pl.col("round_id").drop_nulls())
    piece_rows = tuning.current().piece_rows
    if sum(rows for _, rows in left) <= piece_rows:
        bets = stored.scan([file for file, _ in left])
        ids = run.frame(bets.select(pl.col("round_id").drop_nulls().unique()), bet_label)["round_id"].implode()
        facts = pl.concat([settlement.round_facts(piece.filter(pl.col("round_id").is_in(ids))) for piece in pieces])
        of_ids = run.frame(quarantined.filter(pl.col("round_id").is_in(ids)), label)["round_id"]
        keep(run.frame(settlement.settle(bets, settlement.once_per_round(facts), of_ids, names, ranked), bet_label),
             "left")
        return
    # A file is at most a piece of bets (`bet_rows`): whole files, `piece_rows` bets a piece.
    left = [stored.scan([file for file, _, _ in piece]) for piece in ingest.spans(left, piece_rows)]
    # A part holds about an eighth of a piece of either log, and its settled bets are held whole:
    # quarters peaked higher, for little time saved (docs/performance.md).
    part_count = 8 * max(len(pieces), len(left))
    part = parts.part_of(pl.col("round_id"), part_count)
    by_part = [("bets.parts", bet_label, piece) for piece in left]
    by_part += [("facts.parts", label, settlement.round_facts(piece)) for piece in pieces]
    # The quarantined rounds' ids by part too: read whole by every part, they cost parts x rows, the
    # square of a log quarantined whole.
    by_part.append(("quarantined.parts", label, quarantined))
    schemas = {folder: frame.collect_schema() for folder, _, frame in reversed(by_part)}
    for i, (folder, read_from, frame) in enumerate(by_part):
        ingest.collect(read_from, [parts.write(frame, part, part_count, staging / folder, f"{i:06d}")])
    for k in range(part_count):
        of_part = {folder: parts.read(staging / folder, k, schema) for folder, schema in schemas.items()}
        of_ids = run.frame(of_part["quarantined.parts"], label)["round_id"]
        keep(run.frame(settlement.settle(of_part["bets.parts"], settlement.once_per_round(of_part["facts.parts"]),
                                         of_ids, names, ranked), bet_label), f"{k:06d}")


def bets_in_scope(bet_log: ingest.Log, selection: Selection, staging: Path, rows: int, settle_rows: int
                  ) -> tuple[list[pl.LazyFrame], deque[pl.LazyFrame]]:
    """The bet log in pieces of `rows` bets (counted from Parquet metadata or CSV line ends), and in
    pieces of `settle_rows` as a queue, to be let go of as they are read: a piece, once collected, holds
    its scan's file metadata, and a list held it for every piece (docs/performance.md). Under a
    narrowing of the round log, only the bets of the rounds it keeps, quarantined ones included: the
    others are outside the question asked, not bets of rounds missing from the log (which they would
    be reported as)."""
    pieces, read = list(bet_log.pieces(rows)), deque(bet_log.pieces(settle_rows))
    if not selection:
        return pieces, read
    kept = stored.scan(staging / STAGED).select(pl.col("round_id").drop_nulls().unique()).collect()
    # is_in with the kept ids reaches the scan; a semi-join would hold a whole piece.
    in_scope = pl.col("round_id").is_in(kept["round_id"].implode())
    return [piece.filter(in_scope) for piece in pieces], deque(piece.filter(in_scope) for piece in read)
