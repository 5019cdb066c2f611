"""Rules profiles as files: a shipped one by its name (`schemas/profiles/NAME.toml`), a house's own by
its path (`--profile PATH.toml`) or its folder (`--profiles-dir`), read once, merged over the bases
they name (a house file's base looked for beside it first, then among the shipped ones) and checked
by the rules core (`profiles.of_settings`); each file's SHA-256 for a run's provenance."""

from __future__ import annotations

import hashlib
import tomllib
from functools import cache
from pathlib import Path

from ..errors import InputError
from ..folders import SCHEMAS
from ..rules import profiles
from ..rules.profiles import Profile

PROFILES = SCHEMAS / "profiles"


def available() -> list[str]:
    return sorted(path.stem for path in PROFILES.glob("*.toml"))


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
        data = profiles.checked_file(path, tomllib.loads(path.read_bytes().decode("utf-8")))
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{path}: not valid TOML ({error})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not valid TOML (not UTF-8 text)") from None
    except RecursionError:
        raise InputError(f"{path}: not a rules profile (nested too deeply)") from None
    if "base" not in data:
        return data, (path,)
    house = None if path.parent == PROFILES else path.parent
    base, files = _read(str(data["base"]), (*seen, path), house)
    return profiles.merged(base, data), (path, *files)


@cache
def load(reference: str) -> Profile:
    """The profile a shipped name or a file names, merged over its bases and checked; an InputError
    names what is wrong."""
    data, files = _read(reference)
    return profiles.of_settings(data, files, reference)


def sha256(profile: Profile) -> dict[str, str]:
    """Each file of `profile` (shipped ones by their place in the package) and its SHA-256."""
    return {str(path.relative_to(SCHEMAS.parent) if path.is_relative_to(SCHEMAS.parent) else path):
            hashlib.sha256(path.read_bytes()).hexdigest() for path in profile.files}
