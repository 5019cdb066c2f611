"""Shared fixtures: logs dealt by the generator once per test session, and the hand-written assets."""

from pathlib import Path

import pytest

from pipeline import generate

ASSETS = Path(__file__).parent / "assets"


@pytest.fixture(scope="session")
def clean_log(tmp_path_factory) -> dict[str, Path]:
    return generate.write(generate.generate(6000, seed=11), tmp_path_factory.mktemp("clean"))


@pytest.fixture(scope="session")
def faulted_log(tmp_path_factory) -> dict[str, Path]:
    log = generate.generate(6000, seed=12, fault_rate=0.05)
    return generate.write(log, tmp_path_factory.mktemp("faulted"))
