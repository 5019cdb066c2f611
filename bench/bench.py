"""Benchmark: the audit against its floor (a bare read of the log) and its peers (a DuckDB query of the
per-round checks and DUPLICATE_ROUND, and a row-by-row Python loop), on generated shoe-faithful logs
with 1% faults, in one run: the audit's core (per-round checks and duplicates), the default audit
(contract, report, every check), the audit without its contract, the nightly job with the bets, and
the same log as CSV against a bare read of that CSV. It prints each ratio against the issue's targets.
With --more, the steps between the floor and the audit, a narrowed audit, a log whose every round is
found and the log kept as a year of nightly files.

Every figure is measured in this one run, each task timed whole as a user waits for it: a fresh
process, its interpreter's start and imports included, the floor the same way (`command`: the bare
reads import polars alone, the DuckDB peer duckdb alone, the audits run as the command or the Python
API runs them), its peak resident memory its own; the bare reads and the bare replay are each the
fastest of three such runs (see `measure`). The row-by-row loop runs on the smallest log and is scaled by rounds to the others.
With --probe DIR, the probe kept outside the project (a measuring instrument: one pass over compact
codes, `DIR/proto_stream.py`) is timed the same way, and the default audit held to 1.5 times its time.
Usage:
python bench/bench.py [--rounds 1000000 10000000] [--flat-rounds 30000000] [--dir bench/logs] [--more]
                      [--probe ../shared/probe]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import baccarat_audit  # noqa: F401  before polars, which reads the allocator setting it makes (as the CLI does)
import polars as pl

from baccarat_audit.engines import run
from baccarat_audit.rules import coup
from baccarat_audit import generate, tuning
from baccarat_audit.inputs import ingest
from baccarat_audit.checks import integrity
from baccarat_audit.checks.round_checks import PER_ROUND
from baccarat_audit.rules.replay import replay
from baccarat_audit.inputs.selection import Selection

BASE_ROUNDS = 100_000  # dealt by the generator, then repeated with fresh round_ids up to the size wanted
#: An investigator's question: one table on one night (of the nine nights the generated rounds span).
#: The first table: a log is its base cut to size, table after table, so a small one holds only T01.
ONE_NIGHT = Selection(tables=("T01",), since=datetime(2026, 11, 4, tzinfo=UTC),
                             until=datetime(2026, 11, 4, 23, 59, 59, tzinfo=UTC))


FAULT_RATE = 0.01  # of the generated rounds and bets, each fault one the audit must find


def make_log(rounds: int, folder: Path) -> tuple[Path, Path]:
    """A Parquet round log of `rounds` shoe-faithful rounds (1% faulted) and its bets (1 to 3 a round)."""
    paths = folder / f"rounds_{rounds}_with_bets.parquet", folder / f"bets_{rounds}.parquet"
    if all(path.exists() for path in paths):
        return paths
    folder.mkdir(parents=True, exist_ok=True)
    base = folder / f"base_{BASE_ROUNDS}_with_bets_{FAULT_RATE}"
    if not (base / "bets.parquet").exists():
        generate.write(generate.generate(BASE_ROUNDS, seed=7, fault_rate=FAULT_RATE, tables=8, with_bets=True), base)
    copies = -(-rounds // BASE_ROUNDS)
    # The last copy is cut to size, its bets with it: the first rounds of the base and the bets on them.
    last = pl.scan_parquet(base / "rounds.parquet").head(rounds - (copies - 1) * BASE_ROUNDS).collect()["round_id"]
    suffixed = {"round_id": pl.col("round_id"), "shoe_id": pl.col("shoe_id"), "bet_id": pl.col("bet_id")}
    for name, path in zip(("rounds", "bets"), paths):
        one = pl.scan_parquet(base / f"{name}.parquet")
        wanted = [c for c in suffixed if c in one.collect_schema()]
        copy = [one if i < copies - 1 else one.filter(pl.col("round_id").is_in(last.implode())) for i in range(copies)]
        pl.concat([frame.with_columns(suffixed[c] + f"-{i}" for c in wanted)
                   for i, frame in enumerate(copy)]).sink_parquet(path)
    return paths


def as_csv(path: Path) -> Path:
    """The same rounds as a CSV log (its sibling file): what a table system exports as text."""
    csv = path.with_suffix(".csv")
    if not csv.exists():
        pl.scan_parquet(path).sink_csv(csv)
    return csv


def every_round_found(path: Path) -> Path:
    """The log as a table would write it that logs one hand_no for all its hands: every round but a
    shoe's first is a SHOE_SEQUENCE finding, so findings grow with the log (its sibling file)."""
    found = path.with_name(path.stem + "_one_hand_no.parquet")
    if not found.exists():
        pl.scan_parquet(path).with_columns(hand_no=pl.lit("1")).sink_parquet(found)
    return found


NIGHTS = 365  # nightly files per table: a year


def nightly_files(path: Path) -> Path:
    """The log as operators keep it: each table's rounds cut in NIGHTS files in Hive folders
    (table_id=T/date=D/rounds.parquet, the files without the table_id the folder gives), read by the
    audit as one log (its sibling folder; 2,920 files of the 8 tables)."""
    folder = path.with_name(path.stem + "_nightly")
    if folder.exists():
        return folder
    writing = folder.with_name(folder.name + ".writing")
    log = pl.scan_parquet(path)
    for table in log.select(pl.col("table_id").unique(maintain_order=True)).collect()["table_id"]:
        rows = log.filter(pl.col("table_id") == table).collect()  # a table at a time, so that the bench never holds the whole log
        per_night = -(-rows.height // NIGHTS)
        for night in range(NIGHTS):
            day = datetime(2025, 11, 1) + timedelta(days=night)
            night_folder = writing / f"table_id={table}" / f"date={day:%Y-%m-%d}"
            night_folder.mkdir(parents=True)
            rows.slice(night * per_night, per_night).drop("table_id").write_parquet(night_folder / "rounds.parquet")
    writing.rename(folder)
    return folder


def row_by_row(path: Path) -> int:
    """What an analyst would write first: read the rows, parse each card, replay each coup in Python and
    compare its draws, totals and result with the log's. Returns the rounds it flags: those the audit's
    per-round checks flag (rows with an unreadable card are skipped, as the audit quarantines them)."""
    from baccarat_audit.rules import cards

    spellings = ingest.outcome_spellings()
    columns = [*integrity.DEAL_ORDER, "player_total", "banker_total", "outcome"]
    flagged = 0
    for *dealt, player_total, banker_total, outcome in pl.read_parquet(path, columns=columns).iter_rows():
        codes = [cards.parse(card) for card in dealt]
        if None in codes[:4] or any(card is not None and code is None for card, code in zip(dealt, codes)):
            continue
        replay = coup.replay(*(None if code is None else cards.value_of(code) for code in codes))
        flagged += (replay.player_must_draw != replay.player_drew or replay.banker_must_draw != replay.banker_drew
                    or (player_total is not None and int(player_total) != replay.player_final)
                    or (banker_total is not None and int(banker_total) != replay.banker_final)
                    or (outcome is not None and spellings.get(outcome.strip().upper()) != replay.result))
    return flagged


def bare_replay(path: Path) -> int:
    """The least that any audit replaying every round must do, as one polars query: read the cards,
    totals and result, look each card up, replay, compare, count. Nothing trimmed, quarantined,
    written or explained. Its time against the bare read bounds what any such audit can reach here.
    Returns the rounds it flags, which `row_by_row` flags too (rows with an unreadable card are skipped)."""
    from baccarat_audit.rules import cards

    codes = {c: cards.parse_expr(pl.col(c)) for c in integrity.DEAL_ORDER}
    readable = pl.all_horizontal(
        *(codes[c].is_not_null() for c in integrity.DEAL_ORDER[:4]),
        *(pl.col(c).is_null() | codes[c].is_not_null() for c in integrity.DEAL_ORDER[4:]))
    values = {c.replace("_card", ""): cards.value_expr(code) for c, code in codes.items()}
    log = pl.scan_parquet(path).select(*integrity.DEAL_ORDER, "player_total", "banker_total", "outcome")
    flagged = pl.any_horizontal(check.flag for check in PER_ROUND)  # the audit's own flags, never null
    replayed = replay(log.filter(readable).with_columns(**values))
    return replayed.select(flagged.sum()).collect().item()


#: The peer: the per-round checks and DUPLICATE_ROUND as one SQL query, as a compliance engineer would
#: write it in DuckDB, straight from the log; the rounds it flags are written to a Parquet file.
PEER_SQL = """
CREATE MACRO card_value(card) AS CASE left(card, length(card) - 1)
    WHEN 'A' THEN 1 WHEN '2' THEN 2 WHEN '3' THEN 3 WHEN '4' THEN 4 WHEN '5' THEN 5 WHEN '6' THEN 6
    WHEN '7' THEN 7 WHEN '8' THEN 8 WHEN '9' THEN 9 WHEN '10' THEN 0 WHEN 'J' THEN 0 WHEN 'Q' THEN 0
    WHEN 'K' THEN 0 END;
CREATE MACRO readable(card) AS card IN ({cards});
COPY (
  WITH rounds AS (
    SELECT file_row_number + 1 AS source_row, * FROM read_parquet('{log}', file_row_number = true)
  ), repeated AS (
    SELECT round_id, count(*) AS copies FROM rounds GROUP BY round_id HAVING count(*) > 1
  ), valued AS (
    SELECT *, card_value(player_card_1) AS p1, card_value(player_card_2) AS p2, card_value(player_card_3) AS p3,
           card_value(banker_card_1) AS b1, card_value(banker_card_2) AS b2, card_value(banker_card_3) AS b3
    FROM rounds LEFT JOIN repeated USING (round_id)
    WHERE round_id IS NOT NULL AND readable(player_card_1) AND readable(player_card_2)
      AND readable(banker_card_1) AND readable(banker_card_2)
      AND (player_card_3 IS NULL OR readable(player_card_3)) AND (banker_card_3 IS NULL OR readable(banker_card_3))
  ), replayed AS (
    SELECT *, (p1 + p2) % 10 AS po, (b1 + b2) % 10 AS bo,
           (p1 + p2 + coalesce(p3, 0)) % 10 AS pf, (b1 + b2 + coalesce(b3, 0)) % 10 AS bf
    FROM valued
  ), judged AS (
    SELECT *, (po >= 8 OR bo >= 8) AS natural,
           NOT (po >= 8 OR bo >= 8) AND po <= 5 AS player_must,
           NOT (po >= 8 OR bo >= 8) AND CASE WHEN p3 IS NULL THEN bo <= 5
               ELSE bo <= 2 OR (bo = 3 AND p3 <> 8) OR (bo = 4 AND p3 BETWEEN 2 AND 7)
                    OR (bo = 5 AND p3 BETWEEN 4 AND 7) OR (bo = 6 AND p3 IN (6, 7)) END AS banker_must,
           CASE WHEN pf > bf THEN 'PLAYER' WHEN bf > pf THEN 'BANKER' ELSE 'TIE' END AS result,
           CASE upper(outcome) WHEN 'P' THEN 'PLAYER' WHEN 'B' THEN 'BANKER' WHEN 'T' THEN 'TIE'
               ELSE upper(outcome) END AS recorded
    FROM replayed
  )
  SELECT source_row, round_id,
         player_must <> (p3 IS NOT NULL) AS player_draw, banker_must <> (b3 IS NOT NULL) AS banker_draw,
         coalesce(TRY_CAST(player_total AS INTEGER) IS DISTINCT FROM pf AND player_total IS NOT NULL, false)
           AS player_total,
         coalesce(TRY_CAST(banker_total AS INTEGER) IS DISTINCT FROM bf AND banker_total IS NOT NULL, false)
           AS banker_total,
         outcome IS NOT NULL AND recorded IS DISTINCT FROM result AS outcome, coalesce(copies, 1) > 1 AS duplicate_round
  FROM judged
  WHERE player_must <> (p3 IS NOT NULL) OR banker_must <> (b3 IS NOT NULL)
     OR coalesce(TRY_CAST(player_total AS INTEGER) IS DISTINCT FROM pf AND player_total IS NOT NULL, false)
     OR coalesce(TRY_CAST(banker_total AS INTEGER) IS DISTINCT FROM bf AND banker_total IS NOT NULL, false)
     OR (outcome IS NOT NULL AND recorded IS DISTINCT FROM result) OR copies > 1
) TO '{out}' (FORMAT parquet);
"""


#: The card spellings the peer's query accepts, as SQL text.
SPELLINGS = ", ".join(f"'{rank}{suit}'" for rank in ("A", *map(str, range(2, 11)), "J", "Q", "K") for suit in "HDCS")


def duckdb_peer(path: Path, out: Path) -> int:
    """`PEER_SQL` run by DuckDB on the log, its flagged rounds written to `out`; returns the rounds it
    flags for the per-round checks (what `row_by_row` counts)."""
    import duckdb

    out.parent.mkdir(parents=True, exist_ok=True)
    connection = duckdb.connect()
    connection.execute("SET enable_progress_bar = false")
    connection.execute(PEER_SQL.format(log=path, out=out, cards=SPELLINGS))
    flags = ["player_draw", "banker_draw", "player_total", "banker_total", "outcome"]
    return pl.scan_parquet(out).filter(pl.any_horizontal(flags)).select(pl.len()).collect().item()


def per_round_flagged(out: Path) -> int:
    """The rounds an audit's per-round checks flagged (what `row_by_row` counts), from its findings."""
    return (pl.scan_parquet(out / "findings.parquet").filter(pl.col("check").is_in([c.code for c in PER_ROUND]))
            .select("source_file", "source_row").unique().select(pl.len()).collect().item())


def one(task: str, path: Path, out: Path) -> dict:
    """Run one task that no command runs (`command`: the steps between the floor and the audit, the
    bench's own replays) in this process; what it flags, for the bench to compare."""
    # The trimmed read is a whole-log read held in memory, which the audit never makes: read as polars
    # ships. The steps the audit takes in pieces read as the audit does.
    flagged = None
    if task == "read-trimmed":  # the log as every check reads it: text trimmed, empty text null
        ingest.scan(path, "round_log").frame.collect()
    elif task == "replayed":  # each piece parsed and replayed in memory, as the one read does, nothing else
        with ingest.one_row_group_ahead():
            piece_rows = tuning.Tuning().piece_rows
            for i, piece in enumerate(ingest.scan(path, "round_log").pieces(piece_rows)):
                run.prepared(piece.with_row_index("log_row", offset=i * piece_rows), "standard").collect()
    elif task == "every-round-found":  # findings as many as rounds: does the peak grow with them?
        run.audit(every_round_found(path), out, run.Options(validate=False))
    elif task == "nightly-files":  # the same rounds in a file per table per night
        run.audit(nightly_files(path), out, run.Options(validate=False))
    elif task == "one-night":
        run.audit(path, out, run.Options(validate=False, selection=ONE_NIGHT))
    elif task == "bare-replay":
        flagged = bare_replay(path)
    elif task == "row-by-row":
        flagged = row_by_row(path)
    return {"task": task, "flagged": flagged}


FLOOR_RUNS = 3  # the floors (the bare read, and the bare replay) are each the fastest of this many runs
FLOORS = ("read", "read-csv", "bare-replay")


#: Reads with polars alone, as a user's script would: the Parquet log's contract columns, or a CSV as text.
READ = "import sys, polars as pl; scan = pl.scan_parquet(sys.argv[1]); scan.select(sys.argv[2:]).collect()"
READ_CSV = "import sys, polars as pl; pl.read_csv(sys.argv[1], infer_schema=False)"
#: The peer with duckdb alone: `PEER_SQL` on the log, its rows written to a Parquet file.
PEER = ("import sys, duckdb; c = duckdb.connect(); c.execute('SET enable_progress_bar = false'); "
        "c.execute(sys.argv[1])")
#: The audit's core by its Python API (no command runs it): no contract, no checks across rounds.
CORE = ("import sys; from pathlib import Path; from baccarat_audit.engines import run; "
        "run.audit(Path(sys.argv[1]), Path(sys.argv[2]), run.Options(validate=False, across_rounds=False))")
#: Runs a command and writes its wall time and peak memory (`wait4`, from a process this small: Linux
#: carries the peak of the process that forks across exec) to the file named first.
LAUNCH = ("import json, os, sys, time; start = time.perf_counter(); pid = os.fork()\n"
          "if pid == 0: os.execv(sys.argv[2], sys.argv[2:])\n"
          "_, status, usage = os.wait4(pid, 0)\n"
          "open(sys.argv[1], 'w').write(json.dumps({'seconds': time.perf_counter() - start, "
          "'peak_mib': usage.ru_maxrss / 1024, 'code': os.waitstatus_to_exitcode(status)}))")


def command(task: str, path: Path, out: Path, probe: Path | None = None) -> list[str]:
    """What a user would run for `task`: the bare reads and the peer with their own library alone, the
    audits as the command line runs them (the core by the API), the probe as its folder `probe` says,
    the others by this file (`one`)."""
    audit = [sys.executable, "-m", "baccarat_audit", "audit"]
    bets = path.parent / path.name.replace("rounds_", "bets_").replace("_with_bets", "")
    commands = {
        "read": [sys.executable, "-c", READ, str(path), *(c for c in ingest.columns("round_log")
                                                        if c in pl.scan_parquet(path).collect_schema())],
        "read-csv": [sys.executable, "-c", READ_CSV, str(as_csv(path))],
        "duckdb": [sys.executable, "-c", PEER, PEER_SQL.format(log=path, out=out / "peer.parquet", cards=SPELLINGS)],
        "core": [sys.executable, "-c", CORE, str(path), str(out)],
        "no-contract": [*audit, str(path), "--out", str(out), "--quiet", "--no-contract"],
        "audit": [*audit, str(path), "--out", str(out), "--quiet"],
        "audit-csv": [*audit, str(as_csv(path)), "--out", str(out), "--quiet"],
        "nightly": [*audit, str(path), "--bets", str(bets), "--out", str(out), "--quiet"],
        **({"probe": [sys.executable, str(probe / "proto_stream.py"), str(path), str(out / "probe")]}
           if probe else {}),
    }
    return commands.get(task, [sys.executable, __file__, "--one", task, str(path), str(out)])


def measure(task: str, path: Path, out: Path, runs: int = 1, probe: Path | None = None) -> dict:
    """`task` run `runs` times, each timed whole in a fresh process (`command`, the probe from its folder
    `probe`); the fastest run's figures. The bare read varies severalfold from run to run on a shared
    machine: a slow floor would flatter every ratio, so it is taken at its fastest, and so is the bare
    replay, the bound it sets on every audit. What a task flags is counted once it is done."""
    out.mkdir(parents=True, exist_ok=True)

    def run_once() -> dict:
        figures_file = out / f".{task}.figures.json"
        done = subprocess.run([sys.executable, "-c", LAUNCH, str(figures_file), *command(task, path, out, probe)],
                              capture_output=True, text=True)
        figures = json.loads(figures_file.read_text())
        if figures["code"] > 1:  # an audit's exit 1 is its findings
            raise RuntimeError(f"{task} failed: {done.stderr[-2000:]}")
        if task in ("row-by-row", "bare-replay"):
            figures["flagged"] = json.loads(done.stdout.strip().splitlines()[-1])["flagged"]
        return figures
    best = min((run_once() for _ in range(runs)), key=lambda figures: figures["seconds"])
    if task == "duckdb":
        flags = ["player_draw", "banker_draw", "player_total", "banker_total", "outcome"]
        best["flagged"] = pl.scan_parquet(out / "peer.parquet").filter(pl.any_horizontal(flags)).select(pl.len()).collect().item()
    elif task == "core":
        best["flagged"] = per_round_flagged(out)
    return best


def line(task: str, figures: dict, rounds: int) -> str:
    """One task's figures as the bench prints them: wall time, rounds per second, peak memory."""
    return (f"  {task:<17} {figures['seconds']:8.2f} s  {rounds / figures['seconds']:>12,.0f} rounds/s  "
            f"peak {figures['peak_mib']:7.0f} MiB")


#: The issue's targets at the largest log, as (task, against, at most): task's seconds / against's.
TARGETS = (("audit", "read", 4.0), ("audit", "duckdb", 1.0), ("no-contract", "read", 3.0), ("core", "read", 2.0),
           ("audit", "row-by-row", 1 / 15), ("nightly", "audit", 2.0), ("audit-csv", "read-csv", 3.0),
           ("audit", "probe", 1.5))
PEAK_MIB, PEAK_GROWTH = 600, 10  # the audit's peak at the largest log, and bytes a round more on the flat log
TASKS = ("read", "read-csv", "duckdb", "core", "no-contract", "audit", "nightly", "audit-csv")
MORE = ("bare-replay", "read-trimmed", "replayed", "one-night", "every-round-found", "nightly-files")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--dir", type=Path, default=Path("bench/logs"))
    parser.add_argument("--row-by-row-rounds", type=int, default=1_000_000,
                        help="the log the row-by-row loop is run on (it is slow); scaled by rounds to larger ones")
    parser.add_argument("--flat-rounds", type=int, default=30_000_000,
                        help="a larger log on which only the audit and the nightly job are run, to show "
                             "whether their peak memory grows with the log (0: not run)")
    parser.add_argument("--more", action="store_true", help="also the steps between the floor and the audit, "
                        "a narrowed audit, a log whose every round is found and the log as 2,920 nightly files")
    parser.add_argument("--probe", type=Path, help="the probe's folder (proto_stream.py), timed beside the audit")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        task, path, out = args.one
        print(json.dumps(one(task, Path(path), Path(out))))
        return
    print(f"machine: {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores, "
          f"polars {pl.__version__}")
    small, _ = make_log(args.row_by_row_rounds, args.dir)
    naive = measure("row-by-row", small, args.dir / "out_row_by_row")
    print(f"row-by-row loop on {args.row_by_row_rounds:,} rounds: {naive['seconds']:.2f} s, "
          f"{naive['flagged']:,} rounds flagged")
    largest = (0, PEAK_MIB)  # the largest log's rounds and the audit's peak on it
    for rounds in args.rounds:
        path, bets = make_log(rounds, args.dir)
        as_csv(path)  # made before anything is measured
        if args.more:
            every_round_found(path)
            nightly_files(path)
        out = args.dir / f"out_{rounds}"
        tasks = (*TASKS, *(("probe",) if args.probe else ()), *(MORE if args.more else ()))
        figures = {t: measure(t, path, out, FLOOR_RUNS if t in FLOORS else 1, args.probe) for t in tasks}
        figures["row-by-row"] = {"seconds": naive["seconds"] * rounds / args.row_by_row_rounds,
                                 "peak_mib": naive["peak_mib"], "flagged": naive["flagged"]}
        print(f"\n{rounds:,} rounds ({path.stat().st_size / 2**20:.0f} MiB Parquet, "
              f"{as_csv(path).stat().st_size / 2**20:.0f} MiB CSV), "
              f"{pl.scan_parquet(bets).select(pl.len()).collect().item():,} bets "
              f"({bets.stat().st_size / 2**20:.0f} MiB)")
        print(f"  {'task':<17} {'seconds':>8}    {'vs read':>7}  {'peak':>9}")
        for t, f in figures.items():
            scaled = " (scaled)" if t == "row-by-row" and rounds != args.row_by_row_rounds else ""
            print(f"  {t:<17} {f['seconds']:8.2f} s  {f['seconds'] / figures['read']['seconds']:6.1f}x  "
                  f"{f['peak_mib']:6.0f} MiB{scaled}")
        flagged = {t: figures[t]["flagged"] for t in ("duckdb", "core")}
        print(f"  rounds flagged by the per-round checks: DuckDB {flagged['duckdb']:,}, the audit {flagged['core']:,}: "
              + ("equal" if len(set(flagged.values())) == 1 else "DIFFERENT"))
        for task, against, most in TARGETS:
            if task not in figures or against not in figures:
                continue
            ratio = figures[task]["seconds"] / figures[against]["seconds"]
            print(f"  target {task} / {against} <= {most:.3g}: {ratio:.3g} " + ("met" if ratio <= most else "NOT MET"))
        print(f"  target peak of the audit <= {PEAK_MIB} MiB: {figures['audit']['peak_mib']:.0f} MiB: "
              + ("met" if figures["audit"]["peak_mib"] <= PEAK_MIB else "NOT MET"))
        largest = (rounds, figures["audit"]["peak_mib"])
    if args.flat_rounds:
        path, _ = make_log(args.flat_rounds, args.dir)
        print(f"\n{args.flat_rounds:,} rounds ({path.stat().st_size / 2**20:.0f} MiB Parquet): does the peak grow?")
        for t in ("audit", "nightly"):
            f = measure(t, path, args.dir / f"out_{args.flat_rounds}")
            print(f"  {t:<17} {f['seconds']:8.2f} s  peak {f['peak_mib']:6.0f} MiB")
            if t == "audit" and largest[0]:
                most = PEAK_MIB + PEAK_GROWTH * (args.flat_rounds - largest[0]) / 2**20
                print(f"  target peak of the audit <= {most:.0f} MiB ({PEAK_GROWTH} bytes a round above "
                      f"{PEAK_MIB} MiB at {largest[0]:,}): " + ("met" if f["peak_mib"] <= most else "NOT MET"))


if __name__ == "__main__":
    main()
