"""Logs as other systems lay them out, read through a mapping (schemas/mapping.schema.json): JSON Lines
and JSON arrays with nested fields, card lists, a CSV log without a header, a one-table log, values
mapped to "not recorded". Each shipped sample (data/layouts/) holds the same rounds as two shoes of
data/rounds.csv, and its audit must find what the audit of those rows finds."""

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import polars as pl
import pyarrow.parquet as pq
import pytest

import baccarat_audit
from baccarat_audit.engines import run
from baccarat_audit.inputs import ingest
from baccarat_audit.tuning import Tuning
from conftest import cli, cli_peak

DATA = Path(__file__).resolve().parent.parent / "data"
ROOT_SCHEMAS = DATA.parent / "schemas" / "mappings"
AS_OF = datetime(2027, 1, 1, tzinfo=UTC)
SHOES = ["T01-S0002", "T01-S0003"]


def _found(done: baccarat_audit.Audit) -> pl.DataFrame:
    """Findings as two layouts of the same rounds compare: without the run's id and the file's name."""
    return done.findings.drop("run_id", "source_file")


@pytest.fixture(scope="module")
def as_rounds_csv(tmp_path_factory) -> baccarat_audit.Audit:
    """The audit of the rows of data/rounds.csv the samples hold, in the contract's own layout."""
    rows = pl.read_csv(DATA / "rounds.csv", infer_schema=False).filter(pl.col("shoe_id").is_in(SHOES))
    path = tmp_path_factory.mktemp("plain") / "rounds.csv"
    rows.write_csv(path)
    return baccarat_audit.audit(path, as_of=AS_OF)


@pytest.mark.parametrize(("sample", "mapping"), [
    ("nested_rounds.jsonl", "nested-json"),  # JSON Lines, hands nested, cards as {"rank", "suit": "hearts"}
    ("card_lists.json", "card-lists"),  # a JSON array, each hand's cards a list: ["10H", "6S"]
    ("card_text.csv", "card-text"),  # each hand's cards one field of text: "KS 3D"
    ("card_json_text.csv", "card-json-text"),  # each hand's cards a JSON array as text: "[""KS"", ""3D""]"
    ("headerless.csv", "headerless"),  # no header row: the mapping names the columns
    ("one_table.csv", "one-table"),  # no table_id column (a constant), a card not dealt written x or -
    ("shoe_report.txt", "shoe-report"),  # a text report: shoe lines fill shoe_id, tallies and blank lines skipped
])
def test_a_shipped_layout_is_audited_as_the_same_rounds_in_the_contracts_layout(sample, mapping, as_rounds_csv):
    done = baccarat_audit.audit(DATA / "layouts" / sample, mapping=mapping, as_of=AS_OF)
    assert done.summary["rows_read"] == as_rounds_csv.summary["rows_read"] == 157
    assert done.summary["rows_quarantined"] == 0
    assert done.summary["findings"] == as_rounds_csv.summary["findings"]
    assert {"BANKER_DRAW", "DUPLICATE_ROUND", "TIMESTAMP"} <= set(done.findings["check"])  # the seeded faults
    # The report's rows are its lines: its shoe, tally and blank lines come between the hands.
    moved = ["source_row"] if sample == "shoe_report.txt" else []
    assert _found(done).drop(moved).equals(_found(as_rounds_csv).drop(moved))
    assert done.summary["checks"] == as_rounds_csv.summary["checks"]  # table_id and suits there: nothing skipped
    assert done.summary["contract"]["rounds"]["expectations"] == as_rounds_csv.summary["contract"]["rounds"]["expectations"]
    assert done.summary["inputs"][0]["mapping"]["path"].endswith(f"{mapping}.json")


def test_a_parquet_log_with_its_hands_as_lists_of_cards_is_read_by_the_same_mapping(tmp_path, as_rounds_csv):
    records = pl.read_json(DATA / "layouts" / "card_lists.json")
    assert records.schema["player"] == pl.List(pl.String)
    records.write_parquet(tmp_path / "lists.parquet")
    done = baccarat_audit.audit(tmp_path / "lists.parquet", mapping="card-lists", as_of=AS_OF)
    assert _found(done).equals(_found(as_rounds_csv))


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _nested_records() -> list[dict]:
    return [json.loads(line) for line in (DATA / "layouts" / "nested_rounds.jsonl").read_text().splitlines()]


def test_a_hand_listing_more_cards_than_a_hand_holds_is_quarantined_naming_the_field(tmp_path):
    records = _nested_records()[:5]
    records[2]["banker"]["cards"] = [{"rank": rank, "suit": "clubs"} for rank in ("9", "K", "2", "5")]
    records[3]["player"]["cards"] = records[3]["player"]["cards"][:1]  # one card: the second is missing
    records[4]["player"]["cards"][0]["suit"] = "stars"  # a suit the mapping's table does not name
    done = baccarat_audit.audit(_jsonl(tmp_path / "r.jsonl", records), mapping="nested-json", as_of=AS_OF)
    reasons = dict(done.quarantine.select("source_row", "reason").iter_rows())
    last = records[4]["player"]["cards"][0]["rank"]
    assert reasons == {3: "banker.cards lists 4 cards; a hand holds at most 3",
                       4: "player_card_2 is empty",
                       5: f"player_card_1 '{last}stars' is not a card"}
    assert done.summary["rows_read"] == 5 and done.summary["rows_quarantined"] == 3


def test_a_json_lines_log_with_a_line_that_is_not_a_record_is_exit_2_naming_the_line(tmp_path):
    lines = (DATA / "layouts" / "nested_rounds.jsonl").read_text().splitlines()[:4]
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([*lines[:2], lines[2][:-9], lines[3]]) + "\n")
    done = cli("audit", broken, "--mapping", "nested-json", "--out", tmp_path / "out")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: {broken}: line 3 is not JSON (")
    gap = tmp_path / "gap.jsonl"
    gap.write_text("\n".join([*lines[:2], "", *lines[2:]]) + "\n\n")  # blank lines at the end are no record
    done = cli("audit", gap, "--mapping", "nested-json", "--out", tmp_path / "out")
    assert done.returncode == 2
    assert done.stderr == f"error: {gap}: line 3 is blank; a JSON Lines log holds a record on each line\n"
    blank = tmp_path / "blank.jsonl"
    blank.write_text("\n \n")
    done = cli("audit", blank, "--out", tmp_path / "out")
    assert done.stderr == f"error: {blank}: holds no record, only blank lines; nothing to audit\n"
    assert not (tmp_path / "out").exists()


def test_a_row_of_a_headerless_csv_log_that_breaks_its_quotes_is_named_by_its_line(tmp_path):
    lines = (DATA / "layouts" / "headerless.csv").read_text().splitlines()[:5]
    lines[2] = lines[2].replace(",", '"x,', 1)  # its third line, its row 3: no header comes before it
    (tmp_path / "log.csv").write_text("\n".join(lines) + "\n")
    done = cli("audit", tmp_path / "log.csv", "--mapping", "headerless", "--out", tmp_path / "out")
    assert done.returncode == 2
    assert done.stderr == (f"error: {tmp_path / 'log.csv'}: row 3 opens a quoted field that its line does not "
                           "close; records that span lines are not supported\n")


def test_lines_of_a_text_report_that_are_not_records_are_counted_not_quarantined_and_sections_fill_their_rows(
        tmp_path):
    """The shoe lines fill shoe_id for every hand after them, across the pieces a log is read in; the
    tallies and blank lines are skipped, counted in summary.json and on the terminal. A hand dealt
    wrongly is flagged in its section's shoe."""
    report = (DATA / "layouts" / "shoe_report.txt").read_text().splitlines()
    at = report.index("Shoe number T01-S0003") + 3
    report[at] = report[at].replace(",standard", ",standard,extra")  # a broken hand line is still quarantined
    (tmp_path / "report.txt").write_text("\n".join(report) + "\n\n  \n")
    args = ("--mapping", ROOT_SCHEMAS / "shoe-report.json", "--no-contract", "--as-of", "2027-01-01")
    done = cli("audit", tmp_path / "report.txt", "--out", tmp_path / "out", *args)
    assert done.returncode == 1, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["inputs"][0]["lines_skipped"] == 2 + 2 * 4 + 3  # shoe lines, tallies and their titles, blanks
    assert (summary["rows_read"], summary["rows_quarantined"]) == (157, 1)
    assert "157 rows read (13 lines skipped: blank, or not records by the mapping)" in done.stdout
    quarantine = pl.read_parquet(tmp_path / "out" / "quarantine.parquet")
    assert quarantine.select("source_row", "shoe_id", "reason").rows() == [
        (at + 1, "T01-S0003", "the row has 14 fields, the header 13")]
    options = run.Options(mapping=ingest.load_mapping(ROOT_SCHEMAS / "shoe-report.json"), as_of=AS_OF, validate=False,
                          tuning=Tuning(read_rows=7, piece_rows=7))
    run.audit(tmp_path / "report.txt", tmp_path / "in-pieces", options)
    findings = pl.read_parquet(tmp_path / "out" / "findings.parquet").drop("run_id")
    assert findings.equals(pl.read_parquet(tmp_path / "in-pieces" / "findings.parquet").drop("run_id"))
    assert set(findings["shoe_id"]) == {"T01-S0002", "T01-S0003"} and "BANKER_DRAW" in set(findings["check"])


@pytest.mark.parametrize(("mapping", "said"), [
    ({"sections": ["^Shoe (?P<shoe>\\d+)$"]}, "sections '^Shoe (?P<shoe>\\\\d+)$' names the group 'shoe', not a column"),
    ({"sections": ["^Shoe \\d+$"]}, "names no group; a section line fills columns by named groups"),
    ({"skip": ["^(?<=x)y"]}, "skip '^(?<=x)y' is not a pattern polars reads"),
    ({"sections": ["^Shoe (?P<shoe_id>\\d+)$"], "columns": {"shoe": "shoe_id"}}, "both fill shoe_id"),
])
def test_a_skip_or_section_pattern_that_cannot_work_is_refused_naming_it(tmp_path, mapping, said):
    (tmp_path / "m.json").write_text(json.dumps(mapping))
    done = cli("audit", DATA / "layouts" / "shoe_report.txt", "--mapping", tmp_path / "m.json", "--out", tmp_path / "o")
    assert done.returncode == 2 and said in done.stderr, done.stderr


def test_sections_over_a_log_that_has_the_column_or_is_not_text_are_refused(tmp_path):
    (tmp_path / "m.json").write_text(json.dumps({"sections": ["^Shoe (?P<shoe_id>\\d+)$"]}))
    done = cli("audit", DATA / "rounds.csv", "--mapping", tmp_path / "m.json", "--out", tmp_path / "o")
    assert done.returncode == 2 and "column shoe_id is in the log, and the mapping's section lines fill it too" in done.stderr
    done = cli("audit", DATA / "rounds.parquet", "--mapping", tmp_path / "m.json", "--out", tmp_path / "o")
    assert done.returncode == 2 and "which only a CSV or text log of rounds has; this is a parquet log" in done.stderr


def test_burn_cards_held_as_records_in_two_fields_are_read_in_order_and_counted_by_card_count(tmp_path):
    """The npm engine's burn: the card turned, then the cards it burns, each a record; most rounds have
    none. The sample burns cards its shoes leave undealt: its findings are the layout's without burns.
    Burning nine 5H in a shoe of eight decks is CARD_COUNT's to find."""
    burnt = baccarat_audit.audit(DATA / "layouts" / "burn_records.jsonl", mapping="burn-records", as_of=AS_OF)
    plain = baccarat_audit.audit(DATA / "layouts" / "nested_rounds.jsonl", mapping="nested-json", as_of=AS_OF)
    assert burnt.summary["findings"] == plain.summary["findings"] and burnt.summary["findings"]["CARD_COUNT"] == 0
    assert _found(burnt).equals(_found(plain))
    rows = [json.loads(line) for line in (DATA / "layouts" / "burn_records.jsonl").read_text().splitlines()]
    log = ingest.scan(DATA / "layouts" / "burn_records.jsonl", "round_log", ingest.load_mapping("burn-records"))
    burns = log.frame.filter(pl.col("burn_cards").is_not_null()).select("round_id", "burn_cards").collect().rows()
    assert burns == [("T01-S0002-C001", "AH AD"), ("T01-S0003-C001", "AS 4S")]
    assert rows[0]["burn"] == {"burnCard": {"suit": "heart", "value": "A"}, "burnCards": [{"suit": "diamond", "value": "A"}]}
    rows[0]["burn"]["burnCards"] = [{"suit": "heart", "value": "5"}] * 9
    (tmp_path / "burnt.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    over = baccarat_audit.audit(tmp_path / "burnt.jsonl", mapping="burn-records", as_of=AS_OF)
    counted = over.findings.filter(pl.col("check") == "CARD_COUNT")
    assert counted.height > 0 and set(counted["shoe_id"]) == {"T01-S0002"} and "5H" in counted["detail"][0]


def test_burn_cards_as_text_a_card_a_field_or_a_json_array_are_read_and_misread_fields_named(tmp_path):
    header = "round_id,turned,burnt,player_card_1,banker_card_1,player_card_2,banker_card_2,player_card_3,banker_card_3"
    (tmp_path / "log.csv").write_text(f'{header}\nR1,9S,"[""2C"", ""KH""]",KS,9H,5D,QC,,\nR2,,,KS,9H,5D,QC,,\n'
                                      'R3,4D,[],KS,9H,5D,QC,,\n')
    (tmp_path / "m.json").write_text(json.dumps({"cards": {"burn": {"field": ["turned", "burnt"]}}}))
    log = ingest.scan(tmp_path / "log.csv", "round_log", ingest.load_mapping(tmp_path / "m.json"))
    assert log.frame.select("burn_cards").collect()["burn_cards"].to_list() == ["9S 2C KH", None, "4D"]
    for mapping, said in (({"cards": {"burn": {"field": "burn"}}}, "reads burn cards from field burn, which the log "
                           "does not have (found: round_id, turned, burnt"),
                          ({"cards": {"burn": {"field": "turned"}}, "columns": {"burnt": "burn_cards"}},
                           "columns burnt and cards burn both fill burn_cards")):
        (tmp_path / "m.json").write_text(json.dumps(mapping))
        done = cli("audit", tmp_path / "log.csv", "--mapping", tmp_path / "m.json", "--out", tmp_path / "out")
        assert done.returncode == 2 and said in done.stderr, done.stderr


def test_a_header_given_for_a_log_that_is_not_csv_is_exit_2(tmp_path):
    done = cli("audit", DATA / "layouts" / "nested_rounds.jsonl", "--mapping", "headerless", "--out", tmp_path / "o")
    assert done.returncode == 2
    assert done.stderr.endswith("the mapping gives a header, which only a CSV log can lack; this is a json file\n")


def test_json_lines_in_a_folder_compressed_or_not_are_read_as_one_log_numbered_by_line(tmp_path, as_rounds_csv):
    records = _nested_records()
    folder = tmp_path / "logs"
    folder.mkdir()
    _jsonl(folder / "a.jsonl", records[:80])
    (folder / "b.jsonl.gz").write_bytes(gzip.compress("".join(json.dumps(r) + "\n" for r in records[80:]).encode()))
    (folder / "mapping.json").write_text("{}")  # a .json file in a folder is not taken for a log
    done = baccarat_audit.audit(folder, mapping="nested-json", as_of=AS_OF)
    assert done.summary["rows_read"] == 157
    assert done.summary["findings"] == as_rounds_csv.summary["findings"]
    late = done.findings.filter(pl.col("check") == "DUPLICATE_ROUND").select("source_file", "source_row").rows()
    assert late == [(str(folder / "b.jsonl.gz"), 15), (str(folder / "b.jsonl.gz"), 16)]
    assert [entry["path"] for entry in done.summary["inputs_not_read"]] == [str(folder / "mapping.json")]


def test_a_constant_for_a_column_the_log_has_is_exit_2_naming_both(tmp_path):
    mapping = tmp_path / "m.json"
    mapping.write_text(json.dumps({"constants": {"table_id": "T9"}}))
    done = cli("audit", DATA / "rounds.csv", "--mapping", mapping, "--out", tmp_path / "out")
    assert done.returncode == 2
    assert "the mapping gives table_id the constant 'T9', but the log has a table_id column already" in done.stderr


def test_a_card_field_of_text_that_is_no_json_array_quarantines_its_rows_naming_the_field(tmp_path):
    """Text without a separator is read as a JSON array of cards; a row whose text is not one is
    quarantined, the reason saying what a separator is for."""
    mapping = tmp_path / "m.json"
    mapping.write_text(json.dumps({"columns": {"round": "round_id"},
                                   "cards": {"player": {"field": "P1", "separator": " "}, "banker": {"field": "B1"}}}))
    done = cli("audit", DATA / "provider_b_rounds.csv", "--mapping", mapping, "--out", tmp_path / "out")
    assert done.returncode == 1, done.stderr
    reasons = pl.read_parquet(tmp_path / "out" / "quarantine.parquet")["reason"]
    assert reasons.len() == 300 and reasons.str.contains(
        "B1 'C_K' is not a JSON array of cards (a mapping's separator splits other text)", literal=True).any()


def test_a_card_list_over_card_columns_the_log_has_is_exit_2_naming_both(tmp_path):
    mapping = tmp_path / "m.json"
    mapping.write_text(json.dumps({"cards": {"player": {"field": "dealer_id", "separator": " "}}}))
    log = pl.read_csv(DATA / "rounds.csv", infer_schema=False).with_columns(dealer_id=pl.lit("KS 3D"))
    log.write_csv(tmp_path / "r.csv")
    done = cli("audit", tmp_path / "r.csv", "--mapping", mapping, "--out", tmp_path / "out")
    assert done.returncode == 2
    assert "spreads dealer_id over the player's cards, but the log has a player_card_1 column already" in done.stderr


def test_a_log_without_round_ids_is_audited_by_ids_derived_from_its_columns_and_says_so(tmp_path, as_rounds_csv):
    done = baccarat_audit.audit(DATA / "layouts" / "no_ids.csv", mapping="no-ids", as_of=AS_OF, out_dir=tmp_path / "o")
    found = _found(done)
    assert found["round_id"].to_list() == [f"T01/{shoe}/{hand}" for shoe, hand in found.select("shoe_id", "hand_no").rows()]
    # The same findings but DUPLICATE_ROUND: the sample's repeated round_id was on another hand.
    recorded = _found(as_rounds_csv).filter(pl.col("check") != "DUPLICATE_ROUND")
    assert found.drop("round_id").equals(recorded.drop("round_id"))
    derived = "derived from table_id, shoe_id, hand_no"
    assert done.summary["inputs"][0]["mapping"]["round_id"] == derived
    assert pq.read_metadata(tmp_path / "o" / "findings.parquet").metadata[b"round_id"] == derived.encode()
    assert f"; round_id {derived}" in (tmp_path / "o" / "report.html").read_text()


def test_a_round_id_derived_from_file_and_row_tells_files_apart(tmp_path):
    rows = pl.read_csv(DATA / "layouts" / "no_ids.csv", infer_schema=False)
    for night in ("a", "b"):
        (tmp_path / "logs" / night).mkdir(parents=True)
        rows.write_csv(tmp_path / "logs" / night / "night.csv")  # one file copied: no round twice in it
    mapping = tmp_path / "m.json"
    mapping.write_text(json.dumps({"round_id": ["source_file", "source_row"]}))
    done = baccarat_audit.audit(tmp_path / "logs", mapping=mapping, as_of=AS_OF)
    assert done.summary["findings"]["DUPLICATE_ROUND"] == 0 and done.summary["rows_read"] == 2 * rows.height
    drawn = done.findings.filter(pl.col("check") == "BANKER_DRAW").select("round_id").to_series().to_list()
    assert drawn == [f"{night}/night.csv/56" for night in ("a", "b")]  # the path below the folder named


def test_a_derived_round_id_over_a_log_that_has_one_is_exit_2(tmp_path):
    done = cli("audit", DATA / "rounds.csv", "--mapping", "no-ids", "--out", tmp_path / "out")
    assert done.returncode == 2
    assert "the mapping derives round_id, but the log has a round_id column already" in done.stderr


@pytest.fixture(scope="module")
def sample_bets(tmp_path_factory) -> Path:
    """The bets of data/bets.csv on the samples' rounds."""
    ids = pl.read_csv(DATA / "layouts" / "points.csv", infer_schema=False)["round_id"].implode()
    path = tmp_path_factory.mktemp("bets") / "bets.csv"
    pl.read_csv(DATA / "bets.csv", infer_schema=False).filter(pl.col("round_id").is_in(ids)).write_csv(path)
    return path


def test_a_log_of_card_points_is_audited_for_draws_totals_and_results_and_judges_nothing_by_rank(tmp_path, sample_bets):
    rounds = pl.read_csv(DATA / "rounds.csv", infer_schema=False).filter(pl.col("shoe_id").is_in(SHOES))
    rounds.write_csv(tmp_path / "rounds.csv")
    as_cards = baccarat_audit.audit(tmp_path / "rounds.csv", bets=sample_bets, as_of=AS_OF)
    done = baccarat_audit.audit(DATA / "layouts" / "points.csv", mapping="points", bets=sample_bets, as_of=AS_OF,
                                out_dir=tmp_path / "out")
    rounds_found = ["source_row", "round_id", "check", "expected"]  # recorded and detail name the cards as written
    assert (done.findings.filter(pl.col("bet_id").is_null()).select(rounds_found)
            .equals(as_cards.findings.filter(pl.col("bet_id").is_null()).select(rounds_found)))
    assert done.summary["rows_quarantined"] == 0
    assert done.summary["checks"]["CARD_COUNT"] == "skipped: cards recorded as points only"
    assert done.summary["fairness"]["skipped"] == {test: "skipped: cards recorded as points only"
                                                   for test in ("player_pairs", "banker_pairs")}
    assert not {"player_pairs", "banker_pairs"} & set(done.fairness["test"])
    assert {"player_pairs", "banker_pairs"} <= set(as_cards.fairness["test"])
    # A pair bet is quarantined, never settled on a guessed rank; every other bet is settled as on the cards.
    pairs = pl.col("bet_type").is_in(["PLAYER_PAIR", "BANKER_PAIR"])
    quarantined = done.bets_quarantine
    assert quarantined.filter(pairs).height == 86  # every pair bet
    assert all(reason.endswith("is decided by the cards' ranks: cards recorded as points only")
               for reason in quarantined.filter(pairs)["reason"])
    assert quarantined.filter(~pairs).equals(as_cards.bets_quarantine.filter(~pairs))  # the bets on a doubled round
    settled = ["bet_id", "check", "expected", "recorded"]
    assert (done.findings.filter(pl.col("bet_id").is_not_null()).select(settled)
            .equals(as_cards.findings.filter(pl.col("bet_id").is_not_null() & ~pl.col("bet_id").is_in(
                quarantined["bet_id"].implode())).select(settled)))
    report = (tmp_path / "out" / "report.html").read_text()
    assert "The player pairs test is skipped: cards recorded as points only." in report
    assert "CARD_COUNT (cards recorded as points only)" in report


def test_explain_of_a_round_of_card_points_settles_no_pair_bet(sample_bets):
    explained, = baccarat_audit.explain(DATA / "layouts" / "points.csv", "T01-S0002-C008", mapping="points",
                                        bets=sample_bets, as_of=AS_OF)
    # Two cards of no points: a pair of kings, or a ten and a queen.
    assert [explained["cards"][f"player_{i}"] for i in (1, 2)] == ["0", "0"]
    assert explained["facts"]["player_pair"] is None
    by_type = {bet["bet_type"]: bet for bet in explained["bets"]}
    assert by_type["BANKER_PAIR"]["agrees"] is None
    assert by_type["BANKER_PAIR"]["steps"] == ["Cannot be settled: bet type BANKER_PAIR is decided by the cards' "
                                               "ranks: cards recorded as points only."]
    assert all(bet["agrees"] is not None for t, bet in by_type.items() if t not in ("PLAYER_PAIR", "BANKER_PAIR"))
    schema = json.loads((DATA.parent / "schemas" / "explain.schema.json").read_text())
    jsonschema.validate([explained], schema, cls=jsonschema.Draft202012Validator)  # as `explain --json` prints it


def test_a_card_event_log_is_turned_into_rounds_and_audited_as_them(as_rounds_csv):
    done = baccarat_audit.audit(DATA / "layouts" / "card_events.csv", mapping="card-events", as_of=AS_OF)
    events = pl.read_csv(DATA / "layouts" / "card_events.csv", infer_schema=False).with_row_index("row", offset=1)
    first_rows = dict(events.group_by("game").agg(pl.col("row").min().cast(pl.UInt32)).iter_rows())
    same = ["round_id", "check", "expected", "recorded", "detail"]
    found = done.findings.filter(pl.col("check").is_in(["BANKER_DRAW", "TIMESTAMP"]))
    assert found.select(same).equals(as_rounds_csv.findings.filter(pl.col("check").is_in(["BANKER_DRAW", "TIMESTAMP"]))
                                     .select(same))
    assert found["source_row"].to_list() == [first_rows[r] for r in found["round_id"]]  # where its first event is
    # The round_id recorded on two rounds: their events make one round, each position dealt twice.
    doubled, = done.quarantine.select("source_row", "round_id", "reason").rows()
    assert doubled[:2] == (first_rows["T01-S0003-C017"], "T01-S0003-C017")
    assert doubled[2].startswith("events at rows 481, 487 each deal P1; events at rows 482, 488 each deal B1")
    assert done.summary["rows_read"] == 156 and done.summary["findings"]["CARD_COUNT"] == 0  # the burn card counted
    burned, = baccarat_audit.explain(DATA / "layouts" / "card_events.csv", "T01-S0002-C001", mapping="card-events",
                                     as_of=AS_OF)
    assert burned["source_row"] == 1


def test_a_round_whose_events_are_missing_repeated_or_out_of_order_is_quarantined_naming_its_event_rows(tmp_path):
    events = pl.read_csv(DATA / "layouts" / "card_events.csv", infer_schema=False).head(20).with_row_index("row", offset=1)
    at = pl.col("row")
    events = events.with_columns(
        position=pl.when(at == 3).then(pl.lit("Q"))  # C001: B1 at a position that is none
        .when(at == 9).then(pl.lit("BURN"))  # C002: B2 not recorded (a burn card in its place)
        .when(at == 14).then(pl.lit("P1"))  # C003: P2 recorded as a second P1
        .otherwise(pl.col("position")),
        seq=pl.when(at == 17).then(pl.lit("9")).otherwise(pl.col("seq")))  # C004: P1 numbered last
    events.drop("row").write_csv(tmp_path / "events.csv")
    done = baccarat_audit.audit(tmp_path / "events.csv", mapping="card-events", as_of=AS_OF)
    assert dict(done.quarantine.select("round_id", "reason").iter_rows()) == {
        "T01-S0002-C001": "events at row 3 ('Q') name no position (P1, B1, P2, B2, P3, B3 or BURN); no event deals "
                          "B1 (the round's events: rows 1, 2, 3, 4, 5); banker_card_1 is empty",
        "T01-S0002-C002": "no event deals B2 (the round's events: rows 6, 7, 8, 9, 10, 11); banker_card_2 is empty",
        "T01-S0002-C003": "events at rows 12, 14 each deal P1; no event deals P2 (the round's events: rows 12, 13, "
                          "14, 15, 16); player_card_2 is empty",
        "T01-S0002-C004": "events out of deal order: rows 18 (B1), 19 (P2), 20 (B2), 17 (P1)",
    }
    assert done.summary["rows_read"] == 4 and done.summary["rows_quarantined"] == 4


def test_a_value_table_of_thousands_of_entries_is_looked_up_in_bounded_memory(tmp_path):
    """3,000 spellings of outcomes, a card's "x" for not dealt: each value translated as a short table's
    is, in the memory of any audit (a chain of 3,000 whens took 3.8 GB and half a minute on 200 rows)."""
    spellings = {f"outcome {i}": ("BANKER", "PLAYER", "TIE")[i % 3] for i in range(3000)}
    (tmp_path / "many.json").write_text(json.dumps({"name": "many", "values": {
        "outcome": spellings, "*_card_3": {"x": None}}}))
    rounds = pl.read_csv(DATA / "rounds.csv", infer_schema=False).head(200)
    written = {"BANKER": "outcome 0", "PLAYER": "outcome 1", "TIE": "outcome 2"}
    rounds.with_columns(pl.col("outcome").replace_strict(written),
                        pl.col("player_card_3", "banker_card_3").fill_null("x")).write_csv(tmp_path / "many.csv")
    done, peak = cli_peak("audit", tmp_path / "many.csv", "--mapping", tmp_path / "many.json",
                          "--out", tmp_path / "out", "--no-contract")
    assert done.returncode in (0, 1), done.stderr
    findings = pl.read_parquet(tmp_path / "out" / "findings.parquet")
    assert "OUTCOME" not in findings["check"].to_list()
    assert pl.read_parquet(tmp_path / "out" / "quarantine.parquet").height == 0
    assert peak < 1024, peak


def test_a_constant_over_a_column_hive_folders_fill_is_refused_naming_both(tmp_path):
    """`constants: {table_id: X}` over logs/table_id=A/, table_id=B/: the tables would be merged into one."""
    rounds = pl.read_csv(DATA / "rounds.csv", infer_schema=False).drop("table_id")
    for table in ("A", "B"):
        (tmp_path / "logs" / f"table_id={table}").mkdir(parents=True)
        rounds.head(20).write_csv(tmp_path / "logs" / f"table_id={table}" / "night.csv")
    (tmp_path / "one.json").write_text(json.dumps({"name": "one", "constants": {"table_id": "X"}}))
    done = cli("audit", tmp_path / "logs", "--mapping", tmp_path / "one.json", "--out", tmp_path / "out")
    assert done.returncode == 2 and done.stderr == (
        f"error: {tmp_path / 'logs' / 'table_id=A' / 'night.csv'}: its folder table_id=A fills table_id, and the "
        "mapping's constants fill it too ('X'); one of them would be lost\n")


def test_a_round_id_derived_of_its_file_is_the_same_however_the_path_is_typed(tmp_path):
    """round_id from source_file and source_row: the file's path below the folder named (or its name,
    when the log is one file), whatever the working folder and the spelling of the path."""
    night = tmp_path / "raw" / "night"
    night.mkdir(parents=True)
    from baccarat_audit import generate
    dealt = generate.write(generate.generate(60, seed=5, fault_rate=0.3), tmp_path / "dealt")
    rounds = pl.read_csv(dealt["csv"], infer_schema=False).drop("round_id")
    rounds.head(30).write_csv(night / "t1.csv")
    rounds.slice(30, 30).write_csv(night / "t2.csv")
    (tmp_path / "by_place.json").write_text(json.dumps({"name": "by-place", "round_id": ["source_file", "source_row"]}))
    mapping = str(tmp_path / "by_place.json")
    ids = {}
    for cwd, log in ((tmp_path, "raw/night"), (tmp_path / "raw", "./night/"), (night, str(night)),
                     (tmp_path, "raw/night/*.csv"), (night, "t1.csv"), (tmp_path, "raw/night/t1.csv")):
        out = tmp_path / "out" / str(len(ids))
        done = cli("audit", log, "--mapping", mapping, "--out", out, "--no-contract", "--json", cwd=cwd)
        assert done.returncode in (0, 1), done.stderr
        ids[(str(cwd), log)] = pl.read_parquet(out / "findings.parquet")["round_id"].to_list()
    folders, files = list(ids.values())[:4], list(ids.values())[4:]
    assert all(found == folders[0] for found in folders) and folders[0]
    assert {i.split("/")[0] for i in folders[0]} <= {"t1.csv", "t2.csv"}
    assert files[0] == files[1] and all(i.startswith("t1.csv/") for i in files[0])


def test_a_card_field_the_log_lacks_is_named_beside_the_fields_it_has(tmp_path):
    spec = json.loads((ROOT_SCHEMAS / "card-lists.json").read_text())
    spec["cards"]["player"]["field"] = "playerCards"
    (tmp_path / "typo.json").write_text(json.dumps(spec))
    done = cli("audit", DATA / "layouts" / "card_lists.json", "--mapping", tmp_path / "typo.json", "--out", tmp_path / "o")
    assert done.returncode == 2 and done.stderr.startswith(
        f"error: {DATA / 'layouts' / 'card_lists.json'}: the mapping reads the player's cards from field playerCards, "
        "which the log does not have (found: round, table, shoe, hand, dealt, player, banker,"), done.stderr


def test_explain_of_a_part_of_a_derived_round_id_hints_at_the_derived_form():
    done = cli("explain", DATA / "layouts" / "no_ids.csv", "13", "--mapping", "no-ids")
    assert done.returncode == 2 and done.stderr == (
        f"error: {DATA / 'layouts' / 'no_ids.csv'}: no row has round_id '13'; this log's round_ids are derived "
        "from table_id, shoe_id, hand_no, joined by '/', such as 'T01/T01-S0002/1'\n")


def test_payouts_written_net_are_settled_as_the_same_bets_written_gross(tmp_path):
    """data/layouts/bets_net.csv: the bets of the layouts' rounds (data/bets.csv) with each payout
    written net, read with the net-paid mapping: settled as the gross log is, bet for bet."""
    rounds = DATA / "layouts" / "card_text.csv"
    gross = pl.read_csv(DATA / "bets.csv", infer_schema=False).filter(pl.col("round_id").str.contains("^T01-S000[23]-"))
    gross.write_csv(tmp_path / "gross.csv")
    net = baccarat_audit.audit(rounds, mapping="card-text", bets=DATA / "layouts" / "bets_net.csv",
                               bets_mapping="net-paid", as_of=AS_OF)
    written = baccarat_audit.audit(rounds, mapping="card-text", bets=tmp_path / "gross.csv", as_of=AS_OF)
    keys = ("bets_read", "bets_settled", "bets_quarantined", "bets_flagged", "money", "findings")
    assert {k: net.summary[k] for k in keys} == {k: written.summary[k] for k in keys}
    assert net.summary["bets_read"] == gross.height and net.summary["findings"]["SETTLEMENT"] > 0
    settled = ["round_id", "bet_id", "check", "expected"]
    assert net.findings.select(settled).equals(written.findings.select(settled))
    unmapped = baccarat_audit.audit(rounds, mapping="card-text", bets=DATA / "layouts" / "bets_net.csv", as_of=AS_OF)
    assert unmapped.summary["bets_quarantined"] > gross.height // 3  # every lost bet "negative"
    (tmp_path / "net_rounds.json").write_text(json.dumps({"name": "wrong", "paid": "net"}))
    done = cli("audit", rounds, "--mapping", tmp_path / "net_rounds.json", "--out", tmp_path / "o")
    assert done.returncode == 2 and "paid: net), but maps a round log; give it as the bet log's mapping" in done.stderr
