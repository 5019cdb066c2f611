"""Explain one round step by step, the way a dispute is checked by hand, from the scalar replay."""

from __future__ import annotations

import re
from decimal import Decimal

import polars as pl

from ..rules import bets, cards, profiles, tableau
from ..inputs import profile_files
from ..inputs import ingest
from ..checks.settlement import money_str, parse_amount, row_reason
from ..rules.coup import Replay, replay


def _listed(values: frozenset[int]) -> str:
    """Third-card values one by one, as the tableau row is read out in a dispute."""
    return ", ".join(map(str, sorted(values))) or "nothing"


def _rule(draws_on: frozenset[int]) -> str:
    """"draws on 0-5 and stands on 6-7", from the tableau's set."""
    return f"draws on {tableau.spans(draws_on)} and stands on {tableau.spans(tableau.DECIDING_TOTALS - draws_on)}"


def explain(row: dict, ranked: bool = True) -> dict:
    """The replay of one parsed round-log row as steps and recorded-vs-replayed comparisons.

    `row` holds the raw text columns and the parsed `*_code_*` card codes of `ingest.parse_rounds`;
    not `ranked` (cards written as points), whether a hand holds a pair is not known (None).
    """
    code = {f"{h}_{i}": row[f"{h}_code_{i}"] for h in ("player", "banker") for i in (1, 2, 3)}
    value = {k: None if c is None else cards.value_of(c) for k, c in code.items()}
    shown = {k: "-" if c is None else f"{cards.name(c)} ({cards.value_of(c)})" for k, c in code.items()}
    coup = replay(*(value[k] for k in ("player_1", "banker_1", "player_2", "banker_2", "player_3", "banker_3")))
    steps = [
        f"Opening cards in deal order: Player {shown['player_1']}, Banker {shown['banker_1']}, "
        f"Player {shown['player_2']}, Banker {shown['banker_2']}.",
        f"Opening totals: Player {coup.player_opening}, Banker {coup.banker_opening}.",
    ]
    if coup.natural:
        steps.append("Natural (8 or 9 on two cards): nobody draws; the coup ends here.")
    else:
        steps.append("No natural.")
        draws_on = tableau.PLAYER_DRAWS_ON
        rule = (f"draws on {tableau.spans(draws_on)}" if coup.player_must_draw
                else f"stands on {tableau.spans(tableau.DECIDING_TOTALS - draws_on)}")
        steps.append(f"Player on {coup.player_opening} {rule}: Player must "
                     f"{'draw' if coup.player_must_draw else 'stand'}.")
    steps.append(f"Player {'drew ' + shown['player_3'] if coup.player_drew else 'stood'} "
                 f"({'as required' if coup.player_drew == coup.player_must_draw else AGAINST}).")
    if not coup.natural:
        if value["player_3"] is None:
            steps.append(f"Player stood, so Banker {_rule(tableau.BANKER_DRAWS_WHEN_PLAYER_STOOD)}: Banker on "
                         f"{coup.banker_opening} must {'draw' if coup.banker_must_draw else 'stand'}.")
        else:
            draws_on = tableau.BANKER_DRAWS_AGAINST_THIRD_CARD[coup.banker_opening]
            steps.append(
                f"Player drew, so the tableau row for Banker {coup.banker_opening} applies: Banker draws "
                f"when Player's third card counts {_listed(draws_on)}. Player's third card counts "
                f"{value['player_3']}: Banker must {'draw' if coup.banker_must_draw else 'stand'}."
            )
    steps.append(f"Banker {'drew ' + shown['banker_3'] if coup.banker_drew else 'stood'} "
                 f"({'as required' if coup.banker_drew == coup.banker_must_draw else AGAINST}).")
    steps.append(f"Final totals of the cards dealt: Player {coup.player_final}, Banker {coup.banker_final}: "
                 f"{_outcome_words(coup.result)}.")
    departed = next((n for n, step in enumerate(steps, start=1) if step.endswith(f"({AGAINST}).")), None)
    compared = [
        ("Player draw", "draw" if coup.player_must_draw else "stand", "draw" if coup.player_drew else "stand"),
        ("Banker draw", "draw" if coup.banker_must_draw else "stand", "draw" if coup.banker_drew else "stand"),
        ("player_total", str(coup.player_final), row.get("player_total")),
        ("banker_total", str(coup.banker_final), row.get("banker_total")),
        ("outcome", coup.result, row.get("outcome")),
    ]
    comparisons = [
        {"field": field, "check": check, "replayed": replayed, "recorded": recorded,
         "agrees": None if recorded is None else _agrees(field, replayed, recorded)}
        for (field, replayed, recorded), check in zip(compared, COMPARED_CHECKS)
    ]
    produced = by_the_procedure(coup)
    if produced["known"] and not produced["same"]:
        # Recorded totals that are the procedure's, not the cards': a third card logged but not dealt, or
        # dealt but not logged.
        totals = (row.get("player_total"), row.get("banker_total"))
        produced["totals_recorded_are_the_procedure's"] = (
            totals == (str(produced["player"]), str(produced["banker"]))
            and totals != (str(coup.player_final), str(coup.banker_final)))
    return {
        "round_id": row["round_id"],
        "source_file": row["source_file"],
        "source_row": row["source_row"],
        **{field: row.get(field) for field in PLACE},
        "hand_no": whole_number(row.get("hand_no")),
        "profile": row["profile"],
        "first_departure": None if departed is None else {"step": departed, "text": steps[departed - 1]},
        "by_the_procedure": produced,
        "cards": {k: None if c is None else cards.name(c) for k, c in code.items()},
        "replay": coup.__dict__,
        "facts": bets.facts(
            coup.player_final, coup.banker_final, 2 + coup.player_drew, 2 + coup.banker_drew, coup.natural,
            cards.rank_of(code["player_1"]) == cards.rank_of(code["player_2"]) if ranked else None,
            cards.rank_of(code["banker_1"]) == cards.rank_of(code["banker_2"]) if ranked else None,
        ),
        "steps": steps,
        "comparisons": comparisons,
    }


def whole_number(text: str | None) -> int | None:
    """A recorded hand_no as findings.parquet has it (`findings.published`): trimmed and read as an
    integer by the same cast, None where it is not one."""
    return pl.Series([text], dtype=pl.String).str.strip_chars().cast(pl.Int64, strict=False)[0]


def _outcome_words(result: str) -> str:
    """A coup's result as the explanation says it: "banker wins", "a tie"."""
    return "a tie" if result == "TIE" else f"{result.lower()} wins"


#: The check of each comparison, in its order: the code the audit flags a mismatch under.
COMPARED_CHECKS = ("PLAYER_DRAW", "BANKER_DRAW", "PLAYER_TOTAL", "BANKER_TOTAL", "OUTCOME")

#: How a step says a card was dealt, or not, against the tableau: the procedure broken there.
AGAINST = "CONTRARY TO THE TABLEAU"

#: Where the round was dealt, as the log records it: the header of an explanation.
PLACE = ("table_id", "shoe_id", "hand_no", "dealt_at")


def by_the_procedure(coup: Replay) -> dict:
    """What the procedure would have produced, where the recorded cards decide it: a natural drawn to
    ends at the natural; a third card dealt against the tableau is taken away, when the other hand's
    duty then needs no card the log does not hold. Otherwise it cannot be known (a card that should
    have been drawn was never recorded, or which card a hand would have received depends on how the
    house corrects a misdeal). `known` False, or the totals, the cards each hand holds and the result
    (`same` when they are the recorded cards' own)."""
    recorded = (coup.player_final, coup.banker_final, 2 + coup.player_drew, 2 + coup.banker_drew)
    player, banker, player_cards, banker_cards = recorded
    if coup.natural:
        player, banker, player_cards, banker_cards = coup.player_opening, coup.banker_opening, 2, 2
    elif coup.player_drew != coup.player_must_draw:
        if coup.player_must_draw:
            return {"known": False, "why": "Player should have drawn and did not",
                    "missing": _missing_card(coup, "Player", coup.result)}
        if tableau.banker_draws(coup.player_opening, coup.banker_opening, None):
            return {"known": False, "why": "Player drew against the tableau, and Banker, facing Player's two cards, "
                    "would have drawn a card the log does not record",
                    "missing": _missing_card(coup, "Banker", coup.result, coup.player_opening)}
        player, banker, player_cards, banker_cards = coup.player_opening, coup.banker_opening, 2, 2
    elif coup.banker_drew != coup.banker_must_draw:
        if coup.banker_must_draw:
            return {"known": False, "why": "Banker should have drawn and did not",
                    "missing": _missing_card(coup, "Banker", coup.result, coup.player_final)}
        banker, banker_cards = coup.banker_opening, 2
    result = tableau.result(player, banker)
    return {"known": True, "player": player, "banker": banker, "player_cards": player_cards,
            "banker_cards": banker_cards, "result": result,
            "same": (player, banker, player_cards, banker_cards) == recorded, "same_result": result == coup.result}


def _missing_card(coup: Replay, hand: str, recorded: str, player: int | None = None) -> dict:
    """The third card of `hand` that the procedure needed and the log lacks: for each of its points,
    0 to 9, the result it would have given (null where Banker would then need a card the log lacks too:
    Player's third card decides whether Banker draws), and the points that change the `recorded` result
    (the recorded cards').
    `player`: Player's final total when the card is Banker's."""
    results: list[str | None] = []
    for points in range(10):
        if hand == "Banker":
            results.append(tableau.result(player, (coup.banker_opening + points) % 10))
        elif tableau.banker_draws(coup.player_opening, coup.banker_opening, points):
            results.append(None)
        else:
            results.append(tableau.result((coup.player_opening + points) % 10, coup.banker_opening))
    return {"card": f"{hand}'s third card", "results": results, "recorded": recorded,
            "changing": [points for points, result in enumerate(results) if result is not None and result != recorded]}


def _missing_text(missing: dict) -> str:
    """`_missing_card` as a sentence: the points of the missing card grouped by the result they give."""
    groups: list[tuple[list[int], str | None]] = []
    for points, result in enumerate(missing["results"]):
        if groups and groups[-1][1] == result:
            groups[-1][0].append(points)
        else:
            groups.append(([points], result))
    said = []
    for run, result in groups:
        span = str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}"
        what = ("Banker would draw a card the log lacks too" if result is None
                else _outcome_words(result) + (", as recorded" if result == missing["recorded"] else ""))
        said.append(f"{span}: {what}")
    return (f"{missing['card'].capitalize()}, by its points (10, J, Q, K count 0): {'; '.join(said)}.")


def unsettled(round_id: str, replayed: int, quarantined: int) -> str | None:
    """Why the audit settles no bet of a round by its cards (`settlement.settle`), given how many of
    the round's rows were replayed and quarantined: on several replayed rows, which deal would a bet
    be paid by? None when it is on one."""
    if replayed == 1:
        return None
    if replayed:
        return f"round '{round_id}' is on {replayed} rows of the round log"
    return f"round '{round_id}' is {'quarantined in' if quarantined else 'not in'} the round log"


def settle_bets(explanation: dict, bet_rows: list[dict], unsettled: str | None = None) -> list[dict]:
    """Each bet of the explained round settled step by step, beside the amount recorded as paid; by
    the cards only when the round is not `unsettled` (see `unsettled`), as the audit settles it. A
    void bet needs no cards."""
    profile = profile_files.load(explanation["profile"])
    table = bets.returns(profile)
    settled = []
    for bet in bet_rows:
        bet_type = (bet["bet_type"] or "").upper()
        stake, paid = parse_amount(bet["stake"]), parse_amount(bet["paid"])
        entry = {"bet_id": bet["bet_id"], "bet_type": bet_type, "stake": bet["stake"], "paid": bet["paid"]}
        status = (bet.get("status") or "").upper()
        settlement = None if unsettled else bets.settle(profile, bet_type, explanation["facts"], stake or Decimal(0))
        # What the audit needs of any bet, void or not (`settlement.settle`'s reasons): an id, a type,
        # a stake of more than 0 and an amount paid.
        readable = bet["bet_id"] is not None and bet_type != "" and bool(stake) and paid is not None
        cannot = [f"Cannot be settled: bet type {bet_type or '(empty)'} under profile {profile.name}, "
                  f"stake {bet['stake']!r}, paid {bet['paid']!r}" + ("" if bet["bet_id"] else ", no bet_id") + "."]
        if not readable:
            entry["steps"], entry["agrees"] = cannot, None
        elif status in bets.VOID:
            entry["steps"] = [f"The bet is {bet['status']}: its stake is returned whatever the cards.",
                              f"Expected {money_str(stake)}, paid {bet['paid']}: "
                              f"{'correct' if paid == stake else 'WRONG'}."]
            entry["expected"] = money_str(stake)
            entry["agrees"] = paid == stake
        elif status in bets.OPEN:
            entry["steps"] = [f"Cannot be settled: the bet is {bet['status']}, not settled yet."]
            entry["agrees"] = None
        elif unsettled:
            entry["steps"] = [f"Cannot be settled by the cards: {unsettled}."]
            entry["agrees"] = None
        elif bet_type in bets.RANKED and explanation["facts"]["player_pair"] is None:
            entry["steps"] = [f"Cannot be settled: bet type {bet_type} is decided by the cards' ranks: "
                              f"{cards.POINTS_ONLY}."]
            entry["agrees"] = None
        elif settlement is None:  # a type the profile does not offer
            entry["steps"], entry["agrees"] = cannot, None
        else:
            per_unit = table[bet_type, settlement.case].per_unit
            entry["steps"] = [
                f"{bet_type} bet under {profile.name}: {settlement.case}.",
                f"{settlement.rule}: returns {per_unit.normalize():f} per unit staked (stake included).",
                f"Stake {stake} x {per_unit.normalize():f} = {money_str(stake * per_unit)}"
                + ("" if profile.rounding_mode == "exact" else
                   f", rounded ({profile.rounding_mode}) to {profile.rounding_unit}: "
                   f"{money_str(settlement.expected)}") + ".",
                f"Expected {money_str(settlement.expected)}, paid {bet['paid']}: "
                f"{'correct' if paid == settlement.expected else 'WRONG'}.",
            ]
            entry["expected"] = money_str(settlement.expected)
            entry["agrees"] = paid == settlement.expected
            due, step = _due_by_procedure(profile, bet_type, explanation, stake, settlement.expected)
            entry["due_by_procedure"] = due
            entry["steps"].append(step)
        # Quarantined by the audit, in its words: a finding of the round's, as the audit's exit code says.
        if entry.get("agrees", False) is None:
            entry["quarantined"] = (row_reason(bet) or (unsettled if unsettled and status not in bets.VOID else None)
                                    or (f"bet type '{bet_type}' is not offered under profile {profile.name}"
                                        if settlement is None and bet_type and status not in bets.VOID else None)
                                    or entry["steps"][0].removeprefix("Cannot be settled: ").rstrip("."))
        settled.append(entry)
    return settled


def _due_by_procedure(profile: profiles.Profile, bet_type: str, explanation: dict, stake: Decimal,
                      expected: Decimal) -> tuple[str | None, str]:
    """What a bet would return had the coup been dealt by the procedure (`by_the_procedure`), and the
    step that says so; None where that cannot be known. The pairs are the first two cards', dealt
    either way."""
    produced = explanation["by_the_procedure"]
    if bet_type in bets.OPENING:  # the first two cards of each hand are dealt the same, by the book or not
        return money_str(expected), (f"By the procedure: the same opening cards, which alone decide a "
                                     f"{bet_type} bet, so the same {money_str(expected)} is due.")
    if not produced["known"]:
        return None, f"By the procedure: cannot be known ({produced['why']})."
    if produced["same"]:
        return money_str(expected), f"By the procedure: the same cards, so the same {money_str(expected)} is due."
    facts = bets.facts(produced["player"], produced["banker"], produced["player_cards"], produced["banker_cards"],
                       explanation["replay"]["natural"], explanation["facts"]["player_pair"],
                       explanation["facts"]["banker_pair"])
    due = bets.settle(profile, bet_type, facts, stake).expected
    return money_str(due), (f"By the procedure (Player {produced['player']}, Banker {produced['banker']}: "
                            f"{_outcome_words(produced['result'])}) "
                            f"{money_str(due)} would be due.")


#: A total as the audit reads one (`checks._total_check`: polars' cast to an integer): "07" and "+7" are 7.
WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")


def _agrees(field: str, replayed: str, recorded: str) -> bool:
    """Whether a recorded value (trimmed as the audit trims it: not again, since Python's strip takes
    more characters than polars') says what the replay says."""
    if field == "outcome":
        return ingest.outcome_spellings().get(recorded.upper()) == replayed
    if field.endswith("_total"):
        return WHOLE_NUMBER.fullmatch(recorded) is not None and int(recorded) == int(replayed)
    return recorded == replayed


def note_copies(explained: list[dict]) -> None:
    """A note on each replayed row of a round_id that is on several (`copies`): the audit flags every
    copy DUPLICATE_ROUND, which one row's replay cannot show."""
    if len(explained) < 2:
        return
    rows = ", ".join(f"{e['source_file']} row {e['source_row']}" for e in explained)
    invisibly = (", its copies differing only invisibly (Unicode normalisation, zero-width or BOM characters)"
                 if len({e["round_id"] for e in explained}) > 1 else "")
    for explanation in explained:
        explanation["copies"] = (f"DUPLICATE_ROUND: round_id {explanation['round_id']} is on {len(explained)} "
                                 f"replayable rows of the log ({rows}){invisibly}; the audit flags every copy.")


def note_bet_copies(settled: list[dict], places: list[dict]) -> None:
    """A note on each settled bet (`settle_bets`) whose bet_id is on several rows of the bet log
    (`places`: where each of the round's bet_ids is, `ingest.places_of`): the audit flags every copy
    DUPLICATE_BET, which the round's own bets may not show (a copy can sit under another round)."""
    for bet in settled:
        rows = [f"{place['source_file']} row {place['source_row']}" for place in places
                if bet["bet_id"] is not None and place["bet_id"] == bet["bet_id"]]
        if len(rows) > 1:
            bet["copies"] = (f"DUPLICATE_BET: bet_id {bet['bet_id']} is on {len(rows)} rows of the bet log "
                             f"({', '.join(rows)}); the audit flags every copy.")


def _others(found: dict) -> str:
    """The other rounds a finding across rounds names (`api._other_rounds`), as the text says them."""
    def at(other: dict) -> str:
        return f"{other['round_id']} ({other['source_file']} row {other['source_row']})"
    if found.get("other_copies"):
        return " The other copies: " + ", ".join(map(at, found["other_copies"])) + "."
    if found.get("hand_before"):
        before = found["hand_before"]
        return f" The hand before: hand {before['hand_no']}, {at(before)}, dealt at {before['dealt_at']}."
    return ""


def procedure_text(produced: dict) -> str:
    """`by_the_procedure` as a sentence of the explanation."""
    if not produced["known"]:
        missing = f" {_missing_text(produced['missing'])}" if "missing" in produced else ""
        return f"By the procedure: cannot be known ({produced['why']}).{missing}"
    if produced["same"]:
        return "By the procedure: the same totals and result as the recorded cards."
    ended = (f"By the procedure the coup would have ended Player {produced['player']}, Banker {produced['banker']}: "
             f"{_outcome_words(produced['result'])}")
    said = (f"{ended}, the result the recorded cards give too: only the cards dealt and the totals differ."
            if produced["same_result"] else f"{ended}; the recorded cards give another result.")
    if produced.get("totals_recorded_are_the_procedure's"):
        said += (" The recorded totals are the procedure's, not the recorded cards': evidence that a third card "
                 "was logged but not dealt, or dealt but not logged.")
    return said


def found_anything(explained: list[dict]) -> bool:
    """Whether the rows of a round (explanations, and quarantined rows) hold a finding: a quarantined
    row, a copy of the round_id, a finding across the rounds of its shoe, a recorded value or draw
    against the replay, a bet paid otherwise than due or a copy of a bet_id. (TABLE_STATS, of a whole
    table, is the audit's.)"""
    for explanation in explained:
        if "quarantined" in explanation or "copies" in explanation or explanation.get("across_rounds"):
            return True
        if any(compared["agrees"] is False for compared in explanation.get("comparisons", [])):
            return True
        if any(bet.get("agrees") is False or "copies" in bet or "quarantined" in bet for bet in explanation.get("bets", [])):
            return True
    return False


def render(explanation: dict) -> str:
    """The explanation (or a quarantined row's reason) as plain text for a terminal."""
    lines = [f"Round {explanation['round_id']} ({explanation['source_file']}, row {explanation['source_row']})"]
    if "quarantined" in explanation:
        lines[0] += f" is quarantined: {explanation['quarantined']}"
    else:
        placed = [f"{field.split('_')[0].replace('dealt', 'dealt at')} {explanation[field]}" for field in PLACE
                  if explanation.get(field) is not None]
        lines.append("  " + ", ".join([*placed, f"profile {explanation['profile']}"]))
        if "copies" in explanation:
            lines.append(f"  {explanation['copies']}")
        for found in explanation.get("across_rounds", []):
            lines.append(f"  {found['check']} (across the shoe): {found['detail']}{_others(found)}")
        lines += [f"  {n}. {step}" for n, step in enumerate(explanation["steps"], start=1)]
        if explanation["first_departure"] is not None:
            lines.append(f"  The procedure was first broken at step {explanation['first_departure']['step']}.")
        lines.append(f"  {procedure_text(explanation['by_the_procedure'])}")
        lines.append("  Recorded against replayed:")
    for c in explanation.get("comparisons", []):
        mark = {True: "ok", False: f"MISMATCH: {c['check']}", None: "not recorded"}[c["agrees"]]
        lines.append(f"    {c['field']:<13} replayed {c['replayed']:<7} recorded {c['recorded'] or '-':<7} {mark}")
    for bet in explanation.get("bets", []):
        lines.append(f"  Bet {bet['bet_id']}:")
        lines += [f"    {line}" for line in ([bet["copies"]] if "copies" in bet else []) + bet["steps"]
                  + ([f"Quarantined by the audit: {bet['quarantined']}."] if "quarantined" in bet else [])]
    return "\n".join(lines)
