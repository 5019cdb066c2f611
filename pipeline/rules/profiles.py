"""Rules profiles: a table's game and pay table, read from `schemas/profiles/NAME.toml`, or from a
house's own file (`--profile PATH.toml`).

A profile may name a `base` profile and override parts of it, the way a variant is the standard game
with a few rules changed; a house file's base is looked for beside it first, then among the shipped
ones. Pays are decimal text "to 1"; nothing here is a float.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from pathlib import Path

from ..errors import InputError
from ..folders import SCHEMAS

PROFILES = SCHEMAS / "profiles"
ROUNDING_MODES = ("exact", "player", "house", "nearest")
DEFAULT = "standard"
DECKS = range(1, 9)  # a shoe of one to eight decks


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
    reference: str  # as `load` was given it: a shipped name, or a house file's path

    @property
    def sha256(self) -> dict[str, str]:
        """Each file of the profile (shipped ones by their place in the package) and its SHA-256."""
        return {str(path.relative_to(SCHEMAS.parent) if path.is_relative_to(SCHEMAS.parent) else path):
                hashlib.sha256(path.read_bytes()).hexdigest() for path in self.files}


def available() -> list[str]:
    return sorted(path.stem for path in PROFILES.glob("*.toml"))


def _merge(base: dict, override: dict) -> dict:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merge(base[key], value) if isinstance(value, dict) and key in base else value
    return merged


def is_file(reference: str) -> bool:
    """Whether a profile is named by its file (a house's own: `--profile PATH.toml`), not by a shipped name."""
    return reference.endswith(".toml") or "/" in reference


def in_folder(folder: Path) -> dict[str, str]:
    """A house's profiles (`--profiles-dir`): each NAME.toml of `folder` by its NAME, as the reference
    to its file that `load` takes; the log's `profile` column names them (see `ingest.with_profiles`)."""
    if not Path(folder).is_dir():
        raise InputError(f"{folder}: no such profiles folder")
    return {path.stem: str(path.resolve()) for path in sorted(Path(folder).glob("*.toml"))}


def _path_of(reference: str, beside: Path | None) -> Path:
    """The file of a profile: a house file as named; a base beside the file that names it, when there
    is one; else a shipped profile, by name only ("../profiles/standard" would reach another file)."""
    if is_file(reference):
        path = Path(reference)
        if not path.is_file():
            raise InputError(f"{reference}: no such rules profile file")
        return path.resolve()
    if beside is not None and (beside / f"{reference}.toml").is_file():
        return (beside / f"{reference}.toml").resolve()
    if reference not in available():
        raise InputError(f"unknown rules profile {reference!r} (known: {', '.join(available())}; "
                         f"a profile is a file {PROFILES}/NAME.toml, or your own: --profile PATH.toml)")
    return PROFILES / f"{reference}.toml"


def _read(reference: str, seen: tuple[Path, ...] = (), beside: Path | None = None) -> tuple[dict, tuple[Path, ...]]:
    path = _path_of(reference, beside)
    if path in seen:
        raise InputError(f"{path}: profile bases form a loop ({' -> '.join(p.stem for p in (*seen, path))})")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{path}: not valid TOML ({error})") from None
    if "base" not in data:
        return data, (path,)
    house = None if path.parent == PROFILES else path.parent
    base, files = _read(str(data["base"]), (*seen, path), house)
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
def load(reference: str) -> Profile:
    """The profile a shipped name or a file names, merged over its bases and checked; an InputError
    names what is wrong."""
    data, files = _read(reference)
    path = files[0]
    try:
        decks = data["decks"]
        if not (isinstance(decks, int) and not isinstance(decks, bool) and decks in DECKS):
            raise InputError(f"{path}: decks = {decks!r} must be a whole number from {DECKS[0]} to {DECKS[-1]}")
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
            decks=decks,
            commission=_amount(path, "commission.rate", data["commission"]["rate"]),
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
