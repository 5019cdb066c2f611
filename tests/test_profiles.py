"""A house's own rules profiles: a file given by path, a folder the log's profile names are found in,
and the number of decks (1 to 8) that CARD_COUNT, the odds and the settlement follow."""

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from baccarat_audit import generate
from baccarat_audit.cli import app

ONE_DECK = '''name = "one-deck"
base = "standard"
description = "A single-deck game whose Tie pays 9 to 1"
decks = 1

[pays]
TIE = "9"
'''


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def house(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("house")
    (folder / "one-deck.toml").write_text(ONE_DECK)
    return folder


def test_a_log_that_names_a_house_profile_is_audited_by_it_from_the_profiles_folder(house, tmp_path):
    """Dealt from one-deck shoes and paid 9 to 1 on Tie, the log is clean under its own profile, found
    in --profiles-dir by the name its rows give; the profile's file and its base are in the provenance."""
    written = generate.write(generate.generate(400, seed=3, profile_names=(str(house / "one-deck.toml"),),
                                               with_bets=True), tmp_path / "log")
    assert set(pl.read_parquet(written["parquet"])["profile"]) == {"one-deck"}
    done = run("audit", written["parquet"], "--bets", written["bets_parquet"], "--profiles-dir", house,
               "--out", tmp_path / "out", "--json")
    assert done.exit_code == 0, done.output
    summary = json.loads(done.output)
    assert sum(summary["findings"].values()) == 0 and summary["bets_settled"] > 0
    profile = str((house / "one-deck.toml").resolve())
    assert summary["rules"]["profiles"][profile] == {
        profile: hashlib.sha256((house / "one-deck.toml").read_bytes()).hexdigest(),
        "schemas/profiles/standard.toml": hashlib.sha256(
            (Path(__file__).parent.parent / "schemas/profiles/standard.toml").read_bytes()).hexdigest()}
    assert summary["rules"]["descriptions"][profile] == "A single-deck game whose Tie pays 9 to 1"
    unknown = run("audit", written["parquet"], "--out", tmp_path / "without")  # the name alone is no profile
    assert unknown.exit_code == 2 and "column profile: unknown rules profile 'one-deck'" in unknown.output


def test_a_house_profile_file_sets_the_decks_that_card_count_holds_a_shoe_to(house, tmp_path):
    """Eight-deck shoes audited as one-deck games: a card seen a second time in a shoe is CARD_COUNT."""
    written = generate.write(generate.generate(300, seed=5), tmp_path / "log")
    pl.read_parquet(written["parquet"]).drop("profile").write_parquet(tmp_path / "rounds.parquet")
    as_dealt = run("audit", tmp_path / "rounds.parquet", "--out", tmp_path / "eight", "--json", "--no-contract")
    assert json.loads(as_dealt.output)["findings"]["CARD_COUNT"] == 0
    one_deck = run("audit", tmp_path / "rounds.parquet", "--profile", house / "one-deck.toml",
                   "--out", tmp_path / "one", "--json", "--no-contract")
    assert one_deck.exit_code == 1 and json.loads(one_deck.output)["findings"]["CARD_COUNT"] > 0
    findings = pl.read_parquet(tmp_path / "one" / "findings.parquet").filter(pl.col("check") == "CARD_COUNT")
    assert findings["expected"].unique().to_list() == ["at most 1"]


def test_odds_follow_a_house_profile(house):
    done = run("odds", "--profile", house / "one-deck.toml", "--json")
    figures = json.loads(done.output)
    assert done.exit_code == 0 and figures["decks"] == 1
    assert figures["outcomes"]["BANKER"]["decimal"].startswith("0.459624")  # one deck: the published figure
    assert run("odds", "--decks", "9").exit_code == 2


@pytest.mark.parametrize(("decks", "read"), [("0", "0"), ("9", "9"), ('"8"', "'8'"), ("1.5", "1.5"), ("true", "True")])
def test_a_profile_with_decks_outside_one_to_eight_is_refused(tmp_path, decks, read):
    path = tmp_path / "odd.toml"
    path.write_text(ONE_DECK.replace("decks = 1", f"decks = {decks}"))
    done = run("odds", "--profile", path)
    assert done.exit_code == 2
    assert f"odd.toml: decks = {read} must be a whole number from 1 to 8" in done.output.replace("\n", "")


def test_a_profile_file_that_is_missing_or_names_a_missing_base_is_refused(tmp_path):
    missing = run("odds", "--profile", tmp_path / "nowhere.toml")
    assert missing.exit_code == 2 and "nowhere.toml: no such rules profile file" in missing.output
    (tmp_path / "orphan.toml").write_text(ONE_DECK.replace('base = "standard"', 'base = "house-base"'))
    orphan = run("odds", "--profile", tmp_path / "orphan.toml")
    assert orphan.exit_code == 2 and "unknown rules profile 'house-base'" in orphan.output
    (tmp_path / "house-base.toml").write_text(ONE_DECK.replace('name = "one-deck"', 'name = "house-base"')
                                             .replace('base = "standard"', 'base = "orphan"'))
    looped = run("odds", "--profile", tmp_path / "orphan.toml")
    assert looped.exit_code == 2 and "profile bases form a loop (orphan -> house-base -> orphan)" in looped.output


def test_a_log_cannot_point_the_audit_at_a_profile_file(house, tmp_path):
    """Only the command names files: a log whose profile column gives a path, even of the house's own
    file, stops the run as an unknown profile, unless that file is the one the command gave."""
    written = generate.write(generate.generate(50, seed=2), tmp_path / "log")
    rounds = pl.read_parquet(written["parquet"])
    for value in (str(house / "one-deck.toml"), "one-deck.toml", "/etc/passwd"):
        rounds.with_columns(profile=pl.lit(value)).write_parquet(tmp_path / "named.parquet")
        done = run("audit", tmp_path / "named.parquet", "--out", tmp_path / "out", "--no-contract")
        assert done.exit_code == 2 and f"column profile: unknown rules profile {value!r}" in done.output, value
    rounds.with_columns(profile=pl.lit(str(house / "one-deck.toml"))).write_parquet(tmp_path / "named.parquet")
    given = run("audit", tmp_path / "named.parquet", "--profile", house / "one-deck.toml", "--out", tmp_path / "out",
                "--no-contract")
    assert given.exit_code in (0, 1), given.output
