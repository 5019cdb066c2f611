"""A house's own rules profiles: a file given by path, a folder the log's profile names are found in,
and the number of decks (1 to 8) that CARD_COUNT, the odds and the settlement follow."""

import hashlib
import json
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from baccarat_audit import generate
from baccarat_audit.cli import app
from baccarat_audit.rules import bets, profiles
from conftest import cli

DATA = Path(__file__).parent.parent / "data"

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


HOUSE = 'name = "house"\nbase = "standard"\n'


@pytest.mark.parametrize(("settings", "said"), [
    ("deck = 6", "'deck' is not a setting (settings: decks, name, base, description, and the tables "
                 "commission, rounding, pays, banker_win, dragon_bonus)"),
    ('[pays]\nTEI = "8"', "pays.TEI is not a setting ([pays] takes PLAYER, BANKER, TIE, PLAYER_PAIR, "
                          "BANKER_PAIR, DRAGON_7, PANDA_8, SUPER_6)"),
    ('[pays]\nPLAYER_DRAGON_BONUS = "30"', "pays.PLAYER_DRAGON_BONUS is not a setting"),
    ('[dragon_bonus]\nwin_by = { 10 = "5" }', "dragon_bonus.win_by = {'10': '5'} must be a table of wins by 9, 8, "
                                              "7, 6, 5, 4 points and their pays"),
    ('pays = "8"', "pays = '8' must be a table: [pays] with PLAYER, BANKER"),
    ("decks = { six = 6 }", "decks = {'six': 6} must be a whole number from 1 to 8"),
    ('[rounding]\nmode = ["house"]', "rounding.mode = ['house'] must be one value"),
    ("description = 5", "description = 5 must be text"),
    ('[pays]\nTIE = "1e400"', "pays.TIE = '1e400' must be from 0 to 1,000,000 with at most 4 decimals"),
    ('[pays]\nTIE = "10000000000000"', "pays.TIE = '10000000000000' must be from 0 to 1,000,000"),
    ('[rounding]\nunit = "1E+30"', "rounding.unit = '1E+30' must be from 0 to 1,000,000"),
    ('[commission]\nrate = "5"', "commission.rate = '5' must be a rate below 1 (0.05 is 5%)"),
])
def test_a_house_profile_with_a_setting_misspelt_or_out_of_range_is_refused_naming_it(tmp_path, settings, said):
    """A misspelt setting would leave its base's value in force unseen (a 6-deck game audited as 8
    decks); an amount past what the exact money holds, or a table that is not one, stopped the tool
    as its own failure (exit 3). Each is exit 2, one line naming the file and the setting."""
    path = tmp_path / "house.toml"
    path.write_text(f"{HOUSE}{settings}\n")
    done = cli("audit", DATA / "rounds.csv", "--bets", DATA / "bets.csv", "--profile", path, "--out", tmp_path / "out")
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr == f"error: {path.resolve()}: {said}" + done.stderr.split(said, 1)[1]
    assert done.stderr.count("\n") == 1 and not (tmp_path / "out" / "summary.json").exists()


def test_a_house_profile_that_is_not_utf8_or_leaves_a_bonus_margin_unpaid_is_refused(tmp_path):
    latin = tmp_path / "latin.toml"
    latin.write_bytes(HOUSE.encode() + 'description = "caf\xe9"\n'.encode("latin-1"))
    done = run("odds", "--profile", latin)
    assert done.exit_code == 2 and f"{latin.resolve()}: not valid TOML (not UTF-8 text)" in done.output
    whole = tmp_path / "whole.toml"  # no base: every setting its own
    whole.write_text('name = "whole"\ndecks = 8\n[commission]\nrate = "0"\n[rounding]\nmode = "exact"\nunit = "0.01"\n'
                     '[pays]\nPLAYER = "1"\n[dragon_bonus]\nnatural_win = "1"\nnatural_tie = "push"\nwin_by = { 9 = "30" }\n')
    unpaid = run("odds", "--profile", whole)
    assert unpaid.exit_code == 2 and "whole.toml: dragon_bonus.win_by pays no win by 8, 7, 6, 5, 4" in unpaid.output


def test_every_bet_type_a_pay_table_may_list_is_offered_and_priced(tmp_path):
    """The pay table's bet types (`[pays]`) and the Dragon Bonus (`[dragon_bonus]`) are every bet type
    the settlement decides: a profile that lists them all offers each, with its house edge."""
    path = tmp_path / "everything.toml"
    path.write_text(HOUSE + "[pays]\n" + "".join(f'{bet} = "2"\n' for bet in profiles.PAYS))
    done = run("odds", "--profile", path, "--json")
    assert done.exit_code == 0, done.output
    assert list(json.loads(done.output)["house_edge"]) == list(bets.BET_TYPES)


def test_a_pay_of_a_million_to_one_is_settled_exactly(tmp_path):
    """The largest pay a profile may state is settled in exact money: every Tie bet of a log whose
    rounds name no profile is paid a million to one, and each Tie won is a SETTLEMENT finding."""
    rounds = pl.read_csv(DATA / "rounds.csv", infer_schema=False).drop("profile")
    rounds.write_csv(tmp_path / "rounds.csv")
    path = tmp_path / "million.toml"
    path.write_text(f'{HOUSE}[pays]\nTIE = "1000000"\n')
    done = cli("audit", tmp_path / "rounds.csv", "--bets", DATA / "bets.csv", "--profile", path, "--out",
               tmp_path / "out", "--json")
    assert done.returncode == 1, done.stderr
    found = pl.read_parquet(tmp_path / "out" / "findings.parquet").filter(pl.col("check") == "SETTLEMENT")
    stakes = pl.read_csv(DATA / "bets.csv", infer_schema=False).select("bet_id", "stake")
    tie_wins = found.filter(pl.col("detail").str.contains("pays 1000000:1")).join(stakes, on="bet_id")
    assert tie_wins.height > 0
    assert all(Decimal(expected) == Decimal(stake) * 1_000_001 for expected, stake in tie_wins.select("expected", "stake")
               .iter_rows())


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
