"""Mappings: how a provider's log is laid out, and how its stored fields become contract columns.

A mapping file (schemas/mapping.schema.json says what it may hold) renames columns, reads fields of
nested records by their dotted paths, spreads a hand's list of cards over its card columns,
translates values (a value may be mapped to null: not recorded), fills columns the log lacks with a
constant, names the columns of a CSV log written without a header, skips a text log's lines that
are not records and fills columns from its section lines, derives a round_id, declares
cards written as points, and reads a log of card events (`card_events`). `columns_of` turns it, with
a file's stored column types, into one expression per contract column, which ingest reads as text.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import polars as pl

from .card_events import POSITIONS, Events
from .formats import BLANK
from ..errors import InputError
from ..rules.bets import AMOUNT
from ..rules.lookup import position

HANDS = ("player", "banker")
PLACE = ("source_file", "source_row")  # a row's file and row, of which a round_id may be derived
CARDS_PER_HAND = 3


@dataclass(frozen=True)
class CardList:
    """Where a hand's cards are listed in one field, or the burn cards in one or several (see
    schemas/mapping.schema.json, card_list and burn_list)."""

    field: str | tuple[str, ...]
    separator: str | None = None  # text: the cards written one after another, this between them
    rank: str | None = None  # records: the rank's and the suit's fields of each card
    suit: str | None = None
    ranks: dict[str, str | None] = field(default_factory=dict)
    suits: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Mapping:
    """How a provider's log maps onto a contract: column renames and value translations, and the
    layout (see the module)."""

    name: str
    columns: dict[str, str]  # provider field (a dotted path into a nested record) -> contract column
    values: dict[str, dict[str, str | None]]  # contract column -> provider value -> contract value or None
    path: Path | None  # None: made by the tool, not read from a file (`ingest.with_profiles`)
    cards: dict[str, CardList] = field(default_factory=dict)  # hand -> its card list
    constants: dict[str, str] = field(default_factory=dict)  # contract column -> every row's value
    header: tuple[str, ...] | None = None  # a CSV log without a header row: its columns
    round_id: tuple[str, ...] = ()  # a log without round_ids: the columns a round's id is made of
    notation: str = "cards"  # how the cards are written: "points" for card points only (`cards.NOTATIONS`)
    events: Events | None = None  # a card-event log: where each event's round, position and card are
    paid: str = "gross"  # a bet log's payouts: "gross" (the stake included) or "net" (the winnings alone)
    skip: tuple[str, ...] = ()  # a text log's lines that are not records (tallies, titles), as patterns
    sections: tuple[str, ...] = ()  # a text log's section lines, whose named groups fill the records after them

    @property
    def not_records(self) -> str:
        """One pattern of the lines of a CSV or text log that are not records: blank ones, the skipped, the
        sections' (`formats.not_record`)."""
        patterns = (BLANK, *self.skip, *self.sections)
        return "|".join(f"(?:{pattern})" for pattern in patterns) if len(patterns) > 1 else BLANK

    @property
    def sectioned(self) -> tuple[str, ...]:
        """The contract columns the section lines fill, in the order the patterns name them."""
        return tuple(dict.fromkeys(name for pattern in self.sections for name in re.compile(pattern).groupindex))

    @property
    def derived_id(self) -> str | None:
        """How round_ids are made where the log records none, as the provenance says it."""
        return f"derived from {', '.join(self.round_id)}" if self.round_id else None

    @property
    def reshapes(self) -> bool:
        """Whether the mapping does more than rename columns and translate values to text."""
        nested = any("." in source for source in self.columns)
        to_null = any(new is None for table in self.values.values() for new in table.values())
        points = self.notation != "cards"
        return bool(self.cards or self.constants or self.header or self.round_id or self.events or nested
                    or to_null or points or self.paid != "gross" or self.skip or self.sections)


def load(path: Path, schema: dict, contract_columns: tuple[str, ...], contract_name: str) -> Mapping:
    """The mapping in the JSON file at `path`, held to `schema` (schemas/mapping.schema.json) and to
    the contract's columns; an InputError naming the file and what is wrong with it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not a valid mapping file ({error})") from None
    except RecursionError:
        raise InputError(f"{path}: not a valid mapping file (nested too deeply)") from None
    if error is not None:
        where = "" if error.json_path == "$" else f" at {error.json_path}"
        raise InputError(f"{path}: not a valid mapping file ({error.message}{where})")
    cards = {hand: CardList(**spec | {"field": tuple(spec["field"]) if isinstance(spec["field"], list) else spec["field"]})
             for hand, spec in data.get("cards", {}).items()}
    mapping = Mapping(data.get("name", path.stem), data.get("columns", {}),
                      _tables(path, data.get("values", {}), contract_columns), path, cards,
                      data.get("constants", {}), tuple(data["header"]) if "header" in data else None,
                      tuple(data.get("round_id", ())), data.get("notation", "cards"),
                      Events(**data["events"]) if "events" in data else None, data.get("paid", "gross"),
                      tuple(data.get("skip", ())), tuple(data.get("sections", ())))
    _patterns(mapping, contract_columns)
    if mapping.paid != "gross" and contract_name != "bet_log":
        raise InputError(f"{path}: the mapping says how payouts are written (paid: {mapping.paid}), but maps a "
                         f"{contract_name.replace('_', ' ')}; give it as the bet log's mapping")
    _check(mapping, contract_columns, contract_name)
    return mapping


def _tables(path: Path, values: dict[str, dict], known: tuple[str, ...]) -> dict[str, dict[str, str | None]]:
    """The value tables by contract column: a pattern's table (`*_card_*`) given to each column it
    matches, a column's own entries taking precedence over a pattern's."""
    tables: dict[str, dict[str, str | None]] = {}
    for key in sorted(values, key=lambda key: key in known):  # patterns first, columns over them
        matched = [key] if key in known else fnmatch.filter(known, key)
        if not matched:
            raise InputError(f"{path}: values names {key!r}, neither a column of the contract nor a pattern "
                             f"matching one ({', '.join(known)})")
        for column in matched:
            tables[column] = tables.get(column, {}) | values[key]
    return tables


def card_columns(hand: str) -> tuple[str, ...]:
    return tuple(f"{hand}_card_{i}" for i in range(1, CARDS_PER_HAND + 1))


def _patterns(mapping: Mapping, known: tuple[str, ...]) -> None:
    """Each skip and section pattern one that both Python and polars read, and each section's named
    groups contract columns: a group misnamed would fill nothing, unseen."""
    for part, patterns in (("skip", mapping.skip), ("sections", mapping.sections)):
        for pattern in patterns:
            try:
                groups = re.compile(pattern).groupindex
                pl.select(pl.lit("").str.contains(pattern))
            except (re.error, pl.exceptions.PolarsError) as error:
                raise InputError(f"{mapping.path}: {part} {pattern!r} is not a pattern polars reads "
                                 f"({str(error).splitlines()[0]})") from None
            stray = next((name for name in groups if name not in known), None)
            if part == "sections" and not groups:
                raise InputError(f"{mapping.path}: sections {pattern!r} names no group; a section line fills "
                                 "columns by named groups, as (?P<shoe_id>\\d+)")
            if part == "sections" and stray:
                raise InputError(f"{mapping.path}: sections {pattern!r} names the group {stray!r}, not a column of "
                                 f"the contract ({', '.join(known)})")


def _check(mapping: Mapping, known: tuple[str, ...], contract_name: str) -> None:
    """What the JSON Schema cannot say: every column named is the contract's, and each is filled once.
    A misspelt column would otherwise be passed over, and a check that needs it skipped, without a word."""
    stray = next((name for name in [*mapping.columns.values(), *mapping.constants] if name not in known), None)
    if stray:
        part = "columns" if stray in mapping.columns.values() else "constants"
        raise InputError(f"{mapping.path}: {part} names {stray!r}, not a column of the {contract_name} "
                         f"contract ({', '.join(known)})")
    if (mapping.cards or mapping.round_id or mapping.events) and contract_name != "round_log":
        raise InputError(f"{mapping.path}: cards, card events and a derived round_id are a round log's, not "
                         f"the {contract_name}'s")
    parts = [part for part in mapping.round_id if part not in PLACE and (part == "round_id" or part not in known)]
    if parts:
        raise InputError(f"{mapping.path}: round_id is derived from {parts[0]!r}, neither another column of the "
                         f"contract nor one of {', '.join(PLACE)}")
    filled: dict[str, str] = {}
    sources = [*((f"columns {source}", target) for source, target in mapping.columns.items()),
               *((f"cards {hand}", column) for hand in mapping.cards if hand in HANDS for column in card_columns(hand)),
               *(("cards burn", "burn_cards") for _ in [mapping.cards.get("burn")] if _),
               *((f"constants {column}", column) for column in mapping.constants),
               *((f"sections {column}", column) for column in mapping.sectioned),
               *(("round_id (derived)", "round_id") for _ in mapping.round_id[:1]),
               *((f"events {place}", column) for place, column in POSITIONS.items() if mapping.events),
               *((f"events {mapping.events.round}", column) for column in ("round_id", "burn_cards")
                 if mapping.events)]
    for source, target in sources:
        if target in filled:
            raise InputError(f"{mapping.path}: not a valid mapping file ({filled[target]} and {source} both "
                             f"fill {target})")
        filled[target] = source


@dataclass(frozen=True)
class Column:
    """A contract column as a file holds it: the expression that reads it from the stored columns,
    its type there, and the stored column it is when it is one (a filter on it reaches the reader)."""

    expr: pl.Expr
    dtype: pl.DataType
    stored: str | None


def columns_of(mapping: Mapping | None, dtypes: dict[str, pl.DataType], contract: tuple[str, ...],
               path: Path) -> tuple[dict[str, Column], list[pl.Expr]]:
    """A file's contract columns, read from its stored columns (`dtypes`) through `mapping`, and the
    reasons a row's layout is broken (a hand listing more cards than a hand holds): both for ingest,
    which reads each column as text. A field the file lacks fills nothing."""
    renames = {source: target for source, target in mapping.columns.items() if source in dtypes} if mapping else {}
    overwritten = next(((source, target) for source, target in renames.items()
                        if target in dtypes and target != source), None)
    if overwritten:
        raise InputError(f"{path}: the mapping renames column {overwritten[0]} to {overwritten[1]}, but the log "
                         f"has a {overwritten[1]} column already; one of them would be lost")
    found = {renames.get(name, name): Column(pl.col(name), dtype, name) for name, dtype in dtypes.items()
             if renames.get(name, name) in contract}
    if mapping is None:
        return found, []
    for source, target in mapping.columns.items():
        if source not in dtypes and "." in source and target not in found:
            read = _field(source, dtypes)
            if read is not None:
                found[target] = Column(*read, None)
    broken = []
    burn = mapping.cards.get("burn")
    if burn is not None:
        found["burn_cards"] = Column(_burnt(burn, dtypes, path, found), pl.String, None)
    for hand, listed in mapping.cards.items():
        if hand not in HANDS:
            continue
        read = _field(listed.field, dtypes)
        if read is None and not any(column in found for column in card_columns(hand)):
            raise InputError(f"{path}: the mapping reads the {hand}'s cards from field {listed.field}, which the "
                             f"log does not have (found: {', '.join(dtypes)})")
        if read is None:
            continue
        hand_cards, count = _cards(listed, *read, path)
        if listed.separator is None and read[1] == pl.String:  # text that should be a JSON array of cards
            text = read[0].str.strip_chars()
            broken.append(pl.when((text != "") & ~_json_array(text)).then(pl.format(
                f"{listed.field} '{{}}' is not a JSON array of cards (a mapping's separator splits other text)", text)))
        had = next((column for column in card_columns(hand) if column in found), None)
        if had:
            raise InputError(f"{path}: the mapping spreads {listed.field} over the {hand}'s cards, but the log has "
                             f"a {had} column already; one of them would be lost")
        found |= {column: Column(card, pl.String, None) for column, card in zip(card_columns(hand), hand_cards)}
        broken.append(pl.when(count > CARDS_PER_HAND).then(pl.format(
            f"{listed.field} lists {{}} cards; a hand holds at most {CARDS_PER_HAND}", count)))
    for column, value in mapping.constants.items():
        if column in found:
            raise InputError(f"{path}: the mapping gives {column} the constant {value!r}, but the log has a "
                             f"{column} column already; one of them would be lost")
        found[column] = Column(pl.lit(value, pl.String), pl.String, None)
    if mapping.round_id:
        if "round_id" in found:
            raise InputError(f"{path}: the mapping derives round_id, but the log has a round_id column already; "
                             "one of them would be lost")
        # Made once the columns it is made of are read as text (`derived_round_id`).
        found["round_id"] = Column(pl.lit(None, pl.String), pl.String, None)
    return found, broken


def derived_round_id(mapping: Mapping, file_name: pl.Expr) -> pl.Expr:
    """The round_id made of the columns the mapping names, as text (trimmed, translated), joined by
    '/'; null where one of them is empty, which quarantines the row as a round without an id. Its
    file is `file_name`, the name the log argument gives it (`discover.names_in_log`), not the path
    as typed: the same file gives the same ids wherever the command runs."""
    return pl.concat_str([file_name if part == "source_file" else pl.col(part).cast(pl.String)
                          for part in mapping.round_id], separator="/")


def _field(path: str, dtypes: dict[str, pl.DataType]) -> tuple[pl.Expr, pl.DataType] | None:
    """A stored field by its name, or by its dotted path into nested records; None when there is none."""
    if path in dtypes:
        return pl.col(path), dtypes[path]
    first, *rest = path.split(".")
    if first not in dtypes:
        return None
    expr, dtype = pl.col(first), dtypes[first]
    for name in rest:
        fields = {f.name: f.dtype for f in dtype.fields} if isinstance(dtype, pl.Struct) else {}
        if name not in fields:
            return None
        expr, dtype = expr.struct.field(name), fields[name]
    return expr, dtype


def _cards(listed: CardList, expr: pl.Expr, dtype: pl.DataType, path: Path) -> tuple[list[pl.Expr], pl.Expr]:
    """A hand's card columns from its list (text, a list of text, or a list of records), and how many
    cards the list holds."""
    if listed.separator is not None:
        if dtype != pl.String:
            raise InputError(f"{path}: {listed.field} is stored as {dtype}; a separator splits text")
        text = expr.str.strip_chars()
        expr = pl.when(text != "").then(text.str.split(listed.separator))
    elif dtype == pl.String:  # a JSON array written as text in a CSV field: ["4", "2"] or [4, 2]
        expr = _json_cards(expr.str.strip_chars())
    elif not isinstance(dtype, pl.List):
        raise InputError(f"{path}: {listed.field} is stored as {dtype}; expected a list of cards, text "
                         "with a separator between them, or a JSON array as text")
    each = [expr.list.get(i, null_on_oob=True) for i in range(CARDS_PER_HAND)]
    inner = dtype.inner if isinstance(dtype, pl.List) else pl.String
    if listed.rank is not None:
        fields = {f.name: f.dtype for f in inner.fields} if isinstance(inner, pl.Struct) else {}
        lacking = next((name for name in (listed.rank, listed.suit) if name not in fields), None)
        if lacking:
            raise InputError(f"{path}: {listed.field} holds {inner}; expected records with a {lacking} field")
        each = [_record_card(listed, card) for card in each]
    elif isinstance(inner, (pl.Struct, pl.List)):
        raise InputError(f"{path}: {listed.field} holds {inner}; name the rank and suit fields of its records")
    else:
        each = [card.cast(pl.String) for card in each]
    return each, expr.list.len()


def _burnt(listed: CardList, dtypes: dict[str, pl.DataType], path: Path, found: dict[str, Column]) -> pl.Expr:
    """The burn cards of the fields `listed` names, in their order, as burn_cards holds them: cards
    between spaces, null when none. Each field holds one card or a list of them: text (a card, a JSON
    array, or cards with the separator between them) or records (a rank and a suit field)."""
    fields = (listed.field,) if isinstance(listed.field, str) else listed.field
    if "burn_cards" in found:
        raise InputError(f"{path}: the mapping reads burn cards from {', '.join(fields)}, but the log has a "
                         "burn_cards column already; one of them would be lost")
    read = {name: _field(name, dtypes) for name in fields}
    if not any(read.values()):
        raise InputError(f"{path}: the mapping reads burn cards from field {', '.join(fields)}, which the log "
                         f"does not have (found: {', '.join(dtypes)})")
    none = pl.lit([], pl.List(pl.String))
    each = [_as_card_list(listed, name, *how, path).fill_null(none) for name, how in read.items() if how is not None]
    cards = pl.concat_list(each).list.eval(pl.element().filter(pl.element().str.strip_chars() != "")).list.join(" ")
    return pl.when(cards != "").then(cards)


def _as_card_list(listed: CardList, name: str, expr: pl.Expr, dtype: pl.DataType, path: Path) -> pl.Expr:
    """A burn field's cards as a list of text: one card or a list of them, as text or as records."""
    inner = dtype.inner if isinstance(dtype, pl.List) else dtype
    if isinstance(inner, pl.Struct):
        fields = {f.name for f in inner.fields}
        lacking = next((n for n in (listed.rank, listed.suit) if n is None or n not in fields), None)
        if lacking is not None or listed.rank is None:
            raise InputError(f"{path}: {name} holds {inner}; expected records with a "
                             f"{lacking or 'rank'} field (name them by rank and suit)")
        return (expr.list.eval(_record_card(listed, pl.element())) if isinstance(dtype, pl.List)
                else pl.concat_list([_record_card(listed, expr)]))
    if isinstance(dtype, pl.List):
        return expr.list.eval(pl.element().cast(pl.String))
    if dtype == pl.String and listed.separator is None:  # a JSON array as text, or one card
        text = expr.str.strip_chars()
        return pl.coalesce(_json_cards(text), pl.concat_list([text]))
    if dtype == pl.String:
        return expr.str.strip_chars().str.split(listed.separator)
    raise InputError(f"{path}: {name} is stored as {dtype}; expected a card, a list of cards or card records")


def _record_card(listed: CardList, record: pl.Expr) -> pl.Expr:
    """A card written as a record (`listed` names its rank's and suit's fields and their words) as text:
    rank then suit, "KH"."""
    return pl.concat_str(_words(record.struct.field(listed.rank).cast(pl.String), listed.ranks),
                         _words(record.struct.field(listed.suit).cast(pl.String), listed.suits))


def _json_cards(text: pl.Expr) -> pl.Expr:
    """Trimmed text written as a JSON array of cards (`_json_array`: ["4", "2"] or [4, 2]) as a list of
    their texts, empty for []; null where the text is no such array."""
    inside = text.str.strip_prefix("[").str.strip_suffix("]").str.strip_chars()
    return (pl.when(_json_array(text) & (inside != ""))
            .then(inside.str.split(",").list.eval(pl.element().str.strip_chars().str.strip_chars('"')))
            .when(_json_array(text)).then(pl.lit([], pl.List(pl.String))))


def _json_array(text: pl.Expr) -> pl.Expr:
    """Whether trimmed text is written as a JSON array of plain values (a card is no record, nor holds a comma)."""
    return text.str.starts_with("[") & text.str.ends_with("]") & ~text.str.contains(r"[{}\[\]].*[{}\[\]].*[{}\[\]]")


def translated(text: pl.Expr, otherwise: pl.Expr, table: dict[str, str | None]) -> pl.Expr:
    """`otherwise`, or where `text` is a key of `table` (not empty) its value (null too): looked up by
    the text's place among the keys (`lookup.position`), one step whatever the table's size: a chain of
    whens, one a key, grew the plan as the square of the keys (docs/performance.md)."""
    keys = sorted(key for key in table if key != "")
    if not keys:
        return otherwise
    found = position(text, keys)
    values = pl.Series([table[key] for key in keys], dtype=pl.String)
    return pl.when(found.is_not_null()).then(pl.lit(values).gather(found)).otherwise(otherwise)


def _words(text: pl.Expr, table: dict[str, str | None]) -> pl.Expr:
    """`text` trimmed, with the table's words in its place (a suit's "hearts" as H)."""
    text = text.str.strip_chars()
    return translated(text, text, table)


def gross_paid(paid: pl.Expr, stake: pl.Expr) -> pl.Expr:
    """A payout written net (the winnings: a lost bet -stake, a push 0) as the audit reads payouts,
    gross (the stake included), exact text; as written where either is not an amount, for the
    settlement to quarantine as it would."""
    amount = AMOUNT.removeprefix("^")
    both = paid.str.contains(f"^-?{amount}") & stake.str.contains(AMOUNT)
    scale = pl.Decimal(20, 4)
    gross = (paid.cast(scale, strict=False) + stake.cast(scale, strict=False)).cast(pl.String)
    # "195.0000" as "195", "94.7500" as "94.75"
    return pl.when(both).then(gross.str.strip_chars_end("0").str.strip_chars_end(".")).otherwise(paid)
