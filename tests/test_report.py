"""The regulator report: its numbers are summary.json's, every check found has its section, it is
self-contained, and it renders in a real browser."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import ASSETS
from pipeline import audit
from pipeline.cli import app

DATA = ASSETS.parent.parent / "data"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def sample_audit(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sample")
    audit.audit(DATA / "rounds.csv", out, audit.Options(bets=DATA / "bets.csv"))
    return out


def test_the_report_states_the_summary_numbers_and_has_a_section_per_check(sample_audit):
    page = (sample_audit / "report.html").read_text()
    summary = json.loads((sample_audit / "summary.json").read_text())
    assert page.index("Not clean:") < page.index("<h1>")
    for label, key in (("rounds read", "rows_read"), ("rounds flagged", "rounds_flagged"),
                       ("bets wrongly paid", "bets_flagged"), ("bets quarantined", "bets_quarantined")):
        assert re.search(rf"<td>{label}</td><td class=\"num\">{summary[key]:,}</td>", page), label
    assert f'<td class="num">{summary["overpaid"]}</td>' in page
    for check, count in summary["findings"].items():
        assert (f'<h3 id="{check}">{check}: {count:,} findings</h3>' in page) == (count > 0)
    for source in summary["inputs"]:
        assert source["sha256"] in page
    assert "Player drew, so the tableau row for Banker" in page or "Player stood, so Banker" in page
    assert page.count("<svg") >= 4  # by check, by table, over time, outcomes per table


def test_a_clean_run_says_so_first(clean_log, tmp_path):
    audit.audit(clean_log["parquet"], tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert page.split("<body>")[1].startswith('<p class="verdict clean">Clean run: all 6,000 rounds')


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
    assert CliRunner().invoke(app, ["report", str(tmp_path / "nothing")]).exit_code == 2


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_the_report_renders_in_headless_chromium(sample_audit, tmp_path):
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--hide-scrollbars"]
    url = (sample_audit / "report.html").as_uri()
    dom = subprocess.run([CHROMIUM, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert dom.stdout.count("<svg") >= 4 and "Provenance" in dom.stdout
    shot = Path(__file__).parent.parent / "out" / "test-report" / "report.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    taken = subprocess.run([CHROMIUM, *flags, "--window-size=1280,4000", f"--screenshot={shot}", url],
                           capture_output=True, text=True, timeout=120)
    assert taken.returncode == 0 and shot.stat().st_size > 50_000, taken.stderr[-2000:]
