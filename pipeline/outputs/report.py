"""The regulator report: one self-contained HTML page built from an audit's output directory.

Everything comes from the files the audit wrote (summary.json, findings, quarantines, fairness,
evidence.json), so `baccarat-audit report DIR` rebuilds it without re-auditing. Charts are inline
SVG with their text as text (`pipeline.outputs.charts`); the page loads nothing from anywhere.
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path

import polars as pl

from . import charts, explanation
from ..checks import fairness, integrity, settlement
from ..checks.settlement import money_str
from ..inputs import discover
from .. import owned
from ..engines import stored
from ..checks.round_checks import CHECKS
from ..checks.findings import ON_A_ROUND_ROW, row_key
from ..errors import InputError, first_line
from .shown import counted, shown
from .summary import narrowing, selected_of
from ..inputs.timestamps import timestamp

MEANINGS = ({c.code: c.meaning for c in CHECKS} | integrity.MEANINGS
            | {"SETTLEMENT": settlement.MEANING, "DUPLICATE_BET": settlement.DUPLICATE_MEANING,
               "TABLE_STATS": fairness.MEANING})
EXIT_MEANINGS = {0: "clean: every row audited, nothing flagged",
                 1: "findings, quarantined rows or an unmet expectation"}
BAND_Z = 3.29  # a 99.9% band around each expected share
MOST_TABLES = 40  # tables drawn in the outcome chart (the most deviating first)
MOST_REASONS = 20

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; color: #1a1a1a; max-width: 70rem; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.5rem; margin-bottom: .2rem; } h2 { border-bottom: 2px solid #ccc; margin-top: 2.2rem; }
.verdict { font-size: 1.15rem; font-weight: 600; padding: .6rem .8rem; border-radius: 4px; }
.clean { background: #e6f4ea; } .flagged { background: #fdecea; }
table { border-collapse: collapse; margin: .6rem 0; } td, th { border: 1px solid #ccc; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, .hash { font-family: ui-monospace, monospace; font-size: .85em; word-break: break-all; }
.headline td { font-size: 1.05rem; } .chart svg { max-width: 100%; height: auto; }
.finding { border-left: 4px solid #c62828; padding: .2rem .8rem; margin: .8rem 0; background: #fafafa; }
.muted { color: #666; } .scroll { max-height: 32rem; overflow: auto; }
@media print { body { margin: 0; max-width: none; font-size: 11px; } h2 { break-after: avoid; }
  .finding, .chart { break-inside: avoid; } tr { break-inside: avoid; } .scroll { max-height: none; overflow: visible; } }
"""


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _table(headers: list[str], rows: list[list[object]], numeric: set[int] = frozenset()) -> str:
    # A check code may break after its underscores: the matrix of checks fits the screen and the page.
    head = "".join(f"<th>{_e(h).replace('_', '_<wbr>')}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="num">{_e(v)}</td>' if i in numeric else f"<td>{_e(v)}</td>"
                         for i, v in enumerate(row)) + "</tr>"
        for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _chart(svg: str) -> str:
    return f'<div class="chart">{svg}</div>'


def _over_time(findings: pl.LazyFrame) -> str:
    dealt_at = pl.col("dealt_at")  # a UTC time; text in the findings of versions before summary schema 3
    typed = findings.collect_schema()["dealt_at"] != pl.String
    dated = findings.select(at=dealt_at if typed else timestamp(dealt_at)).drop_nulls()
    first, last = dated.select(first=pl.col("at").min(), last=pl.col("at").max()).collect().row(0)
    if first is None:
        return '<p class="muted">No finding carries a readable dealt_at: no chart over time.</p>'
    every, unit = ("1h", "hour") if (last - first).total_seconds() <= 3 * 86400 else ("1d", "day")
    buckets = dated.group_by(pl.col("at").dt.truncate(every)).len().sort("at").collect()
    labels = [t.strftime("%Y-%m-%d %H:00" if unit == "hour" else "%Y-%m-%d") for t in buckets["at"]]
    return _chart(charts.columns(labels, buckets["len"].to_list(), f"Findings per {unit} dealt (UTC)"))


def _outcome_chart(tests: pl.DataFrame) -> str:
    tables = tests.filter((pl.col("level") == "table") & pl.col("test").is_in(["banker_wins", "player_wins", "ties"]))
    if tables.height == 0:
        return ""
    worst = (tables.group_by("group").agg(pl.col("statistic").abs().max().alias("z"))
             .sort(["z", "group"], descending=[True, False]).head(MOST_TABLES)["group"].sort().to_list())
    shown = tables.filter(pl.col("group").is_in(worst))
    colours = {"banker_wins": charts.RED, "player_wins": charts.BLUE, "ties": charts.GREEN}
    series = {}
    for test in colours:
        rows = {r["group"]: r for r in shown.filter(pl.col("test") == test).iter_rows(named=True)}
        shares = [(rows[g]["observed"] / rows[g]["rounds"], rows[g]["expected"] / rows[g]["rounds"], rows[g]["rounds"])
                  for g in worst]
        series[test.replace("_", " ")] = [(share, expected, BAND_Z * math.sqrt(expected * (1 - expected) / rounds))
                                          for share, expected, rounds in shares]
    svg = charts.dots(worst, series, {t.replace("_", " "): c for t, c in colours.items()},
                      "Outcomes per table against their exact expectation",
                      "share of rounds (dot: observed; bar: exact expectation with 99.9% band)")
    note = ("" if len(worst) == tables["group"].n_unique() else
            f'<p class="muted">The {len(worst)} tables furthest from expectation are drawn; all are in fairness.parquet.</p>')
    return _chart(svg) + note


BET_CHECKS = ("SETTLEMENT", "DUPLICATE_BET")


def _verdict(summary: dict) -> str:
    """The first thing on the page: what was found, counted apart for rounds and bets, and what the
    audit did not look at (checks skipped and why, bets not given), so that a clean run claims no more
    than was checked; the tables flagged for fairness and the period covered."""
    clean, said, covered, limits = _verdict_parts(summary)
    limits_text = ("<br>Not checked: " + _e(". ".join(limits)) + ".") if limits else ""
    return f'<p class="verdict {"clean" if clean else "flagged"}">{_e(said)}{_e(covered)}{limits_text}</p>'


def _verdict_parts(summary: dict) -> tuple[bool, str, str, list[str]]:
    """The verdict as plain text: whether the run is clean, what it found, the period it covers, and
    what it did not check (`_verdict`, and the sign-off restating it)."""
    # A table's finding (TABLE_STATS) is on no round: said apart, as the tables flagged.
    round_findings = sum(n for check, n in summary["findings"].items() if check not in (*BET_CHECKS, "TABLE_STATS"))
    bet_findings = sum(n for check, n in summary["findings"].items() if check in BET_CHECKS)
    unmet = [role for role, c in summary.get("contract", {}).items() if not c["success"]]
    quarantined = summary["rows_quarantined"] + summary.get("bets_quarantined", 0)
    tables = summary.get("fairness", {}).get("tables_flagged", [])
    skipped = {check: state.removeprefix("skipped: ") for check, state in summary["checks"].items()
               if state.startswith("skipped")}
    period = summary.get("period")
    audited = summary["rows_read"] - summary["rows_quarantined"]
    covered = (f" Rounds dealt from {period['first_dealt_at']} to {period['last_dealt_at']}." if period
               else " Period unknown: no dealt_at of a round audited could be read." if audited
               else " Nothing audited: every row of the round log was quarantined.")
    limits = []
    if skipped:
        ran = len(summary["checks"]) - len(skipped)
        limits.append(f"{ran} of {len(summary['checks'])} checks ran; skipped: "
                      + "; ".join(f"{check} ({why})" for check, why in skipped.items()))
    if "contract" not in summary:
        limits.append("the input contract (the run was told not to hold the log to it: --no-contract)")
    if not (round_findings or bet_findings or quarantined or unmet or tables):  # the state, not the exit code
        bets = f" and {summary['bets_read']:,} bets" if "bets_read" in summary else ""
        checked = "dealt, totalled, recorded" + (" and paid" if "bets_read" in summary else "")
        selected = selected_of(summary)
        return (True, f"Clean run: all {summary['rows_read']:,} rounds{selected}{bets} were audited and every "
                      f"check that ran found each one {checked} by the book; nothing was quarantined.", covered, limits)
    parts = [f"{counted(round_findings, 'round finding', ',')} on {counted(summary['rounds_flagged'], 'round', ',')}"
             + (f" of {summary['rows_read']:,} selected ({narrowing(summary)})" if narrowing(summary) else "")]
    if "bets_not_judged" in summary:
        parts.append(f"bets not judged: {summary['bets_not_judged']}")
    elif "bets_read" in summary:
        parts.append(f"{counted(bet_findings, 'bet finding', ',')} "
                     f"({counted(summary['bets_flagged'], 'bet', ',')} wrongly paid)")
    if summary["rows_quarantined"]:
        parts.append(f"{counted(summary['rows_quarantined'], 'row', ',')} of the round log quarantined")
    if summary.get("bets_quarantined"):
        parts.append(f"{counted(summary['bets_quarantined'], 'bet', ',')} quarantined")
    if unmet:
        parts.append(f"input contract not met ({', '.join(unmet)})")
    if tables:
        parts.append(f"fairness: table{'s' if len(tables) > 1 else ''} {', '.join(tables)} flagged")
    return False, f"Not clean: {'; '.join(parts)}.", covered, limits


def _provenance(summary: dict) -> str:
    kept = narrowing(summary)
    inputs = [[i["role"], i["path"], i["format"], "not counted" if i["rows"] is None else i["rows"],
               *([i.get("rows_selected", i["rows"])] if kept else []), i["sha256"],
               f"{i['mapping']['path']} ({i['mapping']['sha256'][:12]}…)"
               + (f"; round_id {i['mapping']['round_id']}" if "round_id" in i["mapping"] else "") if "mapping" in i else ""]
              for i in summary["inputs"]]
    rules = [[name, "contract", sha] for name, sha in summary["rules"]["contract"].items()]
    # A profile's own file first, then the bases it overrides; its description says what game it is.
    described = summary["rules"].get("descriptions", {})  # not in the summaries of versions before it
    for profile, files in summary["rules"]["profiles"].items():
        for k, (path, sha) in enumerate(files.items()):
            what = (f"base of profile {profile}" if k
                    else f"profile {profile}" + (f": {described[profile]}" if described.get(profile) else ""))
            rules.append([path, what, sha])
    status = summary["exit_code"]
    return (
        "<h2>Provenance</h2>"
        + _table(["tool", "version", "started (UTC)", "exit status"],
                 [[summary["tool"]["name"], summary["tool"]["version"], summary["started_at"],
                   f"{status}: {EXIT_MEANINGS.get(status, '')}"]])
        + "<h3>Inputs</h3>" + (f"<p>Narrowed to {_e(kept)}: each file's rows, and the rows of it audited.</p>"
                               if kept else "")
        + _table(["role", "path", "format", "rows", *(["rows selected"] if kept else []), "SHA-256", "mapping"],
                 inputs, {3, 4} if kept else {3})
        + _not_read(summary["inputs_not_read"])
        + "<h3>Rules</h3>" + _table(["file", "what", "SHA-256"], rules)
    )


def _not_read(unread: list[dict]) -> str:
    """The files beside the logs in the input folders that were not read, for the reader to rule on."""
    if not unread:
        return ""
    return ("<h3>Not read</h3><p>Entries of the input folders that were not audited, and why:</p>"
            + _table(["role", "path", "reason"], [[u["role"], u["path"], u.get("reason", "")] for u in unread]))


def _headline(summary: dict) -> str:
    rows = [["rounds read", f"{summary['rows_read']:,}"], ["rounds audited", f"{summary['rounds_audited']:,}"],
            ["rounds flagged", f"{summary['rounds_flagged']:,}"], ["rounds quarantined", f"{summary['rows_quarantined']:,}"]]
    if "bets_read" in summary:
        rows += [["bets read", f"{summary['bets_read']:,}"], ["bets settled", f"{summary['bets_settled']:,}"],
                 ["bets wrongly paid", f"{summary['bets_flagged']:,}"],
                 ["bets quarantined", f"{summary['bets_quarantined']:,}"],
                 *([f"{key} in total", settlement.in_currencies(summary["money"], key)]
                   for key in ("overpaid", "underpaid"))]
    return '<h2>Headline</h2><div class="headline">' + _table(["figure", "count or amount"], rows, {1}) + "</div>"


def _explanation(entry: dict) -> str:
    explained = entry.get("explanation")
    # A table's finding (TABLE_STATS) is on no row and no round: it names its table alone.
    place = [f"row {_e(entry['source_row'])} of the {_e(entry['source'])} log"] if entry.get("source_row") else []
    place += [f"round <code>{_e(entry['round_id'])}</code>"] if entry.get("round_id") else []
    place += [f"bet <code>{_e(entry['bet_id'])}</code>"] if entry.get("bet_id") else []
    place += [f"table {_e(entry['table_id'])}"] if entry.get("table_id") else []
    parts = [f"<p><b>{_e(entry['check'])}</b> — {', '.join(place)}</p>",
             f"<p>{_e(entry['detail'])}</p>",
             f"<p>Expected <b>{_e(entry['expected'])}</b>, recorded <b>{_e(entry['recorded'])}</b>.</p>"]
    if explained:
        parts.append("<ol>" + "".join(f"<li>{_e(step)}</li>" for step in explained["steps"]) + "</ol>")
        if "by_the_procedure" in explained:  # not in the evidence of versions before it
            parts.append(f"<p>{_e(explanation.procedure_text(explained['by_the_procedure']))}</p>")
        parts.append(_table(["field", "replayed", "recorded", "agrees"],
                            [[c["field"], c["replayed"], c["recorded"] or "—",
                              {True: "yes", False: "NO", None: "not recorded"}[c["agrees"]]]
                             for c in explained["comparisons"]]))
    for bet in entry.get("bets", []):
        parts.append("<ol>" + "".join(f"<li>{_e(step)}</li>" for step in bet["steps"]) + "</ol>")
    return '<div class="finding">' + "".join(parts) + "</div>"


def _checks(summary: dict, evidence: dict | None) -> str:
    out = ["<h2>Checks</h2>"]
    # A skipped check found nothing because it did not look: "-", not 0.
    codes = [*summary["findings"], *(code for code in summary["checks"] if code not in summary["findings"])]
    rows = [[code, MEANINGS.get(code, ""), summary["checks"].get(code, "ran"),
             f"{summary['findings'].get(code, 0):,}" if summary["checks"].get(code, "ran") == "ran" else "-"]
            for code in codes]
    out.append(_table(["check", "what it means", "state", "findings"], rows, {3}))
    for code, count in summary["findings"].items():
        if not count:
            continue
        shown = (evidence or {}).get(code, [])
        replayed = (f"The first {len(shown)} in log order, replayed step by step" if evidence is not None
                    else "None replayed here: the folder has no evidence.json")
        out.append(f'<h3 id="{_e(code)}">{_e(code)}: {counted(count, "finding", ",")}</h3><p>{_e(MEANINGS.get(code, ""))}</p>'
                   f'<p class="muted">{replayed}; all are in findings.parquet.</p>')
        out += [_explanation(entry) for entry in shown]
    return "".join(out)


def _contract(out_dir: Path, summary: dict) -> str:
    if "contract" not in summary:
        return "<h2>Input contract</h2><p>The contract was not run (--no-contract).</p>"
    docs = ('the Data Docs are in <a href="contract/index.html">contract/index.html</a>'
            if (out_dir / "contract" / "index.html").exists() else "Data Docs were not asked for (--data-docs)")
    out = [f"<h2>Input contract</h2><p>Great Expectations suites from <code>schemas/</code>; {docs}.</p>"]
    for role, result in summary["contract"].items():
        rows = [[e["type"].removeprefix("expect_"), e["column"] or "",
                 e.get("skipped") or ("met" if e["success"] else "NOT MET"), e.get("unexpected_count"),
                 ", ".join(map(str, e.get("examples") or []))] for e in result["expectations"]]
        out.append(f"<h3>{_e(role)}: {'all expectations met' if result['success'] else 'not met'}</h3>")
        out.append(_table(["expectation", "column", "result", "unexpected", "examples"], rows, {3}))
    return "".join(out)


def _quarantine(out_dir: Path, summary: dict) -> str:
    out = ["<h2>Quarantine</h2>"]
    for name, label in (("quarantine.parquet", "round-log rows"), ("bets_quarantine.parquet", "bets")):
        path = out_dir / name
        if not path.exists():
            continue
        reasons = (stored.scan(path)
                   .select(pl.col("reason").str.replace_all(r"'[^']*'", "'…'").alias("reason"), "source_row")
                   .group_by("reason").agg(pl.len().alias("rows"), pl.col("source_row").head(5).alias("first rows"))
                   .sort(["rows", "reason"], descending=[True, False]).collect())
        total = int(reasons["rows"].sum()) if reasons.height else 0
        out.append(f"<h3>{total:,} {label} quarantined</h3>")
        if total:
            out.append(_table(["why", "rows", "first rows"],
                              [[r["reason"], f"{r['rows']:,}", ", ".join(map(str, r["first rows"]))]
                               for r in reasons.head(MOST_REASONS).iter_rows(named=True)], {1}))
    return "".join(out)


def _fairness_section(out_dir: Path, summary: dict) -> str:
    if "fairness" not in summary:
        return "<h2>Fairness</h2><p>The log has no table_id, dealer_id or shoe_id: no statistics.</p>"
    # Table rows only: the dealer and shoe rows grow with the log, and the page shows tables.
    tests = stored.scan(out_dir / "fairness.parquet").filter(pl.col("level") == "table").collect()
    f = summary["fairness"]
    flagged = ", ".join(f["tables_flagged"]) or "none"
    rows = [[shown(r["group"]), r["rounds"], r["test"].replace("_", " "),
             "" if r["observed"] is None else f"{r['observed']:.0f}",
             "" if r["expected"] is None else f"{r['expected']:.1f}", f"{r['statistic']:.2f}",
             r["method"], r["skipped"] or fairness.p_text(r["p_value"]).removeprefix("= "),
             "" if r["p_adjusted"] is None else fairness.p_text(r["p_adjusted"]).removeprefix("= "),
             ("FLAGGED" if r["test"] in fairness.FLAGGED_TESTS else "fails") if r["flagged"] else ""]
            for r in tests.filter(pl.col("level") == "table").head(MOST_TABLES * TESTS_A_TABLE).iter_rows(named=True)]
    return ("<h2>Fairness</h2>"
            f"<p>Tables flagged (Benjamini-Hochberg corrected p below {f['threshold']:g}): <b>{_e(flagged)}</b>. "
            "Expected values are exact, from the enumeration of each round's shoe; p-values from exact binomial "
            "tests, and for the outcomes the chi-square test where every expected count is at least "
            f"{fairness.MIN_EXPECTED}, else the exact multinomial test. A flag is a reason to look, "
            "not proof of a stacked shoe.</p>"
            + "".join(f"<p>Table {_e(shown(table))} is not tested ({_e(why)}): the rows left may not stand for "
                      "the table.</p>" for table, why in f.get("tables_skipped", {}).items())
            + "".join(f"<p>The {test.replace('_', ' ')} test is {_e(why)}.</p>" for test, why in f.get("skipped", {}).items())
            + _outcomes_compared(f.get("outcomes"))
            + _outcome_chart(tests)
            + _table(["table", "rounds", "test", "observed", "expected", "z / chi²", "method", "p", "corrected p", "verdict"],
                     rows, {1, 3, 4, 5, 7, 8}))


#: Rows of fairness.parquet per table: each statistic, replayed and recorded, and their two chi-squares.
TESTS_A_TABLE = len(fairness.STATISTICS) + len(fairness.RECORDED) + 2


def _outcomes_compared(outcomes: dict | None) -> str:
    """The recorded outcomes (what the house paid) beside the replayed ones, and where they disagree."""
    if outcomes is None:  # an output directory of a version before them
        return ""
    def listed(tables: list[str]) -> str:
        return _e(", ".join(tables)) or "none"
    said = (f"<p>Outcomes as recorded in the log (the <i>recorded</i> tests, corrected apart): tables whose "
            f"recorded Banker/Player/Tie shares fail their chi-square: <b>{listed(outcomes['recorded_flagged'])}"
            f"</b>; as replayed from the cards: <b>{listed(outcomes['replayed_flagged'])}</b>.")
    if outcomes["disagree"]:
        said += (f" <b>The two disagree for {listed(outcomes['disagree'])}</b>: the results recorded, and paid, "
                 "lean where the cards do not, or the other way.")
    return said + "</p>"


def render(out_dir: Path) -> str:
    """The report page for an audit output directory."""
    out_dir = Path(out_dir)
    try:
        summary = json.loads((out_dir / discover.AUDIT_SUMMARY).read_text())
        if not isinstance(summary, dict):
            raise ValueError("summary.json is not a JSON object")
    except (OSError, ValueError) as error:
        missing = isinstance(error, FileNotFoundError) and error.filename
        why = f"no {Path(error.filename).name} in it" if missing else first_line(error) or type(error).__name__
        raise InputError(f"{out_dir}: not an audit output directory ({why})") from None
    # The tables the page reads, each named where it is missing or damaged.
    for name in ("findings.parquet", *(["fairness.parquet"] if "fairness" in summary else [])):
        if not (out_dir / name).is_file():
            raise InputError(f"{out_dir}: not an audit output directory (no {name} in it)")
        try:
            stored.scan(out_dir / name).collect_schema()
        except (OSError, pl.exceptions.PolarsError) as error:
            raise InputError(f"{out_dir}: not an audit output directory ({name}: "
                             f"{first_line(error) or type(error).__name__})") from None
    # Counted by queries, not read whole: findings grow with the log.
    findings = stored.scan(out_dir / "findings.parquet")
    evidence_path = out_dir / "evidence.json"
    try:
        evidence = json.loads(evidence_path.read_text()) if evidence_path.exists() else None
    except (OSError, ValueError) as error:
        raise InputError(f"{evidence_path}: cannot be read ({first_line(error) or type(error).__name__})") from None
    drawn = ""
    by_check = findings.group_by("check").len().sort(["len", "check"], descending=[True, False]).collect()
    if by_check.height:
        by_table = (findings.filter(pl.col("table_id").is_not_null()).group_by("table_id").len()
                    .sort(["len", "table_id"], descending=[True, False]).head(MOST_TABLES).collect())
        drawn = (_chart(charts.bars(by_check["check"].to_list(), by_check["len"].to_list(), "Findings by check"))
                 + (_chart(charts.bars([shown(t) for t in by_table["table_id"]], by_table["len"].to_list(), "Findings by table"))
                    if by_table.height else "")
                 + _over_time(findings))
    try:
        return _page(out_dir, summary, evidence, drawn, _by_table(out_dir, findings, list(summary["findings"]))
                     + _money_by_table(findings, summary),
                     _flagged_rounds(findings, summary))
    except KeyError as missing:  # a summary written by another version of the tool
        raise InputError(f"{out_dir}: summary.json has no {missing}, so another version of the tool wrote it; "
                         "audit the log again") from None
    except (TypeError, ValueError, AttributeError, IndexError) as error:  # damaged, or not this tool's
        raise InputError(f"{out_dir}: summary.json or evidence.json is not as this tool writes them "
                         f"({first_line(error) or type(error).__name__}); audit the log again") from None


def _by_table(out_dir: Path, findings: pl.LazyFrame, codes: list[str]) -> str:
    """Findings per table and check (in the order of `codes`, summary.json's), with their rate per 1,000
    of the table's rounds (from the fairness tests, which count every table's rounds): where a table's
    trouble lies, at a glance."""
    if not (out_dir / "fairness.parquet").exists():
        return ""
    rounds = dict(stored.scan(out_dir / "fairness.parquet").filter(pl.col("level") == "table")
                  .group_by("group").agg(pl.col("rounds").first()).collect().iter_rows())
    counts = findings.filter(pl.col("table_id").is_not_null()).group_by("table_id", "check").len().collect()
    if not counts.height:
        return ""
    checks = [check for check in (*codes, *sorted(set(counts["check"]) - set(codes))) if check in set(counts["check"])]
    found = {(table, check): n for table, check, n in counts.iter_rows()}
    tables = sorted({table for table, _ in found}, key=lambda t: (-sum(found.get((t, c), 0) for c in checks), t))
    rows = []
    for table in tables[:MOST_TABLES]:
        dealt = rounds.get(table)
        cells = [("" if not found.get((table, c)) else f"{found[(table, c)]:,}"
                  + ("" if not dealt else f" ({1000 * found[(table, c)] / dealt:.1f})")) for c in checks]
        rows.append([shown(table), "" if dealt is None else f"{dealt:,}", *cells])
    note = ("" if len(tables) <= MOST_TABLES else
            f'<p class="muted">The {MOST_TABLES} tables with the most findings of {len(tables)}; all are in findings.parquet.</p>')
    return ("<h2>Findings by table and check</h2><p>Count, and in brackets per 1,000 of the table's rounds.</p>"
            + _table(["table", "rounds", *checks], rows, set(range(1, len(checks) + 2))) + note)


def _money_by_table(findings: pl.LazyFrame, summary: dict) -> str:
    """Money over- and underpaid per table, from the SETTLEMENT findings (each bet paid otherwise than
    due: what it was paid against what was due); shown when the bets are in one currency, as amounts in
    several are never added up."""
    if "bets_read" not in summary or summary.get("overpaid") is None:
        return ""
    exact = pl.Decimal(38, 12)
    gap = pl.col("recorded").cast(exact, strict=False) - pl.col("expected").cast(exact, strict=False)
    per_table = (findings.filter(pl.col("check") == "SETTLEMENT")
                 .group_by(pl.col("table_id").fill_null("(none)"))
                 .agg(bets=pl.len(), overpaid=pl.when(gap > 0).then(gap).otherwise(0).sum(),
                      underpaid=pl.when(gap < 0).then(-gap).otherwise(0).sum())
                 .sort("table_id").collect())
    if not per_table.height:
        return ""
    currency = summary["money"][0]["currency"] if summary["money"] else None  # one currency, or none named
    rows = [[shown(r["table_id"]), f"{r['bets']:,}", settlement.grouped(money_str(r["overpaid"]), currency),
             settlement.grouped(money_str(r["underpaid"]), currency)] for r in per_table.iter_rows(named=True)]
    return ("<h2>Money by table</h2><p>Bets paid otherwise than due, per table: what was paid beyond what was "
            "due, and short of it.</p>" + _table(["table", "bets wrongly paid", "overpaid", "underpaid"], rows, {1, 2, 3}))


FLAGGED_SHOWN = 1000  # flagged rounds listed in the report; all of them are in flagged_rounds.csv


def _flagged_rounds(findings: pl.LazyFrame, summary: dict) -> str:
    """Every flagged row of the round log with its checks, in log order (`_by_row`): the first
    FLAGGED_SHOWN of them on the page, all of them in flagged_rounds.csv beside it (`flagged_tables`);
    with bets, a link to every wrongly paid bet in flagged_bets.csv."""
    on_rows = findings.filter(ON_A_ROUND_ROW)
    place = ["source_file", "source_row"]
    # Counted as one integer a row (`row_key`), and only the rows listed grouped with their checks:
    # grouped whole, a large log's flagged rows were held with their texts.
    total = on_rows.select(row_key().n_unique()).collect().item()
    bets = "bets_read" in summary
    paid_wrongly = (f'<p>Every bet paid otherwise than due ({counted(summary["bets_flagged"], "bet", ",")}): '
                    f'<a href="{FLAGGED_BETS}">{FLAGGED_BETS}</a>.</p>') if bets else ""
    if not total:
        return f"<h2>Flagged rounds and bets</h2><p>No round is flagged.</p>{paid_wrongly}" if bets else ""
    first = on_rows.select(place).unique(maintain_order=True).head(FLAGGED_SHOWN)
    listed = _by_row(on_rows.join(first, on=place, how="semi", maintain_order="left")).collect()
    every = f'<a href="{FLAGGED_ROUNDS}">{FLAGGED_ROUNDS}</a>'
    more = (f'<p class="muted">All are in {every}.</p>' if total <= FLAGGED_SHOWN else
            f'<p class="muted">The first {FLAGGED_SHOWN:,} of {total:,}; all are in {every}.</p>')
    table = _table(["file", "row", "round", "table", "shoe", "hand", "dealt at (UTC)", "checks"],
                   [[Path(r["source_file"]).name, r["source_row"], shown(r["round_id"]), shown(r["table_id"] or ""),
                     shown(r["shoe_id"] or ""), "" if r["hand_no"] is None else r["hand_no"],
                     "" if r["dealt_at"] is None else r["dealt_at"].strftime("%Y-%m-%d %H:%M:%S"), r["checks"]]
                    for r in listed.iter_rows(named=True)], {1, 5})
    # In a box that scrolls on screen and prints whole (a folded list printed as one line).
    return (f"<h2>Flagged rounds{' and bets' if bets else ''}</h2><p>{total:,} rows of the round log with a finding."
            f'</p><div class="scroll">{table}</div>{more}{paid_wrongly}')


def _sign_off(summary: dict) -> str:
    """What a reviewer signs: which run (tool, run id, command, who ran it and where, when, the present
    it judged against), of what (each input's SHA-256) under which rules (each profile file's)."""
    who = summary.get("run_by") or {}
    _, said, covered, _ = _verdict_parts(summary)
    rows = [["verdict", said], ["period", covered.strip()],
            ["tool", f"{summary['tool']['name']} {summary['tool']['version']}"],
            ["run id", summary.get("run_id", "")],
            ["command", " ".join(summary.get("command") or [])],
            ["run by", f"{who.get('user') or 'unknown'} on {who.get('host') or 'unknown'}"],
            ["started, finished", f"{summary['started_at']}, {summary.get('finished_at') or ''}"],
            ["as of (--as-of)", summary.get("as_of", "")]]
    rows += [[f"input ({i['role']})", f"{i['path']}: SHA-256 {i['sha256']}"] for i in summary["inputs"]]
    # A base shared by several profiles (standard.toml) is named once.
    files = {path: sha for named in summary["rules"]["profiles"].values() for path, sha in named.items()}
    rows += [["rules", f"{path}: SHA-256 {sha}"] for path, sha in files.items()]
    rows += [["contract", f"{path}: SHA-256 {sha}"] for path, sha in summary["rules"]["contract"].items()]
    return ("<h2>Sign-off</h2>" + _table(["item", "value"], rows)
            + '<p class="signature">Reviewed by: ______________________ &nbsp; Date: ____________ '
              "&nbsp; Signature: ______________________</p>")


def _with_contents(sections: str) -> str:
    """The sections, each heading given an anchor, after a list of links to them."""
    titles = re.findall(r"<h2>([^<]+)</h2>", sections)
    anchors = {title: re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") for title in titles}
    linked = re.sub(r"<h2>([^<]+)</h2>", lambda m: f'<h2 id="{anchors[m.group(1)]}">{m.group(1)}</h2>', sections)
    contents = "".join(f'<li><a href="#{anchors[t]}">{t}</a></li>' for t in titles)
    return f'<nav class="contents"><b>Contents</b><ol>{contents}</ol></nav>' + linked


def _page(out_dir: Path, summary: dict, evidence: dict | None, drawn: str, by_table: str, flagged: str) -> str:
    inputs = ", ".join(Path(i["path"]).name for i in summary["inputs"])
    sections = (_provenance(summary) + _headline(summary)
                + (f"<h2>Findings at a glance</h2>{drawn}" if drawn else "") + by_table
                + _checks(summary, evidence) + flagged + _fairness_section(out_dir, summary)
                + _contract(out_dir, summary) + _quarantine(out_dir, summary) + _sign_off(summary))
    return (
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>Punto banco audit: {_e(inputs)}</title><style>{STYLE}</style></head><body>"
        + _verdict(summary)
        + f"<h1>Punto banco audit of {_e(inputs)}</h1>"
        + f'<p class="muted">Started {_e(summary["started_at"])} by {_e(summary["tool"]["name"])} '
          f'{_e(summary["tool"]["version"])}.</p>'
        + _with_contents(sections)
        + "</body></html>\n"
    )


#: Every flagged row of the round log, and every wrongly paid bet, beside the report for a spreadsheet.
FLAGGED_ROUNDS, FLAGGED_BETS = "flagged_rounds.csv", "flagged_bets.csv"


def flagged_tables(out_dir: Path) -> dict[str, pl.LazyFrame]:
    """The CSV files written beside the report, by name: every flagged row of the round log with its
    checks and their details, in log order; with bets, every bet paid otherwise than due (SETTLEMENT)."""
    findings = stored.scan(Path(out_dir) / "findings.parquet")
    tables = {FLAGGED_ROUNDS: _by_row(findings.filter(ON_A_ROUND_ROW), details=pl.col("detail").str.join(" | "))}
    if "bets_read" in json.loads((Path(out_dir) / discover.AUDIT_SUMMARY).read_text()):
        tables[FLAGGED_BETS] = findings.filter(pl.col("check") == "SETTLEMENT").select(
            "source_file", "source_row", "bet_id", "round_id", "table_id", "shoe_id", "hand_no", "dealt_at", "expected",
            paid="recorded", detail="detail")
    return {name: _for_spreadsheets(table) for name, table in tables.items()}


def _by_row(findings: pl.LazyFrame, **more: pl.Expr) -> pl.LazyFrame:
    """Findings on rows of the round log, a row each in log order: its place, its round's table, shoe,
    hand and dealt_at, its `checks` (in the order findings first name them), and `more` of its findings."""
    return findings.group_by("source_file", "source_row", maintain_order=True).agg(
        pl.col("round_id", "table_id", "shoe_id", "hand_no", "dealt_at").first(),
        checks=pl.col("check").unique(maintain_order=True).str.join(", "), **more)


#: A cell a spreadsheet would take for a formula (=, +, -, @, a tab or CR first), unless it is a number.
_FORMULA = r"^[=+\-@\t\r]"


def _for_spreadsheets(rows: pl.LazyFrame) -> pl.LazyFrame:
    """`rows` with dealt_at in ISO 8601 (UTC, Z) and each text cell that a spreadsheet would run as a
    formula (a round_id `=HYPERLINK(...)` from the log) behind a `'`, as OWASP advises for CSV; every
    value stays whole in findings.parquet."""
    def safe(cell: pl.Expr) -> pl.Expr:
        formula = cell.str.contains(_FORMULA) & ~cell.str.contains(r"^[+-]?[0-9]+(\.[0-9]+)?$")
        return pl.when(formula).then(pl.lit("'") + cell).otherwise(cell)
    text = [name for name, dtype in rows.collect_schema().items() if dtype == pl.String]
    return rows.with_columns(**{name: safe(pl.col(name)) for name in text},
                             dealt_at=pl.col("dealt_at").dt.to_string("%Y-%m-%dT%H:%M:%S%.fZ"))


def write(out_dir: Path) -> Path:
    """Write `report.html` and the CSV files beside it (`flagged_tables`) into the output directory
    (atomically, replacing only what this tool wrote there: `owned`) and return the report's path."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        render(out_dir)  # names what is not there
    with owned.locked(out_dir, f"{out_dir}: cannot write the report here"):
        page = render(out_dir)
        tables = flagged_tables(out_dir)
        owned.claim(out_dir, ["report.html", *tables])
        for name, table in tables.items():
            owned.replace_file(out_dir / name, lambda handle, table=table: table.sink_csv(handle))
        owned.replace_file(out_dir / "report.html", page)
    return out_dir / "report.html"
