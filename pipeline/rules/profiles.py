"""Rules profiles: a table's game and pay table, as a profile's settings state them (`of_settings`).

A profile may name a `base` profile and override parts of it, the way a variant is the standard game
with a few rules changed. Pays are decimal text "to 1"; nothing here is a float. Where the settings
come from (`schemas/profiles/NAME.toml`, a house's own file) is `inputs.profile_files`': this module
reads no file.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path

from ..errors import InputError

ROUNDING_MODES = ("exact", "player", "house", "nearest")
DEFAULT = "standard"
DECKS = range(1, 9)  # a shoe of one to eight decks
#: The bet types a profile's `[pays]` pays; the Dragon Bonus bets are paid by its `[dragon_bonus]`.
PAYS = ("PLAYER", "BANKER", "TIE", "PLAYER_PAIR", "BANKER_PAIR", "DRAGON_7", "PANDA_8", "SUPER_6")
BONUS_MARGINS = (9, 8, 7, 6, 5, 4)  # the wins by so many points that the Dragon Bonus pays
#: Each table of settings a profile file may hold, with the settings it takes; besides them, `decks`
#: and the texts `name`, `base` and `description`.
TABLES = {"commission": ("rate",), "rounding": ("mode", "unit"), "pays": PAYS,
          "banker_win": ("with_6", "three_card_7"), "dragon_bonus": ("natural_win", "natural_tie", "win_by")}
TEXTS = ("name", "base", "description")
#: The largest amount a profile states (a pay "to 1", a rounding unit): past any table's, and within
#: what the settlement's exact integers hold.
MOST = Decimal(1_000_000)


#: Compared (and cached, `bets.returns`) as itself: a profile is read once per name (`profile_files.load`).
@dataclass(frozen=True, eq=False)
class Profile:
    name: str
    description: str
    decks: int
    commission: Decimal
    rounding_mode: str
    rounding_unit: Decimal
    pays: dict[str, Decimal | str]  # bet type -> pay "to 1" (or "push")
    banker_win: dict[str, Decimal | str]  # special Banker wins: with_6, three_card_7
    dragon_bonus: dict[str, Decimal | str] | None  # natural_win, natural_tie, win_by_N
    files: tuple[Path, ...]  # the profile file and its bases, for provenance
    reference: str  # as it was named: a shipped name, or a house file's path


def merged(base: dict, override: dict) -> dict:
    """A profile's settings over those of its base: a table (of TOML) merged key by key, any other
    value replaced."""
    settings = dict(base)
    for key, value in override.items():
        settings[key] = merged(base[key], value) if isinstance(value, dict) and key in base else value
    return settings


def _amount(path: Path, key: str, text: object) -> Decimal | str:
    if text == "push":
        return "push"
    try:
        value = Decimal(str(text))
    except InvalidOperation:
        raise InputError(f"{path}: {key} = {text!r} is not a decimal amount or \"push\"") from None
    # Bounded before it is rounded: a decimal of hundreds of digits cannot be rounded to 4 places.
    if not value.is_finite() or not 0 <= value <= MOST or value != value.quantize(Decimal("0.0001")):
        raise InputError(f"{path}: {key} = {text!r} must be from 0 to {MOST:,} with at most 4 decimals")
    return value


def _commission(path: Path, text: object) -> Decimal:
    rate = _amount(path, "commission.rate", text)
    if rate == "push" or rate >= 1:
        raise InputError(f"{path}: commission.rate = {text!r} must be a rate below 1 (0.05 is 5%)")
    return rate


def checked_file(path: Path, data: dict) -> dict:
    """One profile file's own settings, before its base's are merged in (`merged`): a setting it does
    not know, or a table that is not one, is an InputError naming the file. A misspelt setting would
    leave its base's value in force unseen (`deck = 6` for `decks`, `TEI` for `TIE`)."""
    for key, value in data.items():
        if key in TEXTS:
            if not isinstance(value, str):
                raise InputError(f"{path}: {key} = {value!r} must be text")
        elif key == "decks":
            _decks(path, value)
        elif key in TABLES:
            takes = TABLES[key]
            if not isinstance(value, dict):
                raise InputError(f"{path}: {key} = {value!r} must be a table: [{key}] with {', '.join(takes)}")
            for name, setting in value.items():
                if name not in takes:
                    raise InputError(f"{path}: {key}.{name} is not a setting ([{key}] takes {', '.join(takes)})")
                if name == "win_by":
                    margins = tuple(map(str, BONUS_MARGINS))
                    if not isinstance(setting, dict) or any(margin not in margins for margin in setting):
                        raise InputError(f"{path}: dragon_bonus.win_by = {setting!r} must be a table of wins "
                                         f"by {', '.join(margins)} points and their pays")
                elif isinstance(setting, (dict, list)):
                    raise InputError(f"{path}: {key}.{name} = {setting!r} must be one value")
        else:
            raise InputError(f"{path}: {key!r} is not a setting (settings: decks, {', '.join(TEXTS)}, "
                             f"and the tables {', '.join(TABLES)})")
    return data


def _decks(path: Path, decks: object) -> int:
    if not (isinstance(decks, int) and not isinstance(decks, bool) and decks in DECKS):
        raise InputError(f"{path}: decks = {decks!r} must be a whole number from {DECKS[0]} to {DECKS[-1]}")
    return decks


def _unit(path: Path, text: object) -> Decimal:
    unit = _amount(path, "rounding.unit", text)
    if unit == "push" or unit <= 0:
        raise InputError(f"{path}: rounding.unit = {text!r} must be a positive amount")
    return unit


def of_settings(data: dict, files: tuple[Path, ...], reference: str) -> Profile:
    """The profile `data` sets (merged over its bases: `merged`), read from `files` (the first its
    own, named in what is wrong) as `reference` names it, checked; an InputError names what is wrong."""
    path = files[0]
    try:
        decks = _decks(path, data["decks"])
        mode = data["rounding"]["mode"]
        if mode not in ROUNDING_MODES:
            raise InputError(f"{path}: rounding.mode {mode!r} is not one of {', '.join(ROUNDING_MODES)}")
        bonus = data.get("dragon_bonus")
        if bonus is not None:
            unpaid = [str(margin) for margin in BONUS_MARGINS if str(margin) not in bonus["win_by"]]
            if unpaid:
                raise InputError(f"{path}: dragon_bonus.win_by pays no win by {', '.join(unpaid)}")
            bonus = {"natural_win": bonus["natural_win"], "natural_tie": bonus["natural_tie"]} | {
                f"win_by_{margin}": pay for margin, pay in bonus["win_by"].items()
            }
        return Profile(
            name=data["name"],
            description=data.get("description", ""),
            decks=decks,
            commission=_commission(path, data["commission"]["rate"]),
            rounding_mode=mode,
            rounding_unit=_unit(path, data["rounding"]["unit"]),
            pays={bet: _amount(path, f"pays.{bet}", pay) for bet, pay in data["pays"].items()},
            banker_win={k: _amount(path, f"banker_win.{k}", v) for k, v in data.get("banker_win", {}).items()},
            dragon_bonus=None if bonus is None else {
                k: _amount(path, f"dragon_bonus.{k}", v) for k, v in bonus.items()
            },
            files=files,
            reference=reference,
        )
    except KeyError as missing:
        raise InputError(f"{path}: required setting {missing} missing") from None
