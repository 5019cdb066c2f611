"""Deal the golden logs (run once; the logs and the outputs of the audit they were made with are
committed, and `tests/test_golden.py` holds every later audit to them).

A shoe-faithful generated log with rule faults, then the faults of real exports laid over it, each
on rows picked by a fixed seed: cards respelt, padded, lower-cased, unreadable or blank; totals and
outcomes misspelt; round_ids padded, blank or copied; hand_no and dealt_at not numbers or times.
Usage: python tests/assets/golden/make.py  (then `UPDATE_GOLDEN=1 pytest tests/test_golden.py`)
"""

import random
from pathlib import Path

import polars as pl

from baccarat_audit import generate

HERE = Path(__file__).parent
SPELT = {"H": "♥", "D": "♦", "C": "♣", "S": "♠"}


def hostile(rows: list[dict], rng: random.Random) -> list[dict]:
    out = []
    for row in rows:
        row = dict(row)
        roll = rng.random()
        card = rng.choice(["player_card_1", "player_card_2", "banker_card_1", "banker_card_2",
                           "player_card_3", "banker_card_3"])
        if roll < 0.02 and row[card]:
            row[card] = row[card][:-1] + SPELT[row[card][-1]]  # suit as a symbol
        elif roll < 0.04 and row[card]:
            row[card] = f"  {row[card].lower()} "
        elif roll < 0.045:
            row[card] = rng.choice(["ZZ", "11H", "1S", "K", "?"])
        elif roll < 0.05:
            row[card] = ""
        elif roll < 0.055:
            row["player_total"] = rng.choice(["x", "12", " 3 ", "-1"])
        elif roll < 0.06:
            row["outcome"] = rng.choice(["banker", " Player ", "T", "BANK", "draw"])
        elif roll < 0.065:
            row["round_id"] = f" {row['round_id']} "
            out.append(dict(row, round_id=row["round_id"].strip()))
        elif roll < 0.068:
            row["round_id"] = ""
        elif roll < 0.072:
            row["hand_no"] = rng.choice(["abc", "", "0", "-3"])
        elif roll < 0.076:
            row["dealt_at"] = rng.choice(["yesterday", "", "2026-13-01T00:00:00Z"])
        elif roll < 0.08:
            out.append(dict(row))  # exported twice
        out.append(row)
    return out


def main() -> None:
    log = generate.generate(2400, seed=2031, fault_rate=0.03, tables=4, with_bets=True,
                            profile_names=("standard", "ez-baccarat"))
    as_text = [{k: None if v is None else str(v) for k, v in row.items()} for row in log.rows]
    rows = hostile(as_text, random.Random(2031))
    pl.DataFrame(rows, schema=dict.fromkeys(generate.ROUND_SCHEMA, pl.String), orient="row").write_csv(
        HERE / "rounds.csv")
    pl.DataFrame(log.bets, schema=generate.BET_SCHEMA, orient="row").write_csv(HERE / "bets.csv")


if __name__ == "__main__":
    main()
