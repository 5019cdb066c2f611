"""A stop by signal, wherever the main thread is when it comes (the end-to-end run is in test_cli)."""

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


INSTALLED = "import sys, time\nfrom pathlib import Path\nfrom baccarat_audit import stops\nstops.install(2)\n"


def stopped(body: str, stop: str = "SIGTERM", first: str = INSTALLED) -> subprocess.CompletedProcess:
    """Run `first` and `body` in Python, SIGHUP at its default as a terminal leaves it (a suite run
    under nohup would hand down SIG_IGN); once it prints 'ready', send it `stop`. The process, with
    what it printed on stdout after 'ready'."""
    hang_up_default = "import signal\nsignal.signal(signal.SIGHUP, signal.SIG_DFL)\n"
    running = subprocess.Popen([sys.executable, "-c", hang_up_default + first + textwrap.dedent(body)], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert running.stdout.readline() == "ready\n"
        running.send_signal(getattr(signal, stop))
        after, stderr = running.communicate(timeout=60)
    finally:
        running.kill()  # a process that never got ready, or never stopped, is not left sleeping
    return subprocess.CompletedProcess(running.args, running.returncode, after, stderr)


def one_line(stop: str) -> str:
    return f"error: stopped by {stop} before the run completed\n"


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_stop_inside_a_weakref_callback_still_ends_the_run(stop):
    """Python swallows an exception raised in a weakref callback ("Exception ignored"); the import
    machinery runs one for each module lock, and a stop raised there hung a run in CI. The stop must
    end the process wherever it lands."""
    done = stopped("""
        import weakref
        class Held: pass
        def callback(ref):
            print("ready", flush=True)
            time.sleep(30)
        held = Held()
        watched = weakref.ref(held, callback)
        del held
        print("went on", flush=True)
        """, stop)
    assert (done.returncode, done.stderr, done.stdout) == (2, one_line(stop), "")


def test_a_stop_removes_the_staging_folder_of_a_run_under_way(tmp_path):
    done = stopped(f"""
        folder = Path({str(tmp_path / ".audit-x")!r})
        with stops.removed_if_stopped(folder):
            (folder / "staged").mkdir(parents=True)
            (folder / "staged" / "000000.parquet").write_bytes(b"rows")
            print("ready", flush=True)
            time.sleep(30)
        """)
    assert done.returncode == 2
    assert list(tmp_path.iterdir()) == []


def test_a_stop_while_outputs_are_published_lets_the_run_end_as_it_would_have():
    """A stop among the moves of finished outputs would leave two runs' outputs side by side."""
    done = stopped("""
        with stops.publishing(1):
            print("ready", flush=True)
            time.sleep(3)
            print("all moved", flush=True)
        sys.exit(1)
        """)
    assert (done.returncode, done.stderr, done.stdout) == (1, "", "all moved\n")


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_stop_once_the_outputs_are_published_ends_the_run_at_once_with_its_own_code(stop):
    """The run has completed: a stop must not say it had not (it was exit 2 with that line), nor wait
    on what the command still prints (a pipe no one reads would hold it)."""
    done = stopped("""
        with stops.publishing(1):
            pass
        print("ready", flush=True)
        time.sleep(30)
        print("went on", flush=True)
        """, stop)
    assert (done.returncode, done.stderr, done.stdout) == (1, "", "")


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_stop_as_python_shuts_down_is_ignored(stop):
    """Python puts back the default handlers as it shuts down: a stop met there ended a finished run
    with no word (-15). The command ignores stops once its output is written (`stops.ignored`)."""
    done = stopped("""
        stops.ignored()
        print("ready", flush=True)
        time.sleep(2)
        print("shut down", flush=True)
        sys.exit(1)
        """, stop)
    assert (done.returncode, done.stderr, done.stdout) == (1, "", "shut down\n")


def test_a_run_under_nohup_outlives_its_terminal():
    """nohup ignores SIGHUP before the run starts; a closed terminal must not then stop the run."""
    done = stopped("""
        print("ready", flush=True)
        time.sleep(2)
        print("outlived", flush=True)
        """, "SIGHUP", first="import signal\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\n" + INSTALLED)
    assert (done.returncode, done.stderr, done.stdout) == (0, "", "outlived\n")


@pytest.mark.parametrize("stop", ["SIGTERM", "SIGINT"])
def test_the_command_takes_a_stop_while_it_is_still_importing_its_libraries(stop):
    """polars, pyarrow and typer take most of a second to import: a Ctrl-C then was a traceback."""
    done = stopped("""
        import sys, time

        class Slow:  # holds the import of polars, the first of the CLI's libraries, until the stop
            def find_spec(self, name, path=None, target=None):
                if name == "polars":
                    print("ready", flush=True)
                    time.sleep(30)

        sys.meta_path.insert(0, Slow())
        sys.argv = ["baccarat-audit", "--help"]
        from baccarat_audit.__main__ import main
        main()
        """, stop, first="")
    assert (done.returncode, done.stderr, done.stdout) == (2, one_line(stop), "")


def test_a_stop_removes_the_scratch_folder_of_validate_and_leaves_its_data_docs_as_they_were(tmp_path):
    """`validate` writes a large log's columns a part at a time to a scratch folder, as an audit does to
    its staging folder, and its Data Docs to a folder beside `--docs`; held here as it first imports
    Great Expectations, with both made. The earlier run's Data Docs stay as they were."""
    scratch, out = tmp_path / "scratch", tmp_path / "out"
    scratch.mkdir()
    subprocess.run([sys.executable, "-m", "baccarat_audit", "validate", "data/bets.csv", "--bets",
                    "--docs", out / "docs"], cwd=ROOT, check=True, capture_output=True)
    earlier = (out / "docs" / "index.html").read_bytes()
    done = stopped(f"""
        import sys, tempfile, time
        from pathlib import Path

        class Slow:
            def find_spec(self, name, path=None, target=None):
                if name == "great_expectations":
                    made = any(Path(tempfile.tempdir).iterdir()) and any(Path({str(out)!r}).glob(".docs-*"))
                    print("ready" if made else "no scratch folder yet", flush=True)
                    time.sleep(30)

        tempfile.tempdir = {str(scratch)!r}
        sys.meta_path.insert(0, Slow())
        sys.argv = ["baccarat-audit", "validate", "data/rounds.csv", "--docs", {str(out / "docs")!r}]
        from baccarat_audit.__main__ import main
        main()
        """, first="")
    assert (done.returncode, done.stderr) == (2, one_line("SIGTERM"))
    assert list(scratch.iterdir()) == []
    assert sorted(out.iterdir()) == [out / ".baccarat-audit.json", out / "docs"]
    assert (out / "docs" / "index.html").read_bytes() == earlier
