"""Evidence: the first few findings of each check, each with the step-by-step replay of its round.

Gathered at the end of an audit, from the rows of the rounds explained (read again from the log by
each engine) and the bet log, and kept in `evidence.json` so that the report can be rebuilt from the
output directory alone. Only a handful of rows per check are read, so the scalar replay (the one that
explains itself) is the right tool here.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import polars as pl

from . import explanation
from ..checks.findings import ON_A_ROUND_ROW
from ..inputs import ingest

PER_CHECK = 3


def _rows(label: Path, frames: list[pl.LazyFrame], places: list[tuple[str, int]]) -> dict[tuple[str, int], dict]:
    """The rows of `frames` (read one at a time) at (source_file, source_row) places."""
    at = pl.DataFrame(places, schema={"source_file": pl.String, "source_row": pl.UInt32}, orient="row")
    # is_in on the row numbers reaches the scan (a join alone held the whole frame); the join is exact.
    near = pl.col("source_row").is_in(at["source_row"].implode())
    return {(row["source_file"], row["source_row"]): row for frame in frames
            for row in ingest.collect(label, [frame.filter(near).join(at.lazy(), on=["source_file", "source_row"],
                                                                        how="semi")])[0].to_dicts()}


def first_findings(findings: pl.LazyFrame, per_check: int = PER_CHECK) -> pl.DataFrame:
    """The first `per_check` findings of each check, in the order of `findings` (the run's id left out:
    it is summary.json's)."""
    # Which rows come first is found on their check and index alone, a pass per row wanted: the least
    # index of each check is a streaming aggregate. The findings grow with the log: taken whole, or by
    # a group-by's head of their checks, they were held whole.
    indexed = findings.with_row_index("at")
    taken = pl.Series("at", [], indexed.collect_schema()["at"])
    for _ in range(per_check):
        least = indexed.filter(~pl.col("at").is_in(taken.implode())).group_by("check").agg(pl.col("at").min())
        taken = taken.append(least.collect()["at"])
    # In log order: the evidence lists checks in the order they first occur. Fetched a row at a time:
    # a filter on the row index decoded every column of every finding.
    rows = [findings.slice(int(at), 1) for at in taken.sort()]
    return (pl.concat(rows) if rows else findings.clear()).collect().select("check", pl.exclude("check", "run_id"))


def rounds_wanted(findings: pl.LazyFrame) -> tuple[pl.DataFrame, pl.Series]:
    """What `gather` explains of the round log, for an engine to fetch: the places (source_file,
    source_row) of the first findings on rounds, and the round_ids of the bets among them (a bet's
    finding names its round_id as the bet log has it), every row of which is explained."""
    first = first_findings(findings)
    round_ids = first.filter(pl.col("source") == "bets")["round_id"].drop_nulls()
    places = first.filter(ON_A_ROUND_ROW).select(
        "source_file", "source_row")
    return places, round_ids


def gather(findings: pl.LazyFrame, label: Path, rounds: list[pl.LazyFrame], bet_log: ingest.Log | None,
           default_profile: str, per_check: int = PER_CHECK) -> dict[str, list[dict]]:
    """For each check code found: its first findings, with `explanation` (and `bets` for SETTLEMENT).

    `rounds` are the parsed rounds (`ingest.parse_rounds`) of the log named `label`, in pieces that are
    read one at a time; of the bet log, only the rows of the bets explained are read (`Log.at_rows`).
    """
    first = first_findings(findings, per_check)
    on_rounds = first.filter(ON_A_ROUND_ROW)
    on_bets = first.filter(pl.col("source") == "bets")
    place = ["source_file", "source_row"]
    bet_places = list(on_bets.select(place).iter_rows())
    bet_rows = _rows(bet_log.path, [bet_log.at_rows(bet_places)], bet_places) if on_bets.height else {}
    round_ids = {row["round_id"] for row in bet_rows.values()}
    wanted = _rows(label, rounds, list(on_rounds.select(place).iter_rows()))
    if round_ids:
        for piece in rounds:
            by_id = piece.filter(pl.col("round_id").is_in(sorted(round_ids)))
            for row in ingest.collect(label, [by_id])[0].to_dicts():
                wanted.setdefault((row["source_file"], row["source_row"]), row)
    explained = {}
    for at, row in wanted.items():
        row["profile"] = row["profile"] or default_profile
        explained[at] = None if row["reject"] else explanation.explain(row)
    by_round_id = {e["round_id"]: e for e in explained.values() if e is not None}
    # Every row of a bet's round was read (`by_id`): a void bet is flagged whatever its round's rows.
    replayed = Counter(e["round_id"] for e in explained.values() if e is not None)
    quarantined = Counter(row["round_id"] for row in wanted.values() if row["reject"])
    evidence: dict[str, list[dict]] = {}
    for finding in first.to_dicts():
        entry = dict(finding)
        if finding["source"] == "rounds" and finding["source_row"] is not None:
            entry["explanation"] = explained.get((finding["source_file"], finding["source_row"]))
        elif finding["source"] == "bets":
            bet = bet_rows[finding["source_file"], finding["source_row"]]
            round_explained = by_round_id.get(bet["round_id"])
            entry["explanation"] = round_explained
            unsettled = explanation.unsettled(bet["round_id"], replayed[bet["round_id"]], quarantined[bet["round_id"]])
            entry["bets"] = explanation.settle_bets(round_explained or {"profile": default_profile}, [bet], unsettled)
        evidence.setdefault(finding["check"], []).append(entry)
    return evidence
