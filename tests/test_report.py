"""The regulator report: its numbers are summary.json's, every check found has its section, it is
self-contained, and it renders in a real browser."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import ASSETS, cli
from baccarat_audit.engines import run
from baccarat_audit.cli import app

DATA = ASSETS.parent.parent / "data"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def sample_audit(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sample")
    run.audit(DATA / "rounds.csv", out, run.Options(bets=DATA / "bets.csv"))
    return out


def test_the_report_states_the_summary_numbers_and_has_a_section_per_check(sample_audit):
    page = (sample_audit / "report.html").read_text()
    summary = json.loads((sample_audit / "summary.json").read_text())
    assert page.index("Not clean:") < page.index("<h1>")
    for label, key in (("rounds read", "rows_read"), ("rounds flagged", "rounds_flagged"),
                       ("bets wrongly paid", "bets_flagged"), ("bets quarantined", "bets_quarantined")):
        assert re.search(rf"<td>{label}</td><td class=\"num\">{summary[key]:,}</td>", page), label
    whole, fraction = summary["overpaid"].split(".")
    assert int(whole) >= 1000 and f'<td class="num">{int(whole):,}.{fraction}</td>' in page  # 3,061.78
    for check, count in summary["findings"].items():
        said = f"{count:,} finding{'' if count == 1 else 's'}"
        assert (f'<h3 id="{check}">{check}: {said}</h3>' in page) == (count > 0)
    for source in summary["inputs"]:
        assert source["sha256"] in page
    assert "Player drew, so the tableau row for Banker" in page or "Player stood, so Banker" in page
    assert page.count("<svg") >= 4  # by check, by table, over time, outcomes per table


def test_the_provenance_names_each_profile_used_with_what_game_it_is_and_its_base(sample_audit):
    """A regulator reads which rules were applied: each profile's file, its description, and the
    files it builds on, each with its SHA-256."""
    page = (sample_audit / "report.html").read_text()
    rules = json.loads((sample_audit / "summary.json").read_text())["rules"]
    assert sorted(rules["descriptions"]) == sorted(rules["profiles"]) == ["ez-baccarat", "standard", "super-6", "tie-9"]
    assert rules["descriptions"]["tie-9"] == "Standard, with Tie paid 9:1"
    row = "<tr><td>{}</td><td>{}</td><td>{}</td></tr>"
    for name in ("standard", "tie-9"):
        own = f"schemas/profiles/{name}.toml"
        assert row.format(own, f"profile {name}: {rules['descriptions'][name]}", rules["profiles"][name][own]) in page
    assert row.format("schemas/profiles/standard.toml", "base of profile tie-9",
                      rules["profiles"]["standard"]["schemas/profiles/standard.toml"]) in page


def test_the_charts_draw_each_count_to_scale_and_name_it():
    """Bars in proportion to their counts on an axis of round values, with each label and count as
    text; dots at their observed shares, over a band around the expected one."""
    from baccarat_audit.outputs import charts

    assert charts.ticks(0, 4300) == [0, 1000, 2000, 3000, 4000, 5000]
    assert charts.ticks(0.085, 0.47) == pytest.approx([0, 0.1, 0.2, 0.3, 0.4, 0.5])
    svg = charts.bars(["DUPLICATE_ROUND", "T<1>"], [4300, 1075], "Findings by check")
    widths = [float(w) for w in re.findall(r'<rect [^>]*width="([\d.]+)"', svg)]
    assert widths[0] == pytest.approx(4 * widths[1], abs=0.5) and widths[0] < 640  # to 0.1 px
    assert ">DUPLICATE_ROUND</text>" in svg and ">T&lt;1&gt;</text>" in svg and ">4,300</text>" in svg
    columns = charts.columns(["2026-11-01", "2026-11-02"], [3, 6], "Findings per day dealt (UTC)")
    heights = [float(h) for h in re.findall(r'<rect [^>]*height="([\d.]+)"', columns)]
    assert heights[1] == pytest.approx(2 * heights[0], abs=0.3)
    dots = charts.dots(["T01"], {"ties": [(0.2, 0.1, 0.01)]}, {"ties": charts.GREEN}, "Outcomes", "share")
    observed = float(re.search(r'<circle cx="([\d.]+)" cy="[\d.]+" r="3.5"', dots).group(1))
    low, high = map(float, re.search(r'<line x1="([\d.]+)" y1="[\d.]+" x2="([\d.]+)"', dots.split("<g ")[1]).groups())
    assert low < high < observed and (high - low) / (observed - (low + high) / 2) == pytest.approx(0.2, rel=0.01)


def test_a_clean_run_says_so_first(clean_log, tmp_path):
    run.audit(clean_log["parquet"], tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert page.split("<body>")[1].startswith('<p class="verdict clean">Clean run: all 6,000 rounds')


def test_bets_of_rounds_missing_from_the_log_are_counted_under_one_reason(tmp_path):
    """A reason names each value in quotes, which the report's quarantine section masks to group the
    reasons: the bets of the rounds cut from the log are one line with their count, not a line each."""
    lines = (DATA / "rounds.csv").read_text().splitlines(keepends=True)
    (tmp_path / "rounds.csv").write_text("".join(lines[:1001]))
    run.audit(tmp_path / "rounds.csv", tmp_path / "out", run.Options(bets=DATA / "bets.csv", validate=False))
    reasons = pl.read_parquet(tmp_path / "out" / "bets_quarantine.parquet")["reason"]
    missing = reasons.str.ends_with("is not in the round log").sum()
    assert missing > 1000 and reasons.str.starts_with("round '").sum() >= missing
    page = (tmp_path / "out" / "report.html").read_text()
    assert f'<tr><td>round &#x27;…&#x27; is not in the round log</td><td class="num">{missing:,}</td>' in page


def test_the_report_loads_nothing_from_anywhere(sample_audit):
    page = (sample_audit / "report.html").read_text()
    assert not re.search(r"https?://(?!www\.w3\.org/)", page)  # SVG namespaces only
    assert "<script" not in page and "<link" not in page and "@import" not in page and " src=" not in page


def test_report_command_rebuilds_the_page_from_the_directory(sample_audit, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(sample_audit, copy)
    before = (copy / "report.html").read_text()
    (copy / "report.html").unlink()
    result = CliRunner().invoke(app, ["report", str(copy)])
    assert result.exit_code == 0, result.output
    assert (copy / "report.html").read_text() == before
    assert "The first 3 in log order, replayed step by step; all are in findings.parquet." in before
    (copy / "evidence.json").unlink()  # the page says there is no replay, rather than "the first 0"
    assert CliRunner().invoke(app, ["report", str(copy)]).exit_code == 0
    without = (copy / "report.html").read_text()
    assert "None replayed here: the folder has no evidence.json; all are in findings.parquet." in without
    assert "The first" not in without and 'class="finding"' not in without
    nothing = CliRunner().invoke(app, ["report", str(tmp_path / "nothing")])
    assert nothing.exit_code == 2 and "nothing: not an audit output directory (no summary.json in it)" in nothing.output
    older = json.loads((copy / "summary.json").read_text())
    del older["money"]  # as another version of the tool wrote it
    (copy / "summary.json").write_text(json.dumps(older))
    result = CliRunner().invoke(app, ["report", str(copy)])
    assert result.exit_code == 2 and "summary.json has no 'money', so another version" in result.output


def _page_requests(net_log: Path) -> set[str]:
    """Every URL a page asked for, from Chromium's NetLog: the requests made for a page opened from a
    file (its network isolation key is file://), not the browser's own (updates, clock, accounts)."""
    log = json.loads(net_log.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return {event["params"]["url"] for event in log["events"]
            if event["type"] == start and "file://" in event["params"].get("network_isolation_key", "")}


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_the_report_renders_in_headless_chromium_with_the_network_cut_off(sample_audit, tmp_path):
    """An air-gapped compliance network: every name fails to resolve, and the page must ask for
    nothing outside its output directory (Chromium's NetLog lists what it asked for)."""
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--host-resolver-rules=MAP * ~NOTFOUND", f"--log-net-log={tmp_path / 'net.json'}",
             f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars"]
    url = (sample_audit / "report.html").as_uri()
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<svg") >= 4 and "Provenance" in dom.stdout and "Input contract" in dom.stdout
    asked = _page_requests(tmp_path / "net.json")
    assert {url for url in asked if not url.startswith(sample_audit.as_uri() + "/")} == set()
    shot = Path(__file__).parent.parent / "out" / "test-report" / "report.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    taken = subprocess.run([CHROMIUM, *flags, "--window-size=1280,4000", f"--screenshot={shot}", url],
                           capture_output=True, text=True, timeout=120)
    assert taken.returncode == 0 and shot.stat().st_size > 50_000, taken.stderr[-2000:]


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_the_report_printed_to_pdf_in_chromium_holds_every_column_and_every_flagged_round(sample_audit, tmp_path):
    """What a reviewer files: the matrix of checks whole (it was cut after its seventh column), and the
    flagged rounds listed row by row (folded, they printed as one line)."""
    import pypdf

    pdf = tmp_path / "report.pdf"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-pdf-header-footer",
             f"--user-data-dir={tmp_path / 'profile'}", f"--print-to-pdf={pdf}"]
    printed = subprocess.run([CHROMIUM, *flags, (sample_audit / "report.html").as_uri()], capture_output=True,
                             text=True, timeout=120)
    assert printed.returncode == 0 and pdf.stat().st_size > 10_000, printed.stderr[-2000:]
    text = "\n".join(page.extract_text() for page in pypdf.PdfReader(pdf).pages).replace("_\n", "_")
    matrix = text.split("Count, and in brackets per 1,000 of the table's rounds.")[1].split("Money by table")[0]
    findings = pl.read_parquet(sample_audit / "findings.parquet")
    checks = findings.filter(pl.col("table_id").is_not_null())["check"].unique()
    assert len(checks) >= 8 and all(check in matrix.split("T0")[0] for check in checks), matrix
    listed = text.split("rows of the round log with a ﬁnding.")[1]
    flagged = findings.filter((pl.col("source") == "rounds") & pl.col("source_row").is_not_null())
    for file, row, round_id in flagged.select("source_file", "source_row", "round_id").unique().iter_rows():
        assert f"{Path(file).name} {row} {round_id}" in listed


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_the_network_check_sees_what_a_page_asks_for(tmp_path):
    """The check above can fail: a page that loads a script from a CDN is caught asking for it."""
    page = tmp_path / "page.html"
    page.write_text('<html><body><script src="https://cdn.example.org/x.js"></script>hello</body></html>')
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
             "--host-resolver-rules=MAP * ~NOTFOUND", f"--log-net-log={tmp_path / 'net.json'}",
             f"--user-data-dir={tmp_path / 'profile'}"]
    done = subprocess.run([CHROMIUM, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "hello" in done.stdout
    assert _page_requests(tmp_path / "net.json") == {"https://cdn.example.org/x.js"}


def _verdict(out: Path) -> str:
    return re.search(r'<p class="verdict[^>]*>(.*?)</p>', (out / "report.html").read_text()).group(1)


def test_a_clean_verdict_names_what_was_not_checked(tmp_path):
    """A log of the required columns only, without bets: clean, but the checks that could not run and
    the bets are named as not checked, and nothing is claimed paid."""
    from baccarat_audit import generate
    paths = generate.write(generate.generate(300, seed=4), tmp_path / "log")
    required = ["round_id", *(f"{hand}_card_{i}" for hand in ("player", "banker") for i in (1, 2, 3))]
    pl.read_csv(paths["csv"], infer_schema=False).select(required).write_csv(tmp_path / "bare.csv")
    result = run.audit(tmp_path / "bare.csv", tmp_path / "out")
    verdict = _verdict(tmp_path / "out")
    skipped = [check for check, state in result.summary["checks"].items() if state.startswith("skipped")]
    assert result.exit_code == 0 and len(skipped) >= 6
    assert verdict.startswith("Clean run: all 300 rounds were audited") and "and paid" not in verdict
    assert f"{len(result.summary['checks']) - len(skipped)} of {len(result.summary['checks'])} checks ran" in verdict
    assert all(check in verdict for check in skipped) and "SETTLEMENT (no bet log given)" in verdict


def test_the_verdict_counts_rounds_and_bets_apart_and_names_unfair_tables(tmp_path):
    from baccarat_audit import generate
    paths = generate.write(generate.generate(8000, seed=3, fault_rate=0.01, with_bets=True, stacked=("T02",)),
                           tmp_path / "log")
    result = run.audit(paths["csv"], tmp_path / "out", run.Options(bets=paths["bets_csv"]))
    found = result.summary["findings"]
    rounds = sum(n for check, n in found.items() if check not in ("SETTLEMENT", "DUPLICATE_BET", "TABLE_STATS"))
    verdict = _verdict(tmp_path / "out")
    assert result.summary["fairness"]["tables_flagged"] == ["T02"] and found["SETTLEMENT"] > 0
    assert f"{rounds:,} round findings on " in verdict and f"{found['SETTLEMENT']:,} bet findings" in verdict
    assert "fairness: table T02 flagged" in verdict and "Rounds dealt from 2026-11-01T18:00:00Z to " in verdict
    page = (tmp_path / "out" / "report.html").read_text()
    card = re.search(r"<b>TABLE_STATS</b> — ([^<]*)</p>", page).group(1)
    assert card == "table T02"


def test_the_report_has_contents_and_findings_by_table_and_check(sample_audit):
    """Every section is linked from a contents list; a table x check matrix counts each table's
    findings and their rate per 1,000 of its rounds, as findings.parquet and fairness.parquet hold them."""
    page = (sample_audit / "report.html").read_text()
    sections = re.findall(r'<h2 id="([^"]+)">', page)
    assert {"provenance", "headline", "findings-by-table-and-check", "checks", "fairness", "quarantine"} <= set(sections)
    assert re.findall(r'<li><a href="#([^"]+)">', page) == sections
    findings = pl.read_parquet(sample_audit / "findings.parquet")
    table, check = findings.filter(pl.col("table_id").is_not_null()).group_by("table_id", "check").len().sort(
        "len", "table_id", "check", descending=[True, False, False]).row(0)[:2]
    count = findings.filter((pl.col("table_id") == table) & (pl.col("check") == check)).height
    rounds = pl.read_parquet(sample_audit / "fairness.parquet").filter(
        (pl.col("level") == "table") & (pl.col("group") == table))["rounds"][0]
    matrix = page.split('id="findings-by-table-and-check"')[1].split("<h2")[0]
    assert f"{count:,} ({1000 * count / rounds:.1f})" in matrix and f">{table}<" in matrix


def test_the_report_lists_every_flagged_round_and_ends_with_a_sign_off(sample_audit):
    page = (sample_audit / "report.html").read_text()
    summary = json.loads((sample_audit / "summary.json").read_text())
    flagged = page.split('id="flagged-rounds-and-bets"')[1].split("<h2")[0]
    assert f"<p>{summary['rounds_flagged']:,} rows of the round log with a finding.</p>" in flagged
    assert flagged.count("<tr>") == summary["rounds_flagged"] + 1  # and the header
    # Each row with every check found on it, in the order findings.parquet first names the row.
    on_rows = pl.read_parquet(sample_audit / "findings.parquet").filter(
        (pl.col("source") == "rounds") & pl.col("source_row").is_not_null())
    expected = on_rows.group_by("source_file", "source_row", maintain_order=True).agg(
        pl.col("shoe_id", "hand_no").first(), pl.col("check").unique(maintain_order=True).str.join(", "))
    listed = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", flagged)[1:]]
    # Each with its shoe, hand and dealt_at, in log order.
    assert [(cells[0], int(cells[1]), cells[4], int(cells[5]), cells[7]) for cells in listed] == [
        (Path(file).name, row, shoe, hand, checks) for file, row, shoe, hand, checks in expected.iter_rows()]
    assert listed[0][6] == "2026-11-01 19:58:20"
    sign_off = page.split('id="sign-off"')[1]
    assert summary["run_id"] in sign_off and summary["as_of"] in sign_off
    # The verdict and the period restated where the reviewer signs; a base shared by profiles named once.
    assert "<td>verdict</td><td>Not clean: " in sign_off
    assert f"<td>period</td><td>Rounds dealt from {summary['period']['first_dealt_at']}" in sign_off
    assert sign_off.count("standard.toml: SHA-256") == 1
    assert summary["run_by"]["host"] and summary["run_by"]["host"] in sign_off
    assert all(i["sha256"] in sign_off for i in summary["inputs"]) and "Reviewed by:" in sign_off


def test_every_flagged_round_and_wrongly_paid_bet_is_in_a_csv_file_beside_the_report(sample_audit, tmp_path):
    """What the page lists only in part, whole, for a spreadsheet: linked from the page, listed in the
    manifest, written again by `report`; a value a spreadsheet would run as a formula is kept behind a '."""
    summary = json.loads((sample_audit / "summary.json").read_text())
    page = (sample_audit / "report.html").read_text()
    rounds = pl.read_csv(sample_audit / "flagged_rounds.csv", infer_schema=False)
    bets = pl.read_csv(sample_audit / "flagged_bets.csv", infer_schema=False)
    findings = pl.read_parquet(sample_audit / "findings.parquet")
    assert rounds.height == summary["rounds_flagged"] and bets.height == summary["bets_flagged"] > 3
    assert bets.columns == ["source_file", "source_row", "bet_id", "round_id", "table_id", "shoe_id", "hand_no",
                            "dealt_at", "expected", "paid", "detail"]
    settled = findings.filter(pl.col("check") == "SETTLEMENT")
    assert bets["bet_id"].to_list() == settled["bet_id"].to_list()
    assert bets["paid"].to_list() == settled["recorded"].to_list()
    first = rounds.row(0, named=True)
    assert (first["round_id"], first["dealt_at"], first["checks"]) == ("T01-S0002-C056", "2026-11-01T19:58:20Z",
                                                                        "BANKER_DRAW")
    assert '<a href="flagged_rounds.csv">' in page and '<a href="flagged_bets.csv">' in page
    manifest = json.loads((sample_audit / ".baccarat-audit.json").read_text())["files"]
    assert {"flagged_rounds.csv", "flagged_bets.csv"} <= set(manifest)
    log = pl.read_csv(DATA / "rounds.csv", infer_schema=False).head(300)
    at = findings.filter(pl.col("source") == "rounds")["source_row"][0] - 1
    formula = '=HYPERLINK("http://x","ok")'
    log.with_columns(round_id=pl.when(pl.int_range(pl.len()) == at).then(pl.lit(formula)).otherwise("round_id")
                     ).write_csv(tmp_path / "crafted.csv")
    assert cli("audit", tmp_path / "crafted.csv", "--out", tmp_path / "out", "--no-contract").returncode == 1
    assert not (tmp_path / "out" / "flagged_bets.csv").exists()  # no bet log given
    (tmp_path / "out" / "flagged_rounds.csv").unlink()
    assert CliRunner().invoke(app, ["report", str(tmp_path / "out")]).exit_code == 0  # written again
    crafted = pl.read_csv(tmp_path / "out" / "flagged_rounds.csv", infer_schema=False)
    assert crafted["round_id"][0] == "'" + formula and crafted["hand_no"][0][0].isdigit()


def test_a_narrowed_run_says_what_it_kept_on_the_terminal_in_the_provenance_and_the_banner(tmp_path):
    """`--table T01 --since ...` on the 2,000-round sample: no line reads as if the whole log was audited."""
    out = tmp_path / "out"
    done = cli("audit", DATA / "rounds.csv", "--out", out, "--table", "T01", "--since", "2026-11-01T19:00:00Z",
               "--no-contract")
    summary = json.loads((out / "summary.json").read_text())
    kept = "table T01; dealt since 2026-11-01T19:00:00+00:00"
    assert 0 < summary["rows_read"] < 500
    assert done.stdout.startswith(f"{summary['rows_read']} rows selected ({kept}) of 2,000 rows in the log: ")
    assert [(i["rows"], i["rows_selected"]) for i in summary["inputs"]] == [(2000, summary["rows_read"])]
    page = (out / "report.html").read_text()
    assert f"Narrowed to {kept}" in page and f"of {summary['rows_read']:,} selected ({kept})" in _verdict(out)
    assert "the input contract (the run was told not to hold the log to it: --no-contract)" in _verdict(out)


def test_without_a_bet_log_the_bet_checks_are_said_to_be_skipped_everywhere(tmp_path):
    done = cli("audit", DATA / "rounds.csv", "--out", tmp_path, "--no-contract")
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert {code: summary["checks"][code] for code in ("SETTLEMENT", "DUPLICATE_BET")} == {
        "SETTLEMENT": "skipped: no bet log given", "DUPLICATE_BET": "skipped: no bet log given"}
    assert "  SETTLEMENT       skipped: no bet log given\n" in done.stdout
    assert "DUPLICATE_BET (no bet log given)" in _verdict(tmp_path)
    with_bets = cli("audit", DATA / "rounds.csv", "--bets", DATA / "bets.csv", "--out", tmp_path / "bets")
    checks = json.loads((tmp_path / "bets" / "summary.json").read_text())["checks"]
    assert checks["SETTLEMENT"] == checks["DUPLICATE_BET"] == "ran" and "skipped" not in with_bets.stdout


def test_a_bet_log_of_another_night_is_said_to_be_one_and_its_settlement_no_verdict(tmp_path):
    """The rounds of a 500-round night beside the bets of a 4,000-round one: most bets name no round of
    the log, and the few whose ids are reused are settled against the wrong cards."""
    from baccarat_audit import generate
    tonight = generate.write(generate.generate(500, seed=21), tmp_path / "tonight")
    other = generate.write(generate.generate(4000, seed=22, with_bets=True), tmp_path / "other")
    done = cli("audit", tonight["csv"], "--bets", other["bets_csv"], "--out", tmp_path / "out", "--no-contract")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    unmatched = summary["bets_without_round"]
    assert unmatched * 2 > summary["bets_read"] and unmatched <= summary["bets_quarantined"]
    said = (f"{unmatched:,} of {summary['bets_read']:,} bets name a round that is not in the round log: the bet "
            "log may be of another night or table, and its settlement is no verdict")
    assert summary["bets_not_judged"] == said
    assert f"Warning: {said}.\n" in done.stdout
    verdict = _verdict(tmp_path / "out")
    assert f"bets not judged: {said}" in verdict and "bets wrongly paid" not in verdict
    same_night = generate.write(generate.generate(500, seed=21, with_bets=True), tmp_path / "same")
    run.audit(same_night["csv"], tmp_path / "same_out", run.Options(validate=False, bets=same_night["bets_csv"]))
    summary = json.loads((tmp_path / "same_out" / "summary.json").read_text())
    assert summary["bets_without_round"] == 0 and "bets_not_judged" not in summary


def test_the_verdict_counts_in_words_a_person_reads(tmp_path):
    """One finding is "1 round finding on 1 round", never "1 findings"; a table's finding is not a round's."""
    log = tmp_path / "first.csv"
    log.write_text("\n".join((DATA / "rounds.csv").read_text().splitlines()[:141]) + "\n")
    assert cli("audit", log, "--out", tmp_path / "out", "--no-contract").returncode == 1
    assert _verdict(tmp_path / "out").startswith("Not clean: 1 round finding on 1 round. ")


def test_skipped_checks_show_a_dash_and_a_log_without_times_or_rounds_says_so(tmp_path):
    """A check that did not run found nothing because it did not look: "-", not 0. A log whose dealt_at
    cannot be read has no period; a log whose every row is quarantined had nothing audited."""
    rows = pl.read_csv(DATA / "rounds.csv", infer_schema=False).head(50)
    rows.with_columns(dealt_at=pl.lit("soon")).write_csv(tmp_path / "timeless.csv")
    rows.with_columns(player_card_1=pl.lit("ZZ")).write_csv(tmp_path / "unreadable.csv")
    cli("audit", tmp_path / "timeless.csv", "--out", tmp_path / "a", "--no-contract")
    page = (tmp_path / "a" / "report.html").read_text()
    assert "<td>SETTLEMENT</td><td>" in page and re.search(r"<td>skipped: no bet log given</td><td class=\"num\">-</td>", page)
    assert "Period unknown: no dealt_at of a round audited could be read." in _verdict(tmp_path / "a")
    cli("audit", tmp_path / "unreadable.csv", "--out", tmp_path / "b", "--no-contract")
    assert "Nothing audited: every row of the round log was quarantined." in _verdict(tmp_path / "b")


def test_money_over_and_underpaid_is_shown_per_table_and_adds_up_to_the_totals(sample_audit):
    from decimal import Decimal
    page = (sample_audit / "report.html").read_text()
    summary = json.loads((sample_audit / "summary.json").read_text())
    section = page.split('id="money-by-table"')[1].split("<h2")[0]
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", section)[1:]]
    assert [row[0] for row in rows] == ["T01", "T02", "T03", "T04"]
    assert sum(int(row[1]) for row in rows) == summary["bets_flagged"]
    for column, key in ((2, "overpaid"), (3, "underpaid")):
        assert sum(Decimal(row[column].replace(",", "")) for row in rows) == Decimal(summary[key])


def test_every_table_of_the_report_names_its_columns(sample_audit):
    page = (sample_audit / "report.html").read_text()
    assert "<th></th>" not in page and page.count("<table>") == page.count("<tr><th>")
