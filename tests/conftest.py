"""Shared fixtures: logs dealt by the generator once per test session, and the hand-written assets;
the property tests' settings."""

import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from hypothesis import settings, strategies as st

from baccarat_audit import generate

ASSETS = Path(__file__).parent / "assets"
TOOL = [sys.executable, "-m", "baccarat_audit"]  # the command as a user runs it, in a process of its own


def cli(*args: object, **kwargs) -> subprocess.CompletedProcess:
    """The command run in a process of its own: its exit code, stdout and stderr as text."""
    return subprocess.run([*TOOL, *map(str, args)], capture_output=True, text=True, **kwargs)

# Runs the command in a child of its own and prints the child's peak resident memory (KiB) last on stderr.
_PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(done.returncode)
"""


def cli_peak(*args: object) -> tuple[subprocess.CompletedProcess, int]:
    """The command as `cli` runs it, and its peak resident memory in MiB: for the bounds the README states."""
    done = subprocess.run([sys.executable, "-c", _PEAK, *TOOL, *map(str, args)], capture_output=True, text=True)
    said, _, peak = done.stderr.rstrip("\n").rpartition("\n")
    done.stderr = said + "\n" if said else ""
    return done, int(peak) // 1024


# Property tests draw the same examples on every run, so that CI passes or fails as it did here: a
# run that explores new ones is `HYPOTHESIS_PROFILE=explore pytest` (and more with --hypothesis-seed).
settings.register_profile("same", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "same"))

#: Texts that are amounts, nearly amounts, and not: what a stake or a payout may hold in a log.
amount_like = st.one_of(
    st.from_regex(r"[0-9]{1,13}(\.[0-9]{0,5})?", fullmatch=True),
    st.text(alphabet="0123456789.-+e ,١٠", max_size=18),  # signs, exponents, separators, Arabic-Indic digits
)


def output(path: Path) -> pl.DataFrame:
    """An output of a run as tests compare it with another run's: without the run's own id."""
    return pl.read_parquet(path, glob=False).drop("run_id", strict=False)


@pytest.fixture(scope="session")
def clean_log(tmp_path_factory) -> dict[str, Path]:
    return generate.write(generate.generate(6000, seed=11), tmp_path_factory.mktemp("clean"))


@pytest.fixture(scope="session")
def faulted_log(tmp_path_factory) -> dict[str, Path]:
    log = generate.generate(6000, seed=12, fault_rate=0.05)
    return generate.write(log, tmp_path_factory.mktemp("faulted"))
