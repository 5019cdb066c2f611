"""Rules profiles: a table's game and pay table, read from `schemas/profiles/NAME.toml`.

A profile may name a `base` profile and override parts of it, the way a variant is the standard game
with a few rules changed. Pays are decimal text "to 1"; nothing here is a float.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path

from .errors import InputError
from .ingest import SCHEMAS

PROFILES = SCHEMAS / "profiles"
ROUNDING_MODES = ("exact", "player", "house", "nearest")
DEFAULT = "standard"


@dataclass(frozen=True)
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

    @property
    def sha256(self) -> dict[str, str]:
        return {str(path.relative_to(SCHEMAS.parent)): hashlib.sha256(path.read_bytes()).hexdigest()
                for path in self.files}


def available() -> list[str]:
    return sorted(path.stem for path in PROFILES.glob("*.toml"))


def _merge(base: dict, override: dict) -> dict:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merge(base[key], value) if isinstance(value, dict) and key in base else value
    return merged


def _read(name: str, seen: tuple[str, ...] = ()) -> tuple[dict, tuple[Path, ...]]:
    path = PROFILES / f"{name}.toml"
    if name not in available():  # a name, not a path: "../profiles/standard" would reach a file
        raise InputError(f"unknown rules profile {name!r} (known: {', '.join(available())}; "
                         f"a profile is a file {PROFILES}/NAME.toml)")
    if name in seen:
        raise InputError(f"{path}: profile bases form a loop ({' -> '.join((*seen, name))})")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{path}: not valid TOML ({error})") from None
    if "base" not in data:
        return data, (path,)
    base, files = _read(data["base"], (*seen, name))
    return _merge(base, data), (path, *files)


def _amount(path: Path, key: str, text: object) -> Decimal | str:
    if text == "push":
        return "push"
    try:
        value = Decimal(str(text))
    except InvalidOperation:
        raise InputError(f"{path}: {key} = {text!r} is not a decimal amount or \"push\"") from None
    if not value.is_finite() or value < 0 or value != value.quantize(Decimal("0.0001")):
        raise InputError(f"{path}: {key} = {text!r} must be 0 or more with at most 4 decimals")
    return value


def _unit(path: Path, text: object) -> Decimal:
    unit = _amount(path, "rounding.unit", text)
    if unit == "push" or unit <= 0:
        raise InputError(f"{path}: rounding.unit = {text!r} must be a positive amount")
    return unit


@cache
def load(name: str) -> Profile:
    """The named profile, merged over its bases and checked; an InputError names what is wrong."""
    data, files = _read(name)
    path = files[0]
    try:
        mode = data["rounding"]["mode"]
        if mode not in ROUNDING_MODES:
            raise InputError(f"{path}: rounding.mode {mode!r} is not one of {', '.join(ROUNDING_MODES)}")
        bonus = data.get("dragon_bonus")
        if bonus is not None:
            bonus = {"natural_win": bonus["natural_win"], "natural_tie": bonus["natural_tie"]} | {
                f"win_by_{margin}": pay for margin, pay in bonus["win_by"].items()
            }
        return Profile(
            name=data["name"],
            description=data.get("description", ""),
            decks=int(data["decks"]),
            commission=_amount(path, "commission.rate", data["commission"]["rate"]),
            rounding_mode=mode,
            rounding_unit=_unit(path, data["rounding"]["unit"]),
            pays={bet: _amount(path, f"pays.{bet}", pay) for bet, pay in data["pays"].items()},
            banker_win={k: _amount(path, f"banker_win.{k}", v) for k, v in data.get("banker_win", {}).items()},
            dragon_bonus=None if bonus is None else {
                k: _amount(path, f"dragon_bonus.{k}", v) for k, v in bonus.items()
            },
            files=files,
        )
    except KeyError as missing:
        raise InputError(f"{path}: required setting {missing} missing") from None
