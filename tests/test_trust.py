"""Promises kept under hostile input: no file the tool did not write is touched, nothing in an input
folder passes unseen, every line end gives every row, bad bytes are exit 2, log text never drives a
terminal or a page, ids that differ invisibly are one id."""

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings, strategies as st

from conftest import ASSETS, TOOL, cli, output
from baccarat_audit.engines import run
from baccarat_audit import generate

ROOT = Path(__file__).parent.parent
DATA = ROOT / "data"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HEADER = "round_id,player_card_1,banker_card_1,player_card_2,banker_card_2,player_card_3,banker_card_3"
ROUND = "R{},KS,9H,5D,QC,,"  # a natural 9 for Banker: nobody draws


def no_traceback(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[-2000:]


def small_log(folder: Path, rounds: int = 40) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return generate.write(generate.generate(rounds, seed=5, fault_rate=0.1), folder)["csv"]


# -- Only its own files -------------------------------------------------------------------------------

def test_a_log_where_the_data_docs_go_stops_the_run_before_anything_is_read(tmp_path):
    logs = tmp_path / "logs"
    small_log(logs / "contract")
    before = {path: path.read_bytes() for path in (logs / "contract").iterdir()}
    done = cli("audit", logs, "--out", logs, "--data-docs")
    assert done.returncode == 2 and done.stderr.startswith(f"error: {logs / 'contract'}/")
    assert "not written by baccarat-audit, and the run writes" in done.stderr
    assert {path: path.read_bytes() for path in (logs / "contract").iterdir()} == before
    assert not (logs / "summary.json").exists()


def test_a_users_file_among_earlier_outputs_is_never_removed(tmp_path):
    out = tmp_path / "out"
    assert cli("audit", DATA / "rounds.csv", "--out", out, "--data-docs").returncode == 1
    mine = out / "contract" / "my notes.txt"
    mine.write_text("mine")
    done = cli("audit", DATA / "rounds.csv", "--out", out, "--data-docs")
    assert done.returncode == 2 and f"{mine}: not written by baccarat-audit" in done.stderr
    assert mine.read_text() == "mine" and (out / "summary.json").exists()
    (out / "findings.parquet").unlink()
    (out / "findings.parquet").write_text("a file of mine, not the audit's")
    mine.unlink()
    done = cli("audit", DATA / "rounds.csv", "--out", out, "--no-contract")
    assert done.returncode == 2 and "findings.parquet: not written by baccarat-audit" in done.stderr
    assert (out / "findings.parquet").read_text() == "a file of mine, not the audit's"


def test_a_rerun_without_data_docs_removes_only_the_data_docs_it_wrote(tmp_path):
    out = tmp_path / "out"
    assert cli("audit", DATA / "rounds.csv", "--out", out, "--data-docs").returncode == 1
    assert (out / "contract" / "index.html").exists()
    assert cli("audit", DATA / "rounds.csv", "--out", out, "--no-contract").returncode == 1
    assert not (out / "contract").exists()
    manifest = json.loads((out / ".baccarat-audit.json").read_text())
    assert sorted(manifest["files"]) == sorted(p.name for p in out.iterdir() if not p.name.startswith("."))


def test_a_run_killed_outright_leaves_what_the_next_run_recognises_and_cleans(tmp_path):
    """SIGKILL mid-run leaves a staging folder; a run killed while publishing leaves outputs without
    summary.json. Neither is read as a log by the next run into the log's own folder, which removes them."""
    logs = tmp_path / "logs"
    logs.mkdir()
    dealt = pl.read_parquet(DATA / "rounds.parquet")  # 2,000 rounds, copied under new ids to 200,000
    pl.concat([dealt.with_columns(round_id=pl.col("round_id") + f"-{k}") for k in range(100)]).write_csv(
        logs / "rounds.csv")
    out = logs / "out"
    running = subprocess.Popen([*TOOL, "audit", logs, "--out", out, "--no-contract", "--quiet"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not any(out.glob(".audit-*/rounds.staged/*.parquet")) and time.monotonic() < deadline:
        time.sleep(0.05)
    running.send_signal(signal.SIGKILL)
    running.wait()
    assert list(out.glob(".audit-*")), "the run was killed before it staged anything"
    # As a run killed among its moves leaves them: this run's outputs in, no summary.json.
    earlier = tmp_path / "earlier"
    assert cli("audit", DATA / "rounds.csv", "--out", earlier, "--no-contract").returncode == 1
    for path in earlier.iterdir():
        if path.name != "summary.json":
            path.rename(out / path.name)
    done = cli("audit", logs, "--out", out, "--no-contract")
    assert done.returncode in (0, 1), done.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert [entry["path"] for entry in summary["inputs"]] == [str(logs / "rounds.csv")]
    assert summary["rows_read"] == 200_000 and not list(out.glob(".audit-*"))


def test_a_manifest_entry_that_leads_out_of_the_output_folder_is_never_followed(tmp_path):
    """A log folder delivered by someone else and audited into itself: its manifest names a file
    outside through `..`, beside an empty folder of an output's name, and through a link."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    logs = tmp_path / "delivered" / "logs"
    small_log(logs)
    (logs / "findings.parquet").mkdir()
    (logs / "evidence.json").symlink_to(tmp_path, target_is_directory=True)
    stamp = [victim.stat().st_size, victim.stat().st_mtime_ns]
    forged = {"tool": "baccarat-audit", "files": {"findings.parquet/../../../victim.txt": stamp,
                                                   "evidence.json/victim.txt": stamp, "/" + str(victim): stamp}}
    (logs / ".baccarat-audit.json").write_text(json.dumps(forged))
    done = cli("audit", logs / "rounds.csv", "--out", logs, "--no-contract")
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert victim.read_text() == "keep me"
    (logs / "evidence.json").unlink()
    done = cli("audit", logs / "rounds.csv", "--out", logs, "--no-contract")
    assert done.returncode == 2 and "findings.parquet: holds files not written by" in done.stderr, done.stderr
    assert victim.read_text() == "keep me"


@pytest.mark.parametrize("command", ["audit", "report", "generate"])
def test_a_link_at_a_temporary_name_is_not_written_through(tmp_path, command):
    out = tmp_path / "out"
    assert cli("audit", DATA / "rounds.csv", "--out", out, "--no-contract").returncode == 1
    if command == "generate":
        out = tmp_path / "dealt"
        small_log(out)
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me")
    for name in (".baccarat-audit.json.tmp", ".report.html.tmp"):
        (out / name).symlink_to(outside)
    args = {"audit": ["audit", DATA / "rounds.csv", "--out", out, "--no-contract"], "report": ["report", out],
            "generate": ["generate", "--rounds", "30", "--out", out]}[command]
    done = cli(*args)
    assert done.returncode in (0, 1), done.stderr
    assert outside.read_text() == "keep me"
    assert (out / ".baccarat-audit.json.tmp").is_symlink() and (out / ".report.html.tmp").is_symlink()
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]



def test_files_written_beside_their_name_keep_the_modes_of_any_output(tmp_path):
    """The manifest and report.html are made owner-only by mkstemp: they are given the umask's mode,
    as every other output is, so that a reviewer's group can read the report."""
    out = tmp_path / "out"
    done = subprocess.run([*TOOL, "audit", DATA / "rounds.csv", "--out", out, "--no-contract"],
                          capture_output=True, preexec_fn=lambda: os.umask(0o022))
    assert done.returncode == 1
    modes = {path.name: path.stat().st_mode & 0o777 for path in out.iterdir()}
    assert set(modes.values()) == {0o644}, modes

# Runs the audit in this process, killed outright (SIGKILL) at its `n`th move of a file into the output folder.
KILLED_AT = """
import os, signal, sys
from baccarat_audit import owned
from baccarat_audit.__main__ import main
moved, replace, fatal = [0], os.replace, int(sys.argv[1])
def dying(source, target):
    if not str(target).endswith(".json") or "summary" in str(target):
        moved[0] += 1
        if moved[0] == fatal:
            os.kill(os.getpid(), signal.SIGKILL)
    replace(source, target)
owned.os.replace = dying
sys.argv = ["baccarat-audit", *sys.argv[2:]]
main()
"""


@pytest.mark.parametrize("moves", [1, 3, 5])
def test_a_run_killed_while_publishing_leaves_a_folder_the_next_run_recovers_by_itself(tmp_path, moves):
    out = tmp_path / "out"
    assert cli("audit", DATA / "rounds.csv", "--out", out, "--no-contract").returncode == 1
    killed = subprocess.run([sys.executable, "-c", KILLED_AT, str(moves), "audit", DATA / "rounds.parquet",
                             "--bets", DATA / "bets.parquet", "--out", out, "--no-contract"], capture_output=True)
    assert killed.returncode == -signal.SIGKILL
    done = cli("audit", DATA / "rounds.csv", "--out", out, "--no-contract")
    assert done.returncode == 1, done.stderr
    manifest = json.loads((out / ".baccarat-audit.json").read_text())
    assert sorted(manifest["files"]) == sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert all(len(stamp) == 2 and isinstance(stamp[0], int) for stamp in manifest["files"].values())


def test_runs_into_one_output_folder_at_once_publish_whole_or_are_told_another_is_writing(tmp_path):
    out = tmp_path / "out"
    runs = [subprocess.Popen([*TOOL, "audit", DATA / "rounds.csv", "--out", out, "--no-contract", "--quiet"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    ended = [(running.wait(), running.stderr.read()) for running in runs]
    assert all(code == 1 or (code == 2 and f"another audit is writing {out}" in said) for code, said in ended), ended
    assert any(code == 1 for code, _ in ended)
    done = cli("audit", DATA / "rounds.csv", "--out", out, "--no-contract")
    assert done.returncode == 1, done.stderr
    assert json.loads((out / "summary.json").read_text())["rows_read"] == 2000


# -- Nothing in an input folder passes unseen ----------------------------------------------------------

def test_every_entry_of_an_input_folder_is_read_or_named_with_why(tmp_path):
    logs = tmp_path / "logs"
    small_log(logs)
    (logs / "faults.csv").unlink()
    (logs / "gone.csv").symlink_to(tmp_path / "nowhere.csv")
    elsewhere = small_log(tmp_path / "elsewhere")
    (elsewhere.parent / "faults.csv").unlink()
    (elsewhere.parent / "rounds.parquet").unlink()
    (logs / "more").symlink_to(elsewhere.parent, target_is_directory=True)
    (logs / "loop").symlink_to(logs, target_is_directory=True)
    os.mkfifo(logs / "pipe.csv")
    (logs / ".hidden.csv").write_text("not read")
    deep = os.open(logs, os.O_RDONLY)
    try:  # a folder deeper than PATH_MAX, made a level at a time
        for _ in range(24):
            os.mkdir("d" * 200, dir_fd=deep)
            deeper = os.open("d" * 200, os.O_RDONLY, dir_fd=deep)
            os.close(deep)
            deep = deeper
    finally:
        os.close(deep)
    done = cli("audit", logs, "--out", tmp_path / "out", "--no-contract")
    assert done.returncode in (0, 1), done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    read = [entry["path"] for entry in summary["inputs"]]
    assert sorted(read) == sorted([str(logs / "more" / "rounds.csv"), str(logs / "rounds.csv"),
                                   str(logs / "rounds.parquet")])
    why = {Path(entry["path"]).name: entry["reason"] for entry in summary["inputs_not_read"]}
    assert why["gone.csv"] == "a link that leads nowhere"
    assert why["loop"] == "a link back to a folder already read"
    assert why["pipe.csv"].startswith("not a regular file")
    assert why[".hidden.csv"] == "hidden"
    assert "the path is too long to open" in why.values()
    assert "gone.csv (a link that leads nowhere)" in done.stdout


def test_a_folder_that_cannot_be_listed_stops_the_run(tmp_path, monkeypatch):
    from baccarat_audit.inputs import discover
    from baccarat_audit.errors import InputError

    logs = tmp_path / "logs"
    small_log(logs / "T01")
    small_log(logs / "T02")
    listed = os.listdir

    def refused(path):
        if Path(path).name == "T02":
            raise PermissionError(13, "Permission denied", str(path))
        return listed(path)
    monkeypatch.setattr(os, "listdir", refused)
    with pytest.raises(InputError, match=r"T02: the folder cannot be listed \(Permission denied\)"):
        discover.expand(logs)


# -- Every line end, every byte ------------------------------------------------------------------------

ENDS = {"LF": "\n", "CRLF": "\r\n", "CR": "\r"}


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(min_value=1, max_value=30),
       ends=st.lists(st.sampled_from(list(ENDS)), min_size=1, max_size=31),
       last=st.booleans())
def test_every_line_end_gives_every_row_as_pythons_csv_module_reads_them(tmp_path_factory, rows, ends, last):
    folder = tmp_path_factory.mktemp("ends")
    lines = [HEADER, *(ROUND.format(i) for i in range(rows))]
    text = "".join(line + ENDS[ends[i % len(ends)]] for i, line in enumerate(lines))
    text = text if last else text.rstrip("\r\n")
    (folder / "a.csv").write_bytes(text.encode())
    (folder / "b.csv").write_text(f"{HEADER}\n{ROUND.format('b')}\n")  # a log beside it, as in a nightly folder
    records = list(csv.reader(io.StringIO(text, newline="")))
    result = run.audit(folder, folder / "out", run.Options(validate=False, across_rounds=False))
    counted = {Path(i["path"]).name: i["rows"] for i in result.summary["inputs"]}
    assert counted == {"a.csv": len(records) - 1, "b.csv": 1}
    assert result.summary["rows_read"] == result.summary["rounds_audited"] + result.summary["rows_quarantined"]


def test_a_nul_byte_quarantines_its_row_and_the_rest_is_audited(tmp_path):
    log = tmp_path / "nul.csv"
    log.write_bytes(f"{HEADER}\n{ROUND.format(1)}\nR\0 2,KS,9H,5D,QC,,\n{ROUND.format(3)}\n".encode())
    done = cli("audit", log, "--out", tmp_path / "out", "--no-contract")
    assert done.returncode == 1, done.stderr
    quarantined = pl.read_parquet(tmp_path / "out" / "quarantine.parquet")
    assert quarantined["source_row"].to_list() == [2]
    assert "round_id holds bytes that are not UTF-8" in quarantined["reason"][0]


@pytest.mark.parametrize("content, said", [
    ("x" * 200_000 + "," + HEADER + "\n" + ROUND.format(1) + "\n", "the header cannot be read as CSV"),
    ("x" * 2_000_000 + "\n", "the header is longer than 1,048,576 bytes"),
    (HEADER + "\n" + ROUND.format(1) + "\n" + "R2," + "y" * 3_000_000 + "\n" + ROUND.format(3) + "\n",
     "row 2 is longer than 1,048,576 bytes"),
])
def test_a_line_or_field_too_long_to_be_a_round_is_exit_2_naming_it(tmp_path, content, said):
    log = tmp_path / "long.csv"
    log.write_text(content)
    done = cli("audit", log, "--out", tmp_path / "out", "--no-contract")
    no_traceback(done)
    assert done.returncode == 2 and f"error: {log}: {said}" in done.stderr


def test_a_parquet_file_whose_pages_are_damaged_is_exit_2_naming_it(tmp_path):
    """A page of the log's data damaged after its footer was written (tests/assets/damaged_pages.parquet,
    bytes flipped by the mutation test below): polars panics reading it, and the run stops as on any
    file it cannot read, naming the file and pyarrow's reason, not as the tool's own failure."""
    log = tmp_path / "night.parquet"
    log.write_bytes((ASSETS / "damaged_pages.parquet").read_bytes())
    done = cli("audit", log, "--out", tmp_path / "out", "--no-contract")
    no_traceback(done)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines()[-1] == (f"error: {log}: not a readable parquet file (Number of decoded rep / def "
                                            "levels do not match num_values in page header)")
    assert not (tmp_path / "out" / "summary.json").exists()


@pytest.mark.parametrize("end", ["\r", "\r\n"])
def test_a_long_log_whose_lines_end_in_cr_is_read_whole_and_a_long_line_in_it_named(tmp_path, end):
    """A line end is a CR too when lines are measured: a log of CR-ended lines (as a spreadsheet on a
    Mac exports it) longer than a line may be is a log of many short lines, not one long one."""
    rows = 60_000  # over 1 MiB in all
    log = tmp_path / "mac.csv"
    log.write_bytes(end.join([HEADER, *(ROUND.format(i) for i in range(rows))]).encode() + end.encode())
    result = run.audit(log, tmp_path / "out", run.Options(validate=False, across_rounds=False))
    assert result.summary["rows_read"] == rows == result.summary["rounds_audited"]
    long = tmp_path / "long.csv"
    long.write_bytes(end.join([HEADER, ROUND.format(1), ROUND.format(2), "R3," + "y" * 1_100_000, ROUND.format(4)]
                              ).encode())
    done = cli("audit", long, "--out", tmp_path / "out2", "--no-contract")
    assert done.returncode == 2 and f"error: {long}: row 3 is longer than 1,048,576 bytes" in done.stderr


@pytest.mark.parametrize("summary", [b"{not json", b"\xff\xfe\x00", b"[1, 2]", b'{"inputs": 7, "findings": "x"}'])
def test_report_on_a_damaged_summary_is_exit_2(tmp_path, summary):
    out = tmp_path / "out"
    assert cli("audit", DATA / "rounds.csv", "--out", out, "--no-contract").returncode == 1
    (out / "summary.json").write_bytes(summary)
    done = cli("report", out)
    no_traceback(done)
    assert done.returncode == 2 and done.stderr.startswith(f"error: {out}")


@pytest.mark.parametrize("name", ["findings.parquet", "fairness.parquet"])
@pytest.mark.parametrize("damage", ["removed", "truncated"])
def test_report_on_a_folder_missing_or_damaging_an_output_it_reads_names_the_folder(tmp_path, name, damage):
    """Each table the page reads is named, missing or damaged: a missing fairness.parquet was reported as
    "output: cannot be written", and a damaged one without its name."""
    out = tmp_path / "out"
    assert cli("audit", DATA / "rounds.csv", "--out", out, "--no-contract").returncode == 1
    if damage == "removed":
        (out / name).unlink()
    else:
        (out / name).write_bytes((out / name).read_bytes()[:100])
    done = cli("report", out)
    no_traceback(done)
    assert done.returncode == 2 and done.stderr.startswith(f"error: {out}: not an audit output directory (")
    assert name in done.stderr and done.stderr.count("\n") == 1


def test_an_output_that_cannot_be_written_names_the_output_not_the_log(tmp_path):
    """A full disk, as a file size limit gives it: the error is on the output directory."""
    import resource

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))
    log = generate.write(generate.generate(5000, seed=9), tmp_path / "log")["csv"]
    done = subprocess.run([*TOOL, "audit", log, "--out", tmp_path / "out", "--no-contract", "--quiet"],
                          capture_output=True, text=True, preexec_fn=limited)
    no_traceback(done)
    assert done.returncode == 2 and str(tmp_path / "out") in done.stderr and str(log) not in done.stderr


# -- Log text as text ----------------------------------------------------------------------------------

def _forged(tmp_path: Path) -> Path:
    """A Parquet log whose faulted rounds' ids hold terminal controls, a forged line and 10 MB."""
    rounds = pl.read_parquet(DATA / "rounds.parquet").head(400)
    found = run.audit(DATA / "rounds.parquet", tmp_path / "first", run.Options(validate=False))
    findings = pl.read_parquet(tmp_path / "first" / "findings.parquet")
    rows = findings.filter(pl.col("check").str.ends_with("_DRAW"))["source_row"].cast(pl.Int64)
    first = [r - 1 for r in rows.to_list() if r <= 400][:2]
    assert len(first) == 2 and found.exit_code == 1
    ids = rounds["round_id"].to_list()
    ids[first[0]] = "R\x1b]0;owned\x07\x1b[2J\nForged: every round clean"
    ids[first[1]] = "Z" * 10_000_000
    path = tmp_path / "forged.parquet"
    rounds.with_columns(round_id=pl.Series(ids)).write_parquet(path)
    return path


def test_log_text_never_drives_the_terminal_and_long_values_are_shortened(tmp_path):
    out = tmp_path / "out"
    done = cli("audit", _forged(tmp_path), "--out", out)
    assert done.returncode == 1, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert not [line for line in done.stdout.splitlines() if line.startswith("Forged")]
    assert "R\\x1b]0;owned\\x07\\x1b[2J\\x0aForged" in done.stdout
    assert max(map(len, done.stdout.splitlines())) < 1_500
    assert "more characters]" in done.stdout
    assert (out / "summary.json").stat().st_size < 200_000
    assert (out / "report.html").stat().st_size < 2_000_000
    assert (out / "evidence.json").stat().st_size < 2_000_000
    ids = pl.read_parquet(out / "findings.parquet")["round_id"]
    assert "Z" * 10_000_000 in ids.to_list()  # the machine's outputs keep the whole value


# Runs `document.body.setAttribute('data-owned','1')` if rendered as markup: entities survive upper-casing.
SCRIPT = "".join(f"&#{ord(ch)};" for ch in "document.body.setAttribute('data-owned','1')")
PAYLOAD = f"<img src=x onerror=\"{SCRIPT}\">"


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (.ci/run installs it)")
def test_no_page_the_tool_writes_runs_script_from_the_log(tmp_path):
    rounds = pl.read_parquet(DATA / "rounds.parquet").head(300).with_columns(
        player_card_1=pl.when(pl.int_range(pl.len()) == 5).then(pl.lit(PAYLOAD)).otherwise(pl.col("player_card_1")),
        outcome=pl.when(pl.int_range(pl.len()) == 7).then(pl.lit(PAYLOAD)).otherwise(pl.col("outcome")),
        round_id=pl.when(pl.int_range(pl.len()) == 9).then(pl.lit(PAYLOAD)).otherwise(pl.col("round_id")))
    rounds.write_parquet(tmp_path / "crafted.parquet")
    out, docs = tmp_path / "out", tmp_path / "docs"
    assert cli("audit", tmp_path / "crafted.parquet", "--out", out, "--data-docs").returncode == 1
    assert cli("validate", tmp_path / "crafted.parquet", "--docs", docs).returncode == 1
    written = [out / "report.html", *out.glob("contract/**/*.html"), *docs.glob("**/*.html")]
    pages = [page for page in written if "ONERROR" in page.read_text().upper()]  # where the log's text went
    assert out / "report.html" in pages and len(pages) >= 3
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=3000", "--dump-dom"]
    for page in pages:
        dom = subprocess.run([CHROMIUM, *flags, page.as_uri()], capture_output=True, text=True, timeout=120)
        assert dom.returncode == 0, dom.stderr[-2000:]
        assert not re.search(r"<body[^>]*data-owned", dom.stdout), page  # the script would mark the body


# -- Signals, mappings, ids ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def a_log_still_read_at_a_second(tmp_path_factory) -> Path:
    """The sample's rounds 100 times over in one CSV file: its audit is still under way a second after
    the start, where the sample's own may be done (each copy's rounds are duplicates, which is no matter)."""
    header, *rows = (DATA / "rounds.csv").read_text().splitlines(keepends=True)
    log = tmp_path_factory.mktemp("long") / "rounds.csv"
    log.write_text(header + "".join(rows) * 100)
    return log


@pytest.mark.parametrize("after", [0.1, 0.2, 0.4, 0.8])
def test_a_sigterm_at_any_moment_of_start_up_is_exit_2_with_its_line(tmp_path, after, a_log_still_read_at_a_second):
    running = subprocess.Popen([*TOOL, "audit", a_log_still_read_at_a_second, "--out", tmp_path / "out"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(after)
    running.send_signal(signal.SIGTERM)
    _, err = running.communicate(timeout=60)
    assert (running.returncode, err) == (2, "error: stopped by SIGTERM before the run completed\n")


def test_a_mapping_onto_a_column_the_log_has_is_exit_2_naming_both(tmp_path):
    mapping = tmp_path / "mapping.json"
    mapping.write_text(json.dumps({"columns": {"round_id": "table_id"}}))
    done = cli("audit", DATA / "rounds.csv", "--out", tmp_path / "out", "--mapping", mapping)
    assert done.returncode == 2
    assert "the mapping renames column round_id to table_id, but the log has a table_id column already" in done.stderr


def test_ids_that_differ_only_invisibly_are_duplicates_and_break_the_contract(tmp_path):
    log = tmp_path / "ids.csv"
    lines = [HEADER, ROUND.format(1), ROUND.format("\u200b1"), ROUND.format(2), ROUND.format("\ufeff2"),
             ROUND.format("\uff13"), ROUND.format(3), ROUND.format(4)]
    log.write_text("\n".join(lines) + "\n")
    done = cli("audit", log, "--out", tmp_path / "out")
    assert done.returncode == 1, done.stderr
    found = pl.read_parquet(tmp_path / "out" / "findings.parquet").filter(pl.col("check") == "DUPLICATE_ROUND")
    assert found["source_row"].to_list() == [1, 2, 3, 4, 5, 6]
    assert all("differing only invisibly" in detail for detail in found["detail"])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    (invisible,) = [e for e in summary["contract"]["rounds"]["expectations"]
                    if e["type"] == "expect_column_values_to_not_match_regex"]
    assert (invisible["success"], invisible["unexpected_count"]) == (False, 2)
    assert sorted(invisible["examples"]) == ["R\u200b1", "R\ufeff2"]



@pytest.mark.parametrize("form", ["csv", "parquet"])
def test_explain_finds_the_copies_of_a_round_that_differ_only_invisibly(tmp_path, form):
    """The audit flags R1 and R3 DUPLICATE_ROUND through their copies R\u200b1 and \uff13 (NFKC R3): explain
    of either spelling shows every copy and says the audit flags them."""
    rows = [ROUND.format(1), ROUND.format(2), ROUND.format("\u200b1"), ROUND.format("\uff13"), ROUND.format(3)]
    log = tmp_path / f"ids.{form}"
    text = "\n".join([HEADER, *rows]) + "\n"
    if form == "csv":
        log.write_text(text)
    else:
        pl.read_csv(io.StringIO(text), infer_schema=False).write_parquet(log, row_group_size=2)
    for asked, places in (("R1", [1, 3]), ("R\u200b1", [1, 3]), ("R3", [4, 5]), ("R2", [2])):
        done = cli("explain", log, asked, "--json")
        explained = json.loads(done.stdout)
        assert [e["source_row"] for e in explained] == places, (asked, done.stdout, done.stderr)
        if len(places) > 1:
            assert done.returncode == 1
            assert all("DUPLICATE_ROUND" in e["copies"] and "differing only invisibly" in e["copies"]
                       for e in explained)
        else:
            assert done.returncode == 0 and "copies" not in explained[0]

# -- Fuzz: mutated logs, every case a documented exit and every row accounted for ----------------------

def _base_log(folder: Path) -> dict[str, Path]:
    return generate.write(generate.generate(30, seed=8, fault_rate=0.2, with_bets=True), folder)


def _mutated(original: bytes, data) -> bytes:
    """`original` with one or two of: a byte changed, a line cut, two lines joined, a line repeated,
    the whole re-encoded, the end cut off. Places are drawn evenly (`st.randoms`): hypothesis's own
    integers favour the first bytes, the header."""
    text = bytearray(original)
    rng = data.draw(st.randoms(use_true_random=False), label="places")
    for _ in range(data.draw(st.integers(1, 2), label="mutations")):
        kind = data.draw(st.sampled_from(["flip", "flip", "cut", "join", "repeat", "encode", "truncate"]),
                         label="kind")
        lines = bytes(text).split(b"\n")
        at = rng.randrange(max(1, len(lines) - 1))
        if kind == "flip" and text:
            text[rng.randrange(len(text))] = rng.choice([0, 10, 13, 34, 44, 0xFF, 0xC3, ord("9"), ord("x")])
        elif kind == "cut":
            lines[at] = lines[at][: rng.randrange(len(lines[at]) + 1)]
            text = bytearray(b"\n".join(lines))
        elif kind == "join" and len(lines) > 1:
            text = bytearray(b"\n".join([*lines[:at], lines[at] + lines[at + 1], *lines[at + 2:]]))
        elif kind == "repeat":
            text = bytearray(b"\n".join([*lines[:at + 1], lines[at], *lines[at + 1:]]))
        elif kind == "encode":
            codec = rng.choice(["utf-16", "latin-1", "utf-8-sig", "cp1252"])
            decoded = bytes(text).decode("utf-8", errors="replace").replace("S", "Ş")
            text = bytearray(decoded.encode(codec, errors="replace"))
        elif kind == "truncate" and text:
            text = text[: rng.randrange(len(text) // 2, len(text))]
    return bytes(text)


def _run(args: list) -> tuple[int, str]:
    """The installed command's entry point, in this process: its exit code and what it printed."""
    from contextlib import redirect_stderr, redirect_stdout

    from baccarat_audit import cli as command

    printed = io.StringIO()
    with redirect_stdout(printed), redirect_stderr(printed), pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["baccarat-audit", *map(str, args)])
        try:
            command.main()
        except SystemExit as stopped:
            return stopped.code, printed.getvalue()
    raise AssertionError("the command did not exit")


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_a_mutated_log_is_audited_or_refused_never_a_failure(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("fuzz")
    base = _base_log(folder / "base")
    fmt = data.draw(st.sampled_from(["csv", "parquet", "jsonl"]), label="format")
    log = folder / f"rounds.{fmt}"
    if fmt == "jsonl":
        pl.read_csv(base["csv"], infer_schema=False).write_ndjson(folder / "base.jsonl")
    log.write_bytes(_mutated((folder / "base.jsonl" if fmt == "jsonl" else base[fmt]).read_bytes(), data))
    bets = folder / "bets.csv"
    bets.write_bytes(_mutated(base["bets_csv"].read_bytes(), data) if data.draw(st.booleans(), label="bets too")
                     else base["bets_csv"].read_bytes())
    contract = data.draw(st.sampled_from(["--contract", "--no-contract", "--no-contract"]), label="contract")
    code, printed = _run(["audit", log, "--bets", bets, "--out", folder / "out", contract, "--quiet"])
    assert code in (0, 1, 2) and "Traceback" not in printed and "the tool failed" not in printed, printed
    if code == 2:
        assert printed.startswith("error: ") and printed.count("\n") == 1, printed
        return
    summary = json.loads((folder / "out" / "summary.json").read_text())
    assert summary["rows_read"] == summary["rounds_audited"] + summary["rows_quarantined"]
    assert summary["bets_read"] == summary["bets_settled"] + summary["bets_quarantined"]
    for entry, path in ((summary["inputs"][0], log), (summary["inputs"][1], bets)):
        if entry["format"] == "csv":
            text = path.read_bytes().decode("utf-8", errors="replace").removeprefix("\ufeff")
            # Every line under the header a row, or a blank line counted as skipped.
            lines = len(list(csv.reader(io.StringIO(text, newline="")))) - 1
            assert entry["rows"] + entry.get("lines_skipped", 0) == lines, entry
        elif entry["format"] == "json":  # a record a line
            assert entry["rows"] == len(path.read_bytes().strip().splitlines()), entry


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_a_mutated_mapping_or_profile_is_used_or_refused_never_a_failure(tmp_path_factory, data):
    """A mapping file (the nested JSON layout's) or a rules profile, mutated as a log is: the audit runs
    with it or stops with one line naming what is wrong, exit 2."""
    folder = tmp_path_factory.mktemp("fuzz")
    kind = data.draw(st.sampled_from(["mapping", "profile"]), label="kind")
    if kind == "mapping":
        rules = folder / "nested.json"
        rules.write_bytes(_mutated((ROOT / "schemas" / "mappings" / "nested-json.json").read_bytes(), data))
        args = [DATA / "layouts" / "nested_rounds.jsonl", "--mapping", rules]
    else:
        rules = folder / "house.toml"
        rules.write_bytes(_mutated((ROOT / "schemas" / "profiles" / "super-6.toml").read_bytes(), data))
        args = [DATA / "rounds.csv", "--bets", DATA / "bets.csv", "--profile", rules]
    code, printed = _run(["audit", *args, "--out", folder / "out", "--no-contract", "--quiet"])
    assert code in (0, 1, 2) and "Traceback" not in printed and "the tool failed" not in printed, printed
    if code == 2:
        assert printed.startswith("error: ") and printed.count("\n") == 1, printed
    else:
        summary = json.loads((folder / "out" / "summary.json").read_text())
        assert summary["rows_read"] == summary["rounds_audited"] + summary["rows_quarantined"]


# -- Exit 2 or a verdict on input, never the tool's own failure ----------------------------------------

@pytest.mark.parametrize("bounds", [["--until", "9999-12-31"], ["--since", "0001-01-01"],
                                    ["--since", "0001-01-01", "--until", "9999-12-31T23:59:59-05:00"],
                                    ["--as-of", "9999-12-31T23:59:59-05:00"]])
@pytest.mark.parametrize("stored", ["text", "timestamp"])
def test_an_open_ended_bound_is_taken_as_no_bound(tmp_path, bounds, stored):
    """A scheduler's idiom for "no bound": every round is audited, as without it."""
    log = tmp_path / "rounds.parquet"
    rounds = pl.read_parquet(DATA / "rounds.parquet")
    if stored == "timestamp":
        rounds = rounds.with_columns(pl.col("dealt_at").str.to_datetime(time_zone="UTC", time_unit="ns"))
    rounds.write_parquet(log)
    done = cli("audit", log, "--out", tmp_path / "out", "--no-contract", *bounds)
    assert done.returncode == 1, done.stderr
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["rows_read"] == 2000


def test_a_dealt_at_beyond_the_years_a_date_holds_is_unreadable_not_a_failure(tmp_path):
    log = tmp_path / "years.csv"
    text = (DATA / "rounds.csv").read_text().splitlines()[:4]
    text[1] = text[1].replace("2026-11-01T18:00:00Z", "0000-01-01T00:00:00Z")
    text[2] = text[2].replace("2026-11-01T18:00:50Z", "10000-01-01T00:00:00Z")
    log.write_text("\n".join(text) + "\n")
    done = cli("audit", log, "--out", tmp_path / "out")
    assert done.returncode == 1, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["period"] == {"first_dealt_at": "2026-11-01T18:01:40Z", "last_dealt_at": "2026-11-01T18:01:40Z"}
    (between,) = [e for e in summary["contract"]["rounds"]["expectations"]
                  if e["type"] == "expect_column_values_to_be_between" and "skipped" not in e]
    assert between["unexpected_count"] == 2 and between["examples"] == ["unreadable", "unreadable"]
    validated = cli("validate", log)
    assert validated.returncode == 1 and "dealt_at       NOT MET: 2 unexpected" in validated.stdout, validated.stderr


def test_a_parquet_timestamp_in_a_fixed_offset_zone_is_read_as_its_instant(tmp_path):
    """pandas writes a `datetime.timezone` zone as "+05:30", which polars cannot parse: in dealt_at, and in
    a column the audit does not read, the log is audited as the same instants in UTC."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    rounds = pl.read_parquet(DATA / "rounds.parquet").with_columns(
        pl.col("dealt_at").str.to_datetime(time_zone="UTC")).to_arrow()
    at = rounds.schema.get_field_index("dealt_at")
    offset = pa.timestamp("us", tz="+05:30")
    shifted = rounds.set_column(at, pa.field("dealt_at", offset), rounds["dealt_at"].cast(offset))
    pq.write_table(shifted.append_column(pa.field("logged", pa.struct([("at", offset)])),
                                         pa.array([{"at": None}] * shifted.num_rows, pa.struct([("at", offset)]))),
                   tmp_path / "offset.parquet", row_group_size=700)
    done = cli("audit", tmp_path / "offset.parquet", "--out", tmp_path / "out", "--no-contract")
    assert done.returncode == 1, done.stderr
    cli("audit", DATA / "rounds.parquet", "--out", tmp_path / "utc", "--no-contract")
    assert output(tmp_path / "out" / "findings.parquet").drop("source_file").equals(
        output(tmp_path / "utc" / "findings.parquet").drop("source_file"))
    summaries = [json.loads((tmp_path / name / "summary.json").read_text()) for name in ("out", "utc")]
    assert summaries[0]["period"] == summaries[1]["period"]


def test_input_nested_thousands_deep_is_one_line_and_exit_2(tmp_path):
    deep = "[" * 2000 + "]" * 2000
    (tmp_path / "deep.jsonl").write_text('{"round_id": "R1", "extra": ' + deep + "}\n")
    (tmp_path / "deep.json").write_text('{"name": "deep", "columns": ' + '{"a": ' * 2000 + "1" + "}" * 2001)
    (tmp_path / "deep.toml").write_text(f'base = "standard"\nx = {deep}\n')
    for args, said in ((["audit", tmp_path / "deep.jsonl"], "deep.jsonl: line 1 is nested too deeply"),
                       (["audit", DATA / "rounds.csv", "--mapping", tmp_path / "deep.json"],
                        "deep.json: not a valid mapping file (nested too deeply)"),
                       (["audit", DATA / "rounds.csv", "--profile", tmp_path / "deep.toml"],
                        "deep.toml: not a rules profile (nested too deeply)")):
        done = cli(*args, "--out", tmp_path / "out")
        assert done.returncode == 2 and said in done.stderr and done.stderr.count("\n") == 1, done.stderr
