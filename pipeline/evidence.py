"""Evidence: the first few findings of each check, each with the step-by-step replay of its round.

Gathered at the end of an audit, from the input files, and kept in `evidence.json` so that the report
can be rebuilt from the output directory alone. Only a handful of rows per check are read, so the
scalar replay (the one that explains itself) is the right tool here.
"""

from __future__ import annotations

import polars as pl

from pipeline import explain, ingest

PER_CHECK = 3


def _rows(log: ingest.Log, source_rows: list[int], parse: bool) -> dict[int, dict]:
    wanted = log.frame.filter(pl.col("source_row").is_in(source_rows))
    if parse:
        wanted = ingest.parse_rounds(wanted)
    return {row["source_row"]: row for row in ingest.collect(log.path, [wanted])[0].to_dicts()}


def gather(findings: pl.DataFrame, log: ingest.Log, bet_log: ingest.Log | None, default_profile: str,
           per_check: int = PER_CHECK) -> dict[str, list[dict]]:
    """For each check code found: its first findings, with `explanation` (and `bets` for SETTLEMENT)."""
    first = findings.group_by("check", maintain_order=True).head(per_check)
    on_rounds = first.filter((pl.col("source") == "rounds") & pl.col("source_row").is_not_null())
    on_bets = first.filter(pl.col("source") == "bets")
    bet_rows = _rows(bet_log, on_bets["source_row"].to_list(), parse=False) if on_bets.height else {}
    round_ids = {row["round_id"] for row in bet_rows.values()}
    rounds = _rows(log, on_rounds["source_row"].to_list(), parse=True)
    if round_ids:
        by_id = log.frame.filter(pl.col("round_id").is_in(sorted(round_ids)))
        for row in ingest.collect(log.path, [ingest.parse_rounds(by_id)])[0].to_dicts():
            rounds.setdefault(row["source_row"], row)
    explained = {}
    for source_row, row in rounds.items():
        row["profile"] = row["profile"] or default_profile
        explained[source_row] = None if row["reject"] else explain.explain(row)
    by_round_id = {e["round_id"]: e for e in explained.values() if e is not None}
    evidence: dict[str, list[dict]] = {}
    for finding in first.to_dicts():
        entry = dict(finding)
        if finding["source"] == "rounds" and finding["source_row"] is not None:
            entry["explanation"] = explained.get(finding["source_row"])
        elif finding["source"] == "bets":
            bet = bet_rows[finding["source_row"]]
            round_explained = by_round_id.get(bet["round_id"])
            entry["explanation"] = round_explained
            entry["bets"] = explain.settle_bets(round_explained, [bet]) if round_explained else []
        evidence.setdefault(finding["check"], []).append(entry)
    return evidence
