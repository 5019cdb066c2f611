"""The command line on real files: exit codes, one-line errors, explain and generate."""

import gzip
import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from conftest import ASSETS, TOOL
from baccarat_audit.cli import app

runner = CliRunner()


HEADER = "round_id,player_card_1,player_card_2,player_card_3,banker_card_1,banker_card_2,banker_card_3"


def _write(path, text: str | bytes):
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    return path


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_audit_of_a_clean_log_exits_0(clean_log, tmp_path):
    result = run("audit", clean_log["csv"], "--out", tmp_path)
    assert result.exit_code == 0, result.output
    assert "6000 rounds audited, 0 quarantined, 0 rounds flagged" in result.output


def test_audit_counts_one_as_one(tmp_path):
    """One round dealt against the tableau (Banker drew 4H on Player's natural 9: a tie of the cards
    dealt), and its one bet, a Player bet pushed: the printed counts read as a person would write
    them, singular where they are one."""
    log = _write(tmp_path / "one.csv", f"{HEADER}\nR1,9S,KS,,2H,3H,4H\n")
    bets = _write(tmp_path / "bets.csv", "bet_id,round_id,bet_type,stake,paid\nB1,R1,PLAYER,10.00,10.00\n")
    result = run("audit", log, "--bets", bets, "--out", tmp_path / "out", "--no-contract")
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0] == "1 row read: 1 round audited, 0 quarantined, 1 round flagged."
    assert lines[1].startswith("1 bet read: 1 settled, 0 quarantined, 0 wrongly paid")
    assert lines[-1].startswith("1 round in ")
    result = run("audit", ASSETS / "mixed_notation.csv", "--out", tmp_path / "several", "--no-contract")
    assert result.output.startswith("13 rows read: 9 rounds audited, 4 quarantined, 7 rounds flagged.\n")


def test_audit_with_findings_exits_1_and_names_the_checks(tmp_path):
    result = run("audit", ASSETS / "mixed_notation.csv", "--out", tmp_path)
    assert result.exit_code == 1
    assert "4 quarantined, 7 rounds flagged" in result.output
    assert "PLAYER_DRAW      2" in result.output


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.csv", "missing.csv: no such file"),
        (lambda d: d, "the directory holds no .csv, .jsonl or .parquet file"),
        (lambda d: _write(d / "empty.csv", ""), "the file is empty"),
        (lambda d: _write(d / "log.xml", "<log/>"), "neither CSV (.csv), JSON (.jsonl, .ndjson, .json) nor Parquet"),
        (lambda d: _write(d / "log.json", "{}"), "log.json: required column round_id, player_card_1"),
        (lambda d: _write(d / "cols.csv", "round_id,player_card_1\nR1,KS\n"),
         "required column banker_card_1, player_card_2"),
        (lambda d: _write(d / "upper.csv", f"{HEADER.upper()}\nR1,KS,2S,,3S,4S,\n"),
         "names are matched as written: ROUND_ID is not round_id"),
        (lambda d: _write(d / "cut.csv.gz", gzip.compress(f"{HEADER}\nR1,KS,2S,,3S,4S,\n".encode() * 500)[:-30]),
         "cut.csv.gz: gzip-compressed, but it cannot be decompressed (Truncated compressed stream)"),
        (lambda d: _write(d / "u16.csv", f"{HEADER}\n".encode("utf-16")),
         "u16.csv: not CSV text but UTF-16 text (save it as UTF-8); expected CSV in UTF-8"),
        (lambda d: _write(d / "semicolons.csv", f"{HEADER.replace(',', ';')}\nR1;KS;2S;;3S;4S;\n"),
         "the header is one field, split by ';': a CSV log's fields are separated by commas"),
        (lambda d: _write(d / "span.csv", f"{HEADER}\nR1,KS,2S,,3S,4S,\n\"R\n2\",KS,2S,,3S,4S,\nR3,KS,2S,,3S,4S,\n"),
         "span.csv: row 2 opens a quoted field that its line does not close"),
        (lambda d: [_write(d / name, f"{HEADER}\nR1,KS,2S,,3S,4S,\n{row},KS,2S,,3S,4S,\n") for name, row in
                    (("a.csv", "R2"), ("b.csv", '"R\n2"'), ("c.csv", "R3"))][0].parent,
         "b.csv: row 2 opens a quoted field that its line does not close"),  # among files counted together
        # A quote never closed runs on to the end of the file: the reader fails otherwise, on the row too.
        (lambda d: _write(d / "open.csv", f"{HEADER}\nR1,KS,2S,,3S,4S,\n\"R2,KS,2S,,3S,4S,\nR3,KS,2S,,3S,4S,\n"),
         "open.csv: row 2 opens a quoted field that its line does not close"),
        (lambda d: _write(d / "end.csv", f"{HEADER}\nR1,KS,2S,,3S,4S,\nR2,KS,2S,,3S,4S,\"\n"),
         "end.csv: row 2 opens a quoted field that its line does not close"),
        # Quotes inside a field, even in number: the reader fails on them, or reads the row as one field.
        (lambda d: _write(d / "inside.csv", f"{HEADER}\nR1,KS,2S,,3S,4S,\nR\"2,KS,2S,,3S,4\"S,\nR3,KS,2S,,3S,4S,\n"),
         "inside.csv: row 2 holds a quote inside a field"),
        (lambda d: [_write(d / name, f"{HEADER}\nR1,KS,2S,,3S,4S,\n{row},KS,2S,,3S,4S,\n") for name, row in
                    (("d.csv", "R2"), ("e.csv", 'R"2"'), ("f.csv", "R3"))][0].parent,
         "e.csv: row 2 holds a quote inside a field"),  # among files counted together
    ],
)
def test_input_that_cannot_be_audited_exits_2_with_one_line(tmp_path, make, message):
    path = make(tmp_path)
    completed = subprocess.run(
        [sys.executable, "-m", "baccarat_audit", "audit", str(path), "--out",
         str(tmp_path / "out")],
        capture_output=True, text=True,
    )
    assert completed.returncode == 2
    assert completed.stdout == ""
    assert completed.stderr.count("\n") == 1 and message in completed.stderr, completed.stderr
    assert "Traceback" not in completed.stderr


def test_a_record_that_spans_lines_stops_a_narrowed_run_on_one_line_too(tmp_path):
    """A narrowing tests CSV files for a row it keeps before they are counted; a record that spans lines
    makes the records and lines it reads differ, and the run still stops on one line naming the row."""
    (tmp_path / "logs").mkdir()
    for name, row in (("a.csv", "R2"), ("b.csv", '"R\n2"'), ("c.csv", "R3")):
        _write(tmp_path / "logs" / name, f"{HEADER}\nR1,KS,2S,,3S,4S,\n{row},KS,2S,,3S,4S,\n")
    completed = subprocess.run([sys.executable, "-m", "baccarat_audit", "audit", str(tmp_path / "logs"), "--out",
                                str(tmp_path / "out"), "--table", "T01"], capture_output=True, text=True)
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1, completed.stderr
    assert "b.csv: row 2 opens a quoted field that its line does not close" in completed.stderr, completed.stderr


LOG = ASSETS / "mixed_notation.csv"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["audit", LOG, "--out", "{tmp}/out", "--table", "NOPE"],
         "no row is in the selection (--table NOPE); nothing to audit"),
        (["audit", LOG, "--out", "{tmp}/out", "--since", "2026-12-01", "--until", "2026-11-01"],
         "--since 2026-12-01T00:00:00+00:00 is after --until 2026-11-01T23:59:59.999999+00:00"),
        (["validate", LOG, "--window-start", "2026-12-01", "--window-end", "2026-11-01"],
         "--window-start 2026-12-01T00:00:00+00:00 is after --window-end"),
        (["audit", LOG, "--out", "{tmp}/a-file/out"], "a-file/out: cannot write the output directory"),
        (["validate", LOG, "--docs", "{tmp}/a-file/docs"], "a-file/docs: cannot write the Data Docs here"),
        (["audit", LOG, "--out", "{tmp}/a-file"], "a-file: is a file, not an output directory"),
        (["generate", "--rounds", "10", "--seed", "1", "--fault-rate", "0", "--out", "{tmp}/a-file/logs"],
         "a-file/logs: cannot write the generated log here"),
    ],
)
def test_a_run_that_would_audit_nothing_or_cannot_write_exits_2_with_one_line(tmp_path, args, message):
    """An empty narrowing would pass as a clean audit of nothing; an output folder under a file, or that is
    one, cannot be made."""
    _write(tmp_path / "a-file", "not a folder")
    completed = subprocess.run([sys.executable, "-m", "baccarat_audit", *(str(a).format(tmp=tmp_path) for a in args)],
                               capture_output=True, text=True)
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr.startswith("error: ") and completed.stderr.count("\n") == 1, completed.stderr
    assert message in completed.stderr, completed.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("*.parquet"))


def test_version_is_the_one_summary_json_records(tmp_path):
    completed = subprocess.run([sys.executable, "-m", "baccarat_audit", "--version"], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr
    run("audit", ASSETS / "mixed_notation.csv", "--out", tmp_path, "--no-contract")
    recorded = json.loads((tmp_path / "summary.json").read_text())["tool"]["version"]
    assert completed.stdout == f"baccarat-audit {recorded}\n"


def test_unknown_option_is_one_line_and_exit_2(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "baccarat_audit", "audit", "x.csv", "--bogus"],
        capture_output=True, text=True,
    )
    assert completed.returncode == 2
    assert completed.stderr.startswith("error: No such option: --bogus") and completed.stderr.count("\n") == 1


@pytest.mark.parametrize("failure", [KeyError("player_code_4"), pl.exceptions.PanicException("index out of bounds")])
def test_a_failure_of_the_tool_itself_is_one_line_exit_3_and_a_kept_traceback(failure, tmp_path, monkeypatch, capsys):
    """A bug (here an audit that raises; a polars panic is not even an Exception) must not end in a
    traceback and Python's exit 1, which a nightly job reads as findings: one line, exit 3, and the
    traceback kept in a file that the line names."""
    import tempfile

    from baccarat_audit.engines import run
    from baccarat_audit import cli

    def broken(*args, **kwargs):
        raise failure
    monkeypatch.setattr(run, "audit", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["baccarat-audit", "audit", str(ASSETS / "mixed_notation.csv"),
                                      "--out", str(tmp_path / "out"), "--quiet"])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    assert exited.value.code == 3
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: the tool failed ({type(failure).__name__}: ")
    kept = tmp_path / lines[0].rsplit("Traceback: ", 1)[1]
    assert kept.parent == tmp_path and "in broken" in kept.read_text() and str(failure) in kept.read_text()


def test_a_broken_install_is_the_tools_failure_exit_3_not_a_traceback(tmp_path):
    """A library that fails to import (missing, or built for another CPU) stops the tool before its
    command line exists: still one line and exit 3, not Python's exit 1, which reads as findings."""
    (tmp_path / "polars").mkdir()
    (tmp_path / "polars" / "__init__.py").write_text('raise ImportError("polars was built for another CPU")\n')
    completed = subprocess.run([sys.executable, "-m", "baccarat_audit", "audit", ASSETS / "mixed_notation.csv", "--out",
                                tmp_path / "out"], capture_output=True, text=True,
                               env={**os.environ, "PYTHONPATH": str(tmp_path), "TMPDIR": str(tmp_path)})
    assert completed.returncode == 3
    lines = completed.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "error: the tool failed (ImportError: polars was built for another CPU); not a verdict on the log.")
    assert "polars was built" in Path(lines[0].rsplit("Traceback: ", 1)[1]).read_text()
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_run_stopped_by_a_signal_is_one_line_exit_2_and_leaves_nothing_behind(stop, tmp_path):
    """A scheduler's SIGTERM (or Ctrl-C, or a closed terminal) mid-run: one line, exit 2, and neither outputs that look
    complete nor the staging folder (hundreds of MB at 10M rounds) are left in the output directory."""
    import signal
    import time

    sample = pl.read_parquet(ASSETS.parent.parent / "data" / "rounds.parquet")
    pl.concat([sample.with_columns(pl.col("round_id") + f"-{i}") for i in range(250)]).write_parquet(
        tmp_path / "rounds.parquet")  # 500,000 rounds: a run of a few seconds
    out = tmp_path / "out"
    # Started with SIGHUP at its default, as a terminal starts a run: a suite run under nohup hands down
    # SIG_IGN, which the run rightly keeps (test_stops: a run under nohup outlives its terminal).
    hang_up_default = ("import os, signal, sys; signal.signal(signal.SIGHUP, signal.SIG_DFL); "
                       "os.execv(sys.argv[1], sys.argv[1:])")
    running = subprocess.Popen([sys.executable, "-c", hang_up_default, sys.executable, "-m", "baccarat_audit", "audit",
                                str(tmp_path / "rounds.parquet"), "--out", str(out), "--quiet", "--no-contract"],
                               stderr=subprocess.PIPE, text=True)
    while not list(out.glob(".audit-*")) and running.poll() is None:  # the run is under way
        time.sleep(0.01)
    running.send_signal(getattr(signal, stop))
    _, stderr = running.communicate(timeout=120)
    assert running.returncode == 2
    assert stderr == f"error: stopped by {stop} before the run completed\n"
    assert list(out.iterdir()) == []


def test_a_stop_once_the_outputs_are_in_place_lets_the_run_end_with_its_own_code(tmp_path):
    """A scheduler's SIGTERM that comes once summary.json is in place, the last output moved: the run has
    completed, so no line says it stopped before, and its exit code is its own (the sample has findings).
    It was exit 2 with that line, or, met while Python shut down, the process killed outright (-15).
    What the command still had to print may be cut short: the outputs say it all."""
    import signal
    import time

    out = tmp_path / "out"
    running = subprocess.Popen([sys.executable, "-m", "baccarat_audit", "audit",
                                str(ASSETS.parent.parent / "data" / "rounds.csv"), "--out", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not (out / "summary.json").exists() and running.poll() is None:
        time.sleep(0.001)
    running.send_signal(signal.SIGTERM)
    _, stderr = running.communicate(timeout=60)
    assert (running.returncode, stderr) == (1, "")
    assert json.loads((out / "summary.json").read_text())["exit_code"] == 1
    assert not [path.name for path in out.iterdir() if path.name.startswith(".audit-")]  # its staging removed


def test_explain_walks_the_tableau_and_compares_recorded_values():
    result = run("explain", ASSETS / "mixed_notation.csv", "R2")
    assert result.exit_code == 1, result.output  # a finding: Banker stood against the tableau
    text = result.output
    assert "Opening cards in deal order: Player KS (0), Banker 10C (0), Player 5H (5), Banker 4D (4)." in text
    assert "the tableau row for Banker 4 applies: Banker draws when Player's third card counts 2, 3, 4, 5, 6, 7" in text
    assert "Banker stood (CONTRARY TO THE TABLEAU)." in text
    assert "Banker draw   replayed draw    recorded stand   MISMATCH" in text


def test_explain_json_shows_every_copy_of_a_duplicate_and_quarantined_rows():
    explained = json.loads(run("explain", ASSETS / "mixed_notation.csv", "R1", "--json").output)
    assert [e["source_row"] for e in explained] == [1, 10]
    assert explained[0]["replay"]["natural"] is True
    assert {c["field"]: c["agrees"] for c in explained[0]["comparisons"]}["outcome"] is True
    log = str(ASSETS / "mixed_notation.csv")
    assert explained[1]["copies"] == (f"DUPLICATE_ROUND: round_id R1 is on 2 replayable rows of the log ({log} row 1, "
                                      f"{log} row 10); the audit flags every copy.")
    text = run("explain", ASSETS / "mixed_notation.csv", "R1").output
    header = f"Round R1 ({log}, row 1)\n  profile standard\n"
    assert text.startswith(f"{header}  {explained[0]['copies']}\n  1. Opening cards"), text
    quarantined = json.loads(run("explain", ASSETS / "mixed_notation.csv", "R9", "--json").output)
    assert quarantined == [{"round_id": "R9", "source_file": log, "source_row": 9,
                            "quarantined": "player_card_3 'ZZ' is not a card"}]
    assert "copies" not in json.loads(run("explain", ASSETS / "mixed_notation.csv", "R2", "--json").output)[0]


def test_explain_finds_every_copy_across_parquet_files_whatever_the_spaces_around_the_id(tmp_path):
    """explain narrows the log to the round before the trim: a copy stored as " R1 " is still found,
    and a file without the round is passed over."""
    log = pl.read_csv(ASSETS / "mixed_notation.csv", infer_schema=False)
    (tmp_path / "logs").mkdir()
    log.filter(pl.col("round_id") != "R1").write_parquet(tmp_path / "logs" / "a.parquet")
    log.with_columns(round_id=pl.when(pl.col("round_id") == "R1").then(pl.lit(" R1 ")).otherwise("round_id")
                     ).write_parquet(tmp_path / "logs" / "b.parquet")
    explained = json.loads(run("explain", tmp_path / "logs", "R1", "--json").output)
    assert [(e["source_file"], e["source_row"]) for e in explained] == [(str(tmp_path / "logs" / "b.parquet"), 1),
                                                                        (str(tmp_path / "logs" / "b.parquet"), 10)]


# A path to a profile file is not the name of one: the rules come from the profiles folder alone.
@pytest.mark.parametrize("name", ["Standard", "../profiles/standard"])
def test_explain_of_a_round_under_an_unknown_profile_names_the_file_and_column(tmp_path, name):
    """As the audit stops on such a log: one line, exit 2."""
    log = pl.read_csv(ASSETS / "mixed_notation.csv", infer_schema=False).with_columns(profile=pl.lit(name))
    rounds = tmp_path / "rounds.csv"
    log.write_csv(rounds)
    for command in (["explain", rounds, "R2"], ["audit", rounds, "--out", tmp_path / "out"]):
        completed = subprocess.run([sys.executable, "-m", "baccarat_audit", *map(str, command)],
                                   capture_output=True, text=True)
        assert completed.returncode == 2 and completed.stderr.count("\n") == 1, completed.stderr
        assert completed.stderr.startswith(f"error: {rounds}: column profile: unknown rules profile {name!r}")


def test_explain_of_an_unknown_round_exits_2():
    result = run("explain", ASSETS / "mixed_notation.csv", "NOPE")
    assert result.exit_code == 2


def test_explain_names_every_copy_of_a_bet_the_audit_flags_a_copy_under_another_round_too(tmp_path):
    placed = (ASSETS / "mixed_notation_bets.csv").read_text() + "R3,B1,PLAYER,10,20,1\n"  # R2's B1 again
    (tmp_path / "bets.csv").write_text(placed)
    explained = json.loads(run("explain", ASSETS / "mixed_notation.csv", "R2", "--bets", tmp_path / "bets.csv",
                               "--json").output)
    assert run("audit", ASSETS / "mixed_notation.csv", "--bets", tmp_path / "bets.csv", "--out", tmp_path / "out",
               "--no-contract").exit_code == 1
    flagged = pl.read_parquet(tmp_path / "out" / "findings.parquet").filter(pl.col("check") == "DUPLICATE_BET")
    rows = ", ".join(f"{file} row {row}" for file, row in flagged.select("source_file", "source_row").iter_rows())
    assert flagged.height == 2 and set(flagged["bet_id"]) == {"B1"}
    assert {bet["bet_id"]: bet.get("copies") for bet in explained[0]["bets"]} == {
        "B1": f"DUPLICATE_BET: bet_id B1 is on 2 rows of the bet log ({rows}); the audit flags every copy.",
        "B2": None, "B3": None}


def test_generate_writes_the_same_rounds_as_csv_and_parquet(tmp_path):
    result = run("generate", "--rounds", 500, "--seed", 3, "--fault-rate", 0.1, "--out", tmp_path)
    assert result.exit_code == 0, result.output
    csv = pl.read_csv(tmp_path / "rounds.csv", schema_overrides={"hand_no": pl.Int32,
                                                                  "player_total": pl.Int8,
                                                                  "banker_total": pl.Int8})
    assert csv.equals(pl.read_parquet(tmp_path / "rounds.parquet"))
    assert csv.height == 500
    assert pl.read_csv(tmp_path / "faults.csv").height > 20


def test_generate_again_into_its_folder_leaves_no_file_of_the_earlier_log(tmp_path):
    """Bets dealt for other rounds, left beside the new ones, would be settled against them."""
    assert run("generate", "--rounds", 50, "--seed", 3, "--fault-rate", 0, "--bets", "--out", tmp_path).exit_code == 0
    assert {"bets.csv", "bets.parquet"} <= {path.name for path in tmp_path.iterdir()}
    (tmp_path / "notes.txt").write_text("an investigator's, not the generator's")
    assert run("generate", "--rounds", 50, "--seed", 4, "--fault-rate", 0, "--out", tmp_path).exit_code == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        ".baccarat-audit.json", "faults.csv", "notes.txt", "rounds.csv", "rounds.parquet"]
    (tmp_path / "rounds.csv").write_text("an investigator's edit")
    refused = run("generate", "--rounds", 50, "--seed", 5, "--fault-rate", 0, "--out", tmp_path)
    assert refused.exit_code == 2 and "rounds.csv: not written by baccarat-audit" in refused.output
    assert (tmp_path / "rounds.csv").read_text() == "an investigator's edit"


def test_explain_settles_each_bet_of_the_round():
    result = run("explain", ASSETS / "mixed_notation.csv", "R3", "--bets", ASSETS / "mixed_notation_bets.csv")
    assert result.exit_code == 1, result.output  # findings: the outcome recorded, and bet B4 paid wrong
    assert "Bet B4:\n    BANKER bet under standard: win.\n" in result.output
    assert "Stake 10.01 x 1.95 = 19.5195." in result.output
    assert "Expected 19.50, paid 20.00: WRONG." in result.output
    explained = json.loads(run("explain", ASSETS / "mixed_notation.csv", "R4", "--bets",
                               ASSETS / "mixed_notation_bets.csv", "--profile", "super-6", "--json").output)
    (b25,) = explained[0]["bets"]
    assert (b25["expected"], b25["agrees"]) == ("15.00", False)
    assert b25["steps"][1] == "Banker won with 6: pays 0.5:1: returns 1.5 per unit staked (stake included)."


def test_explain_gives_each_bet_the_verdict_the_audit_gives_it(tmp_path):
    """A bet the audit quarantines is not settled by explain either (its round on two rows, or
    quarantined, or the bet itself unreadable); a void bet is settled without its round's cards; and a
    bet explain finds wrongly paid is the audit's SETTLEMENT finding."""
    bets = pl.read_csv(ASSETS / "mixed_notation_bets.csv", infer_schema=False).with_columns(
        status=pl.lit(None, pl.String))
    more = pl.DataFrame({"round_id": ["R9", "R9", "R1", "R1", "R2", "R2"],
                         "bet_id": ["B30", "B31", "B32", "B33", "B34", "B35"],
                         "bet_type": "PLAYER", "stake": ["10", "10", "10", "10", "\u0661\u0660", "10\x1f"],
                         "paid": ["20", "0", "10", "20", "0", "0"], "seat": "1",
                         "status": [None, "VOID", "void", None, None, None]})
    # B34 and B35: a stake of 10 in Arabic-Indic digits, and 10 followed by U+001F.
    pl.concat([bets, more]).write_csv(tmp_path / "bets.csv")
    run("audit", ASSETS / "mixed_notation.csv", "--bets", tmp_path / "bets.csv", "--out", tmp_path / "out",
        "--no-contract")
    flagged = set(pl.read_parquet(tmp_path / "out" / "findings.parquet").filter(pl.col("source") == "bets")["bet_id"])
    quarantined = set(pl.read_parquet(tmp_path / "out" / "bets_quarantine.parquet")["bet_id"])
    audited = {bet: None if bet in quarantined else bet not in flagged
               for bet in bets["bet_id"].to_list() + more["bet_id"].to_list()}
    explained = {}
    for round_id in ("R1", "R2", "R3", "R4", "R5", "R6", "R9", "R10", "R12"):
        rows = json.loads(run("explain", ASSETS / "mixed_notation.csv", round_id, "--bets", tmp_path / "bets.csv",
                              "--json").output)
        for row in rows:  # every copy of a round on two rows says the same of its bets
            explained |= {bet["bet_id"]: bet["agrees"] for bet in row.get("bets", [])}
    assert explained == {bet: verdict for bet, verdict in audited.items() if bet != "B19"}  # R99 is not in the log
    # Void, B31 (not returned) and B32 (returned) are settled whatever the rows of their rounds.
    assert {"B17", "B30", "B33", "B34", "B35"} <= quarantined
    assert "B31" in flagged and "B32" not in flagged | quarantined
    text = run("explain", ASSETS / "mixed_notation.csv", "R1", "--bets", tmp_path / "bets.csv").output
    assert "Bet B17:\n    Cannot be settled by the cards: round 'R1' is on 2 rows of the round log.\n" in text
    text = run("explain", ASSETS / "mixed_notation.csv", "R9", "--bets", tmp_path / "bets.csv").output
    assert text.startswith(f"Round R9 ({ASSETS / 'mixed_notation.csv'}, row 9) is quarantined: "
                           "player_card_3 'ZZ' is not a card\n  Bet B30:\n"
                           "    Cannot be settled by the cards: round 'R9' is quarantined in the round log.\n")


def test_explain_and_the_audit_agree_on_every_kind_of_bet_on_every_kind_of_round(tmp_path):
    """Each way a bet's fields can read (an id or none; a type offered, in lower case, empty or not
    offered; a stake and an amount paid empty, negative, not an amount, 0, with a fifth decimal, in
    other digits; each status that voids a bet or leaves it open, another, or none), on each kind of
    round (on one row, on two, quarantined, not in the log): explain settles the bet, or says it
    cannot, exactly where the audit does. Its own check of what makes a bet readable is a twin of
    `settlement.settle`'s reasons."""
    import itertools

    from baccarat_audit.outputs import explanation
    from baccarat_audit.inputs import ingest
    from baccarat_audit.rules.bets import OPEN, VOID

    statuses = [None, "WON", *(status.lower() for status in VOID + OPEN)]
    ways = list(itertools.product([True, False], ["PLAYER", "tie", None, "DRAGON7"],
                                  ["10", None, "-10", "1x", "0", "10.00001", "\u0661\u0660"],
                                  ["20", "10", None, "-1", "x", "0", "10.00001"], statuses))
    rounds = ["R2", "R1", "R9", "R404"]  # on one row, on two, quarantined, not in the log
    bets = pl.DataFrame([{"round_id": round_id, "bet_id": f"B{i}" if has_id else None, "bet_type": bet_type,
                          "stake": stake, "paid": paid, "seat": "1", "status": status}
                         for i, (round_id, (has_id, bet_type, stake, paid, status))
                         in enumerate(itertools.product(rounds, ways))])
    bets.write_csv(tmp_path / "bets.csv")
    run("audit", ASSETS / "mixed_notation.csv", "--bets", tmp_path / "bets.csv", "--out", tmp_path / "out",
        "--no-contract")
    findings = pl.read_parquet(tmp_path / "out" / "findings.parquet")
    flagged = set(findings.filter(pl.col("source") == "bets")["source_row"])
    quarantined = set(pl.read_parquet(tmp_path / "out" / "bets_quarantine.parquet")["source_row"])
    assert min(len(flagged), len(bets) - len(flagged | quarantined), len(quarantined)) >= 10  # each verdict
    for round_id in rounds:
        rows = [i + 1 for i in range(len(bets)) if bets["round_id"][i] == round_id]  # source rows, in log order
        audited = [None if row in quarantined else row not in flagged for row in rows]
        if round_id == "R404":  # no row to explain: the verdicts the report's evidence gives
            bet_rows = ingest.rows_for_round(tmp_path / "bets.csv", "bet_log", round_id, None)
            verdicts = [[b["agrees"] for b in explanation.settle_bets({"profile": "standard"}, bet_rows,
                                                                   explanation.unsettled(round_id, 0, 0))]]
        else:
            shown = json.loads(run("explain", ASSETS / "mixed_notation.csv", round_id, "--bets",
                                   tmp_path / "bets.csv", "--json").output)
            verdicts = [[b["agrees"] for b in row["bets"]] for row in shown if "bets" in row]
        assert verdicts and all(v == audited for v in verdicts), round_id


def test_explain_reads_recorded_totals_and_results_as_the_audit_does(tmp_path):
    """A total of "05" or "+5" is 5 to the audit (an integer), so explain must not call it a
    mismatch; "5.0", "٥" (an Arabic-Indic five) and "5_0" are not integers to either."""
    clean = pl.read_csv(ASSETS / "mixed_notation.csv", infer_schema=False).filter(pl.col("round_id") == "R1").head(1)
    # Python's strip takes an information separator (U+001F), polars' does not: the audit flags "5\x1f".
    totals = ["5", "05", "+5", "-5", "5.0", "\u0665", "5_0", "0005", "-0", " 5 ", "5\x1f"]
    outcomes = ["banker", "B", "Banker", "BANKER WIN", "\u0392", "banker\x1f"]  # a Greek capital beta
    log = pl.concat([clean.with_columns(round_id=pl.lit(f"T{i}"), player_total=pl.lit(total))
                     for i, total in enumerate(totals)]
                    + [clean.with_columns(round_id=pl.lit(f"O{i}"), outcome=pl.lit(outcome))
                       for i, outcome in enumerate(outcomes)])
    log.write_csv(tmp_path / "log.csv")
    run("audit", tmp_path / "log.csv", "--out", tmp_path / "out", "--no-contract")
    found = set(pl.read_parquet(tmp_path / "out" / "findings.parquet").select("round_id", "check").iter_rows())
    mismatched = set()
    for round_id in log["round_id"]:
        (explained,) = json.loads(run("explain", tmp_path / "log.csv", round_id, "--json").output)
        mismatched |= {(round_id, c["field"].upper()) for c in explained["comparisons"] if c["agrees"] is False}
    assert mismatched == found == {("T3", "PLAYER_TOTAL"), ("T4", "PLAYER_TOTAL"), ("T5", "PLAYER_TOTAL"),
                                   ("T6", "PLAYER_TOTAL"), ("T8", "PLAYER_TOTAL"), ("T10", "PLAYER_TOTAL"),
                                   ("O3", "OUTCOME"), ("O4", "OUTCOME"), ("O5", "OUTCOME")}


def test_explain_reads_a_mapped_bet_log_as_the_audit_does(tmp_path):
    """A provider's bet log with its own column names is read through --bets-mapping by both."""
    mapping = {"name": "bets-b", "columns": {"round": "round_id", "ticket": "bet_id", "wager": "bet_type",
                                             "amount": "stake", "returned": "paid"}}
    (tmp_path / "bets-b.json").write_text(json.dumps(mapping))
    bets = pl.read_csv(ASSETS / "mixed_notation_bets.csv", infer_schema=False).filter(pl.col("round_id") == "R3")
    bets.rename({target: source for source, target in mapping["columns"].items()}).write_csv(tmp_path / "bets.csv")
    options = ("--bets", tmp_path / "bets.csv", "--bets-mapping", tmp_path / "bets-b.json")
    run("audit", ASSETS / "mixed_notation.csv", *options, "--out", tmp_path / "out", "--no-contract")
    flagged = set(pl.read_parquet(tmp_path / "out" / "findings.parquet").filter(pl.col("source") == "bets")["bet_id"])
    (explained,) = json.loads(run("explain", ASSETS / "mixed_notation.csv", "R3", *options, "--json").output)
    assert {bet["bet_id"] for bet in explained["bets"] if bet["agrees"] is False} == flagged == {"B5"}
    assert len(explained["bets"]) == bets.height


def test_odds_prints_the_exact_house_edges():
    result = run("odds", "--profile", "ez-baccarat")
    assert result.exit_code == 0
    assert "DRAGON_7               7.6113%" in result.output
    assert "  P(BANKER)  = 0.458597\n  P(PLAYER)  = 0.446247\n  P(TIE)     = 0.095156\n" in run("odds").output
    figures = json.loads(run("odds", "--profile", "tie-9", "--decks", 6, "--json").output)
    assert figures["decks"] == 6
    assert Fraction(figures["outcomes"]["TIE"]["exact"]) == Fraction(83_552_962_932_288, 878_869_206_895_680)
    assert run("odds", "--profile", "nope").exit_code == 2


def test_a_date_alone_narrows_to_that_whole_day(tmp_path):
    """`--since D --until D` is the day D: a date alone as --until stands for the end of that day."""
    data = ASSETS.parent.parent / "data" / "rounds.csv"
    result = run("audit", data, "--out", tmp_path, "--no-contract", "--quiet",
                 "--since", "2026-11-01", "--until", "2026-11-01")
    summary = json.loads((tmp_path / "summary.json").read_text())
    on_the_day = pl.read_csv(data, infer_schema=False).filter(pl.col("dealt_at").str.starts_with("2026-11-01"))
    assert result.exit_code == 1 and summary["rows_read"] == on_the_day.height > 0
    assert summary["selection"]["until"] == "2026-11-01T23:59:59.999999+00:00"
    run("audit", data, "--out", tmp_path, "--no-contract", "--quiet", "--until", "2026-11-01T20:00:00+01:00")
    assert json.loads((tmp_path / "summary.json").read_text())["selection"]["until"] == "2026-11-01T20:00:00+01:00"


SAMPLE = ASSETS.parent.parent / "data"


def test_fail_on_chooses_what_sets_exit_1_and_json_prints_the_summary(tmp_path):
    """The sample has findings, quarantined bets and an unmet contract (a round_id on two rows), and
    no quarantined round: a scheduler says which of them fail its job."""
    for kinds, bets, expected in (("findings,quarantine,contract", True, 1), ("quarantine", False, 0),
                                  ("quarantine", True, 1), ("contract", False, 1), ("findings", False, 1)):
        out = tmp_path / f"{kinds}-{bets}"
        args = ["audit", SAMPLE / "rounds.csv", "--out", out, "--fail-on", kinds, "--json"]
        done = subprocess.run([sys.executable, "-m", "baccarat_audit", *map(str, args),
                               *(["--bets", str(SAMPLE / "bets.csv")] if bets else [])], capture_output=True, text=True)
        assert done.returncode == expected, (kinds, bets, done.stderr)
        printed = json.loads(done.stdout)
        assert printed == json.loads((out / "summary.json").read_text())
        assert printed["fail_on"] == sorted(kinds.split(",")) and printed["exit_code"] == expected
        assert "Not clean:" in (out / "report.html").read_text()  # exit 0 or not, the findings are there
    refused = run("audit", SAMPLE / "rounds.csv", "--out", tmp_path / "x", "--fail-on", "findings,typos")
    assert refused.exit_code == 2 and "--fail-on 'findings,typos': expected some of" in refused.output
    for empty in ("", ","):  # a scheduler's unset variable would otherwise pass every run
        refused = run("audit", SAMPLE / "rounds.csv", "--out", tmp_path / "x", "--fail-on", empty)
        assert refused.exit_code == 2 and f"--fail-on {empty!r}: expected some of" in refused.output
        assert not (tmp_path / "x").exists()


def test_a_bet_log_without_its_columns_names_the_option_that_maps_them(tmp_path):
    wrong = run("audit", SAMPLE / "rounds.csv", "--bets", SAMPLE / "rounds.csv", "--out", tmp_path / "out")
    assert wrong.exit_code == 2 and "required column bet_id, bet_type, stake, paid missing" in wrong.output
    assert wrong.output.rstrip().endswith("; a mapping renames a provider's columns (audit --bets-mapping, "
                                          "validate --bets --mapping))")


def test_the_summary_names_its_run_its_command_and_the_period_it_covers(tmp_path):
    args = ["audit", str(SAMPLE / "rounds.csv"), "--out", str(tmp_path / "out"), "--no-contract"]
    done = subprocess.run([sys.executable, "-m", "baccarat_audit", *args], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["schema_version"] == 5 and len(summary["run_id"]) == 32
    assert summary["as_of"] == summary["started_at"]  # no --as-of: the present is the start of the run
    assert summary["command"][1:] == args and summary["finished_at"] >= summary["started_at"]
    dealt = pl.read_csv(SAMPLE / "rounds.csv", infer_schema=False)["dealt_at"].sort()
    assert summary["period"] == {"first_dealt_at": dealt[0], "last_dealt_at": dealt[-1]}
    again = subprocess.run([sys.executable, "-m", "baccarat_audit", *args], capture_output=True, text=True)
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["run_id"] != summary["run_id"], again.stderr


def test_as_of_is_the_present_of_the_audit_and_fixes_its_outputs(tmp_path):
    """Rounds dealt after --as-of are TIMESTAMP findings, and none before it; the same log audited
    twice with the same --as-of gives the same outputs, byte for byte."""
    dealt = run("generate", "--rounds", "120", "--seed", "5", "--fault-rate", "0.05", "--bets",
                "--start", "2030-01-01T00:00:00Z", "--out", tmp_path / "log")
    assert dealt.exit_code == 0, dealt.output
    log, bets = tmp_path / "log" / "rounds.csv", tmp_path / "log" / "bets.csv"
    before = run("audit", log, "--bets", bets, "--out", tmp_path / "before", "--as-of", "2029-12-31")
    summary = json.loads((tmp_path / "before" / "summary.json").read_text())
    assert before.exit_code == 1 and summary["as_of"] == "2029-12-31T00:00:00+00:00"
    assert summary["findings"]["TIMESTAMP"] >= 120  # every round, and the faults' own
    later = pl.read_parquet(tmp_path / "before" / "findings.parquet").filter(pl.col("check") == "TIMESTAMP")
    assert later["detail"].str.contains("later than the present of this audit (2029-12-31T00:00:00Z)", literal=True).sum() == 120
    for out in ("after", "again"):
        assert run("audit", log, "--bets", bets, "--out", tmp_path / out, "--as-of", "2031-01-01").exit_code == 1
    summary = json.loads((tmp_path / "after" / "summary.json").read_text())
    assert 0 < summary["findings"]["TIMESTAMP"] < 20  # the faults only: hands dealt before the one before
    for name in ("findings.parquet", "quarantine.parquet", "bets_quarantine.parquet", "fairness.parquet",
                 "evidence.json"):
        assert (tmp_path / "after" / name).read_bytes() == (tmp_path / "again" / name).read_bytes(), name


def test_a_generated_log_is_dealt_before_the_present(tmp_path):
    """A log too long for its tables to have played it since 2026-11-01 ends before the present."""
    assert run("generate", "--rounds", "20000", "--tables", "1", "--out", tmp_path).exit_code == 0
    audited = run("audit", tmp_path / "rounds.csv", "--out", tmp_path / "out", "--no-contract")
    assert audited.exit_code == 0, audited.output
    last = pl.read_csv(tmp_path / "rounds.csv")["dealt_at"].max()
    assert "2026-11-01" < last < datetime.now(UTC).isoformat()


@pytest.mark.parametrize("round_id, code", [("R10", 0), ("R2", 1), ("R5", 1), ("R1", 1), ("R9", 1)])
def test_explain_exits_1_when_the_round_has_a_finding(round_id, code):
    """R10 is by the book; R2 drew against the tableau, R5 recorded another result, R1 is on two rows,
    R9 is quarantined: what the audit finds of each (and its exit code when they are all its log)."""
    assert run("explain", ASSETS / "mixed_notation.csv", round_id).exit_code == code
    assert run("explain", ASSETS / "mixed_notation.csv", round_id, "--json").exit_code == code


def test_explain_says_what_the_procedure_would_have_produced(tmp_path):
    """A natural drawn to ends at the natural; a card dealt against the tableau is taken away when the
    other hand then needs no card the log lacks; a card never dealt cannot be known."""
    log = _write(tmp_path / "rounds.csv", "\n".join([
        "round_id,table_id,shoe_id,hand_no,dealt_at,player_card_1,banker_card_1,player_card_2,banker_card_2,"
        "player_card_3,banker_card_3,outcome",
        "NATURAL,T1,S1,1,2026-11-01T18:00:00Z,5H,2S,3D,2C,2H,,BANKER",  # Player's 8 against 4, drawn to
        "PLAYER_STOOD_ON_7,T1,S1,2,2026-11-01T18:01:00Z,3H,3S,4D,4C,2H,,PLAYER",  # 7 against 7, Player drew
        "BANKER_WOULD_DRAW,T1,S1,3,2026-11-01T18:02:00Z,3H,2S,4D,2C,2H,,PLAYER",  # Player drew on 7, Banker 4
        "BANKER_DREW,T1,S1,4,2026-11-01T18:03:00Z,10H,10S,6D,7C,,5H,PLAYER",  # Banker drew on 7
        "NEVER_DEALT,T1,S1,5,2026-11-01T18:04:00Z,10H,10S,2D,7C,,,BANKER",  # Player stood on 2
        "BY_THE_BOOK,T1,S1,6,2026-11-01T18:05:00Z,10H,10S,6D,7C,,,BANKER",
    ]) + "\n")
    other = {"same": False, "same_result": False, "totals_recorded_are_the_procedure's": False}  # no totals recorded
    expected = {
        "NATURAL": {"known": True, "player": 8, "banker": 4, "player_cards": 2, "banker_cards": 2,
                    "result": "PLAYER", **other},
        "PLAYER_STOOD_ON_7": {"known": True, "player": 7, "banker": 7, "player_cards": 2, "banker_cards": 2,
                              "result": "TIE", **other},
        "BANKER_DREW": {"known": True, "player": 6, "banker": 7, "player_cards": 2, "banker_cards": 2,
                        "result": "BANKER", **other},
        "BY_THE_BOOK": {"known": True, "player": 6, "banker": 7, "player_cards": 2, "banker_cards": 2,
                        "result": "BANKER", "same": True, "same_result": True},
    }
    for round_id in ("NATURAL", "PLAYER_STOOD_ON_7", "BANKER_WOULD_DRAW", "BANKER_DREW", "NEVER_DEALT", "BY_THE_BOOK"):
        done = run("explain", log, round_id, "--json")
        (explained,) = json.loads(done.output)
        assert done.exit_code == (0 if round_id == "BY_THE_BOOK" else 1), round_id
        assert explained["by_the_procedure"]["known"] is (round_id in expected), round_id
        if round_id in expected:
            assert explained["by_the_procedure"] == expected[round_id], round_id
        assert (explained["table_id"], explained["shoe_id"]) == ("T1", "S1")
        departed = {"NATURAL": 4, "PLAYER_STOOD_ON_7": 5, "BANKER_WOULD_DRAW": 5, "BANKER_DREW": 7, "NEVER_DEALT": 5}
        first = explained["first_departure"]
        assert (first and first["step"]) == departed.get(round_id), round_id
        assert first is None or first["text"] == explained["steps"][first["step"] - 1]
        assert first is None or first["text"].endswith("(CONTRARY TO THE TABLEAU).")
    text = run("explain", log, "NATURAL").output
    assert "  4. Player drew 2H (2) (CONTRARY TO THE TABLEAU).\n" in text
    assert "The procedure was first broken at step 4." in text
    assert "  table T1, shoe S1, hand 1, dealt at 2026-11-01T18:00:00Z, profile standard\n" in text
    assert "By the procedure the coup would have ended Player 8, Banker 4: player wins" in text
    # Where a card the procedure needs was never recorded, each of its points' results: what would change the result.
    assert ("By the procedure: cannot be known (Player should have drawn and did not). Player's third card, by its "
            "points (10, J, Q, K count 0): 0-4: banker wins, as recorded; 5: a tie; 6-7: player wins; 8-9: banker wins, "
            "as recorded.\n") in run("explain", log, "NEVER_DEALT").output
    (never,) = json.loads(run("explain", log, "NEVER_DEALT", "--json").output)
    assert never["by_the_procedure"]["missing"] == {
        "card": "Player's third card", "recorded": "BANKER", "changing": [5, 6, 7],
        "results": ["BANKER"] * 5 + ["TIE", "PLAYER", "PLAYER", "BANKER", "BANKER"]}
    (would,) = json.loads(run("explain", log, "BANKER_WOULD_DRAW", "--json").output)
    assert would["by_the_procedure"]["missing"] == {
        "card": "Banker's third card", "recorded": "PLAYER", "changing": [3, 4, 5],
        "results": ["PLAYER"] * 3 + ["TIE", "BANKER", "BANKER"] + ["PLAYER"] * 4}


def test_explain_gives_each_bet_as_paid_as_due_on_the_cards_and_as_due_by_the_procedure(tmp_path):
    """A dispute over a natural that was drawn to: the recorded cards make Banker win, the procedure
    ends the coup at Player's 8. Each bet shows what it was paid, what the recorded cards make due,
    and what the procedure would have made due; where a card was never dealt, that cannot be known."""
    header = ("round_id,table_id,shoe_id,hand_no,dealt_at,player_card_1,banker_card_1,player_card_2,banker_card_2,"
              "player_card_3,banker_card_3,outcome")
    log = _write(tmp_path / "rounds.csv", "\n".join([
        header,
        "NATURAL,T1,S1,1,2026-11-01T18:00:00Z,5H,2S,3D,2C,2H,,BANKER",  # Player's 8 against 4, drawn to: 0 against 4
        "NEVER_DEALT,T1,S1,2,2026-11-01T18:01:00Z,10H,10S,2D,7C,,,BANKER",  # Player stood on 2
    ]) + "\n")
    bets = _write(tmp_path / "bets.csv", "\n".join([
        "bet_id,round_id,bet_type,stake,paid",
        "B1,NATURAL,BANKER,10,19.50", "B2,NATURAL,PLAYER,10,0", "B3,NATURAL,PLAYER_PAIR,10,0",
        "B4,NEVER_DEALT,PLAYER,10,0", "B5,NEVER_DEALT,BANKER_PAIR,10,0",
    ]) + "\n")
    (natural,) = json.loads(run("explain", log, "NATURAL", "--bets", bets, "--json").output)
    due = {bet["bet_id"]: (bet["paid"], bet["expected"], bet["due_by_procedure"]) for bet in natural["bets"]}
    assert due == {"B1": ("19.50", "19.50", "0.00"), "B2": ("0", "0.00", "20.00"), "B3": ("0", "0.00", "0.00")}
    assert "By the procedure (Player 8, Banker 4: player wins) 20.00 would be due." in natural["bets"][1]["steps"]
    (never,) = json.loads(run("explain", log, "NEVER_DEALT", "--bets", bets, "--json").output)
    assert never["bets"][0]["due_by_procedure"] is None
    assert never["bets"][0]["steps"][-1] == "By the procedure: cannot be known (Player should have drawn and did not)."
    # A pair bet is decided by the opening cards, dealt the same by the book or not: known.
    assert never["bets"][1]["due_by_procedure"] == "0.00" and never["bets"][1]["steps"][-1] == (
        "By the procedure: the same opening cards, which alone decide a BANKER_PAIR bet, so the same 0.00 is due.")
    text = run("explain", log, "NATURAL", "--bets", bets).output
    assert "    Expected 19.50, paid 19.50: correct.\n    By the procedure (Player 8, Banker 4: player wins) 0.00 " in text


@pytest.mark.parametrize("round_id", ["R1", "R2", "R3", "R4", "R9", "R10"])
def test_explain_json_follows_its_published_schema(round_id):
    """schemas/explain.schema.json is what `explain --json` promises a script: replayed rows, copies,
    bets and quarantined rows alike."""
    import jsonschema

    schema = json.loads((ASSETS.parent.parent / "schemas" / "explain.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    done = run("explain", ASSETS / "mixed_notation.csv", round_id, "--bets", ASSETS / "mixed_notation_bets.csv",
               "--json")
    jsonschema.validate(json.loads(done.output), schema, cls=jsonschema.Draft202012Validator)


def test_explain_names_the_other_rounds_a_finding_across_the_shoe_is_about():
    """CARD_COUNT: the rounds holding the other copies of the card (the sample's 2H, dealt a 9th time in
    T02-S0004); TIMESTAMP: the hand before, dealt later. Both in the text and the JSON, held to its schema."""
    import jsonschema

    schema = json.loads((ASSETS.parent.parent / "schemas" / "explain.schema.json").read_text())
    log = ASSETS.parent.parent / "data" / "rounds.csv"
    rows = pl.read_csv(log, infer_schema=False).with_row_index("row", 1)
    (counted,) = json.loads(run("explain", log, "T02-S0004-C082", "--json").output)
    jsonschema.validate([counted], schema, cls=jsonschema.Draft202012Validator)
    (found,) = [f for f in counted["across_rounds"] if f["check"] == "CARD_COUNT"]
    shoe = rows.filter((pl.col("shoe_id") == "T02-S0004") & (pl.col("round_id") != "T02-S0004-C082"))
    copies = [(r["round_id"], r["row"]) for r in shoe.iter_rows(named=True) for c in DEALT_CARDS if r[c] == "2H"]
    assert [(o["round_id"], o["source_row"]) for o in found["other_copies"]] == copies and len(copies) == 8
    assert found["hand_before"] is None
    (late,) = json.loads(run("explain", log, "T01-S0002-C072", "--json").output)
    jsonschema.validate([late], schema, cls=jsonschema.Draft202012Validator)
    assert late["across_rounds"][0]["hand_before"] == {"round_id": "T01-S0002-C071", "hand_no": "71", "source_row": 152,
                                                       "dealt_at": "2026-11-01T20:10:50Z", "source_file": str(log)}
    assert ("The hand before: hand 71, T01-S0002-C071 (" + str(log) + " row 152), dealt at 2026-11-01T20:10:50Z."
            in run("explain", log, "T01-S0002-C072").output)


def test_explain_reads_several_files_as_audit_does(tmp_path):
    """A night cut in two files that overlap: the round is found in both, each copy named by its file."""
    log = pl.read_csv(ASSETS.parent.parent / "data" / "rounds.csv", infer_schema=False)
    log.head(1200).write_csv(tmp_path / "first.csv")
    log.slice(1000).write_csv(tmp_path / "second.csv")
    done = run("explain", tmp_path / "first.csv", tmp_path / "second.csv", "T03-S0001-C017", "--json")
    assert done.exit_code == 1
    rows = [(Path(e["source_file"]).name, e["source_row"]) for e in json.loads(done.output)]
    assert rows == [("first.csv", 1017), ("second.csv", 17)]
    missing = run("explain", tmp_path / "first.csv", tmp_path / "second.csv", "NOPE")
    assert missing.exit_code == 2 and f"{tmp_path / 'first.csv'} (+1 more): no row has round_id 'NOPE'" in missing.output


#: The cards of a round in deal order, as CARD_COUNT counts them.
DEALT_CARDS = ("player_card_1", "banker_card_1", "player_card_2", "banker_card_2", "player_card_3", "banker_card_3")


@pytest.mark.parametrize("own", [None, "dirty_decay_ms:1000"])
def test_the_tool_hands_freed_memory_back_at_once_unless_the_user_says_otherwise(own):
    """Imported before polars (as the CLI and `python -m` are), the package has polars' allocator hand
    freed pages back at once: polars appends the setting to its own when it is imported. A setting of
    the user's is theirs."""
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    env |= {"_RJEM_MALLOC_CONF": own} if own else {}
    shown = "import os, baccarat_audit, polars; print(os.environ['_RJEM_MALLOC_CONF'])"
    done = subprocess.run([sys.executable, "-c", shown], capture_output=True, text=True, env=env, check=True)
    settings = done.stdout.strip().split(",")
    assert settings[-1] == (own or "muzzy_decay_ms:0") and settings[0].startswith("dirty_decay_ms")


def test_the_help_names_every_format_read_and_what_validate_maps():
    for command in ("audit", "explain"):
        assert "CSV, JSON Lines or Parquet" in CliRunner().invoke(app, [command, "--help"], terminal_width=200).stdout
    validate = CliRunner().invoke(app, ["validate", "--help"], terminal_width=200).stdout
    assert "Column mapping for FILE (the bet log with --bets)" in " ".join(validate.split())


def test_generate_refuses_more_profiles_than_tables(tmp_path):
    done = subprocess.run([*TOOL, "generate", "--rounds", "10", "--tables", "2", "--profile", "standard",
                           "--profile", "tie-9", "--profile", "super-6", "--out", str(tmp_path / "g")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr == ("error: 3 profiles for 2 tables: super-6 would deal no round; "
                                                    "give --tables 3 or more\n")
    assert not (tmp_path / "g").exists()


def test_quiet_prints_nothing_but_errors(tmp_path):
    done = subprocess.run([*TOOL, "audit", str(SAMPLE / "rounds.csv"), "--out", str(tmp_path / "out"), "--quiet",
                           "--no-contract"], capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", "")
    refused = subprocess.run([*TOOL, "audit", str(tmp_path / "none.csv"), "--out", str(tmp_path / "o"), "--quiet"],
                             capture_output=True, text=True)
    assert refused.returncode == 2 and refused.stdout == "" and refused.stderr.startswith("error: ")


def test_explain_says_when_only_the_cards_differ_and_when_the_totals_are_the_procedures(tmp_path):
    """Banker stood on 7 by the book but drew an ace: Banker wins either way, and the log's totals are
    the procedure's (7), not the cards' (8): a card logged but not dealt. Each comparison names its check."""
    log = _write(tmp_path / "rounds.csv", "\n".join([
        "round_id,player_card_1,banker_card_1,player_card_2,banker_card_2,player_card_3,banker_card_3,"
        "player_total,banker_total,outcome",
        "LOGGED_NOT_DEALT,10H,10S,6D,7C,,AH,6,7,BANKER",
    ]) + "\n")
    done = run("explain", log, "LOGGED_NOT_DEALT")
    assert done.exit_code == 1
    assert ("By the procedure the coup would have ended Player 6, Banker 7: banker wins, the result the recorded "
            "cards give too: only the cards dealt and the totals differ. The recorded totals are the procedure's, "
            "not the recorded cards': evidence that a third card was logged but not dealt, or dealt but not "
            "logged.") in done.output
    assert "MISMATCH: BANKER_DRAW" in done.output and "MISMATCH: BANKER_TOTAL" in done.output
    (explained,) = json.loads(run("explain", log, "LOGGED_NOT_DEALT", "--json").output)
    assert [c["check"] for c in explained["comparisons"] if c["agrees"] is False] == ["BANKER_DRAW", "BANKER_TOTAL"]


def test_explain_json_gives_hand_no_as_an_integer_as_findings_do():
    (explained,) = json.loads(run("explain", SAMPLE / "rounds.csv", "T01-S0002-C056", "--json").output)
    assert explained["hand_no"] == 56 and isinstance(explained["hand_no"], int)


def test_explain_gives_a_quarantined_bet_the_audits_reason_and_exits_1(tmp_path):
    bets = _write(tmp_path / "bets.csv", "round_id,bet_id,bet_type,stake,paid\n"
                  "T01-S0002-C001,B1,BANKER,abc,10\nT01-S0002-C001,B2,BANKER,10,19.50\n")
    done = run("explain", SAMPLE / "rounds.csv", "T01-S0002-C001", "--bets", bets)
    assert done.exit_code == 1
    assert "    Quarantined by the audit: stake 'abc' is not an amount (digits, up to 4 decimals).\n" in done.output
    audited = run("audit", SAMPLE / "rounds.csv", "--bets", bets, "--out", tmp_path / "out", "--no-contract")
    assert audited.exit_code == 1
    (reason,) = pl.read_parquet(tmp_path / "out" / "bets_quarantine.parquet")["reason"]
    (explained,) = json.loads(run("explain", SAMPLE / "rounds.csv", "T01-S0002-C001", "--bets", bets, "--json").output)
    assert [bet.get("quarantined") for bet in explained["bets"]] == [reason, None]


def test_generate_shows_its_progress_on_a_terminal(tmp_path):
    """Dealing a million rounds takes minutes: on a terminal, generate shows the rounds dealt, as audit
    shows its pieces (under a pseudo-terminal here)."""
    import pty

    reader, writer = pty.openpty()
    done = subprocess.run([*TOOL, "generate", "--rounds", "30000", "--out", str(tmp_path / "g")], stdin=writer,
                          stdout=subprocess.PIPE, stderr=writer, env={**os.environ, "CI": "", "COLUMNS": "120"})
    os.close(writer)
    shown = b""
    while True:
        try:
            chunk = os.read(reader, 65536)
        except OSError:
            break
        if not chunk:
            break
        shown += chunk
    os.close(reader)
    assert done.returncode == 0 and b"dealing rounds" in shown, shown[-500:]
