"""Discover: the files a log argument names (a file, a folder walked, a glob, a list), and every entry
of its folders that is not read, with why: a nightly job must not lose a log unseen. An audit's own
outputs are told from logs by the manifest of the folder they are in (`owned`)."""

from __future__ import annotations

import errno
import glob
import itertools
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from . import json_records, lines
from .. import owned
from ..errors import InputError


LOG_SUFFIXES = {".csv", ".txt", ".parquet", ".pq"}
TEXT_SUFFIXES = {".csv", ".txt"}


def text_suffix(path: Path) -> str:
    """A CSV file's suffix, that of its name under a compression suffix: `night.csv.gz` is `.csv`."""
    suffix = path.suffix.lower()
    return Path(path.stem).suffix.lower() if suffix in lines.COMPRESSED_SUFFIXES else suffix


def is_log_name(path: Path) -> bool:
    """Whether a file in a folder is read as a log, by its name: CSV or JSON Lines (compressed too), or
    Parquet. A JSON array file is read when named: a folder's .json files are more often not logs."""
    return path.suffix.lower() in LOG_SUFFIXES or text_suffix(path) in TEXT_SUFFIXES | json_records.SUFFIXES


#: An audit's own outputs, and its Data Docs folder.
AUDIT_SUMMARY = "summary.json"
AUDIT_OPEN_SHOES = "open_shoes.parquet"
AUDIT_OUTPUTS = ("findings.parquet", "quarantine.parquet", "bets_quarantine.parquet", "fairness.parquet",
                 "evidence.json", AUDIT_SUMMARY, "report.html", "flagged_rounds.csv", "flagged_bets.csv",
                 AUDIT_OPEN_SHOES)
AUDIT_DOCS = "contract"

NOT_A_LOG = f"not a log ({', '.join(sorted(LOG_SUFFIXES))}, or .csv and .txt with .gz or .zst)"


@dataclass(frozen=True)
class Found:
    """What a log argument names: its files, and every entry of its folders that is not read, with why."""

    files: list[Path]
    unread: list[tuple[Path, str]]


def _ours(folder: Path, name: str) -> bool:
    """Whether `name` in `folder` is an audit's output, not a log: an output's name that the folder's
    manifest lists (a file, or the first folder of a path), the manifest itself, or what a killed run
    left (`owned.LEFTOVER`). A log `generate` wrote is listed too, and is a log."""
    return (name == owned.MANIFEST or owned.LEFTOVER.match(name) is not None
            or name in (*AUDIT_OUTPUTS, AUDIT_DOCS)
            and any(listed.split("/", 1)[0] == name for listed in owned.listed(folder)))


def _names(folder: Path) -> list[str]:
    """The entries of `folder`; an InputError when it cannot be listed: the logs in it would be lost."""
    try:
        return sorted(os.listdir(folder))
    except OSError as error:
        raise InputError(f"{folder}: the folder cannot be listed ({error.strerror}); its logs would go unread")


def _walk(folder: Path, found: Found, seen: set[tuple[int, int]]) -> None:
    """Every entry below `folder`, into `found`: a log file read, anything else named with why (an
    output of this tool, hidden, a link that leads nowhere or back to a folder already walked, not a
    regular file, a path too long to open, not a log). Links to folders are followed."""
    for name in _names(folder):
        path = folder / name
        try:
            status = path.stat()
        except FileNotFoundError:
            found.unread.append((path, "a link that leads nowhere"))
            continue
        except OSError as error:
            why = "the path is too long to open" if error.errno == errno.ENAMETOOLONG else error.strerror
            found.unread.append((path, why or "cannot be opened"))
            continue
        if _ours(folder, name):
            found.unread.append((path, "written by baccarat-audit"))
        elif name.startswith("."):
            found.unread.append((path, "hidden"))
        elif stat.S_ISDIR(status.st_mode):
            if (status.st_dev, status.st_ino) in seen:
                found.unread.append((path, "a link back to a folder already read"))
            else:
                seen.add((status.st_dev, status.st_ino))
                _walk(path, found, seen)
        elif not stat.S_ISREG(status.st_mode):
            found.unread.append((path, "not a regular file (a FIFO, socket or device)"))
        elif is_log_name(path):
            found.files.append(path)
        else:
            found.unread.append((path, NOT_A_LOG))


def _below(folder: Path) -> Found:
    """Every log file below `folder` and every other entry with why it is not read (see `_walk`)."""
    found = Found([], [])
    top = folder.stat()
    _walk(folder, found, {(top.st_dev, top.st_ino)})
    return found


def _written_here(path: Path) -> bool:
    """Whether `path` is an audit's output (see `_ours`), by the manifest of its folder or one above."""
    return any(_ours(parent, path.relative_to(parent).parts[0]) for parent in path.parents)


def expand(inputs: Path | str | list) -> tuple[Path, list[Path], list[tuple[Path, str]]]:
    """The files a log argument names: a file, a directory (every CSV/Parquet file below it, Hive
    folders included, links to folders followed), a glob (less this tool's outputs), or a list of any
    of these. Returns a label, the files, and every other entry of its directories with why it is not
    read (see `_walk`): named in the summary so that a nightly job does not lose a log unseen.

    A name that exists is read as itself: `night[1].csv`, a file, is not the pattern matching night1.csv."""
    items = inputs if isinstance(inputs, (list, tuple)) else [inputs]
    files: list[Path] = []
    unread: list[tuple[Path, str]] = []
    for item in map(str, items):
        path = Path(item)
        if not os.path.lexists(path) and any(ch in item for ch in "*?["):
            matched = sorted(Path(p) for p in glob.glob(item, recursive=True)
                             if Path(p).is_file() and not _written_here(Path(p).absolute()))
            if not matched:
                raise InputError(f"{item}: no file matches")
            files += matched
        elif path.is_dir():
            below = _below(path)
            if not below.files:
                raise InputError(f"{path}: the directory holds no .csv, .jsonl or .parquet file")
            files += below.files
            unread += below.unread
        else:
            files.append(path)
    label = Path(str(items[0])) if len(items) == 1 else Path(f"{items[0]} (+{len(items) - 1} more)")
    # A file named twice (by another path, or a link) is read once: twice, each round would be a duplicate.
    # The other names are listed with what they name, so that none goes unread unseen.
    once: dict[object, Path] = {}
    for path in files:
        first = once.setdefault(_identity(path), path)
        if first is not path:
            unread.append((path, f"the same file as {first}, read once"))
    return label, list(once.values()), unread


def names_in_log(inputs: Path | str | list) -> dict[str, str]:
    """Each file of a log argument (as `expand` lists it) by the name a round_id derived of its file
    takes: its path below the folder named, or below the fixed part of a glob, or else its own name.
    The same file gives the same ids wherever the command runs and however its path was typed."""
    names: dict[str, str] = {}
    for item in map(str, inputs if isinstance(inputs, (list, tuple)) else [inputs]):
        path = Path(item)
        if not os.path.lexists(path) and any(ch in item for ch in "*?["):
            fixed = Path(*itertools.takewhile(lambda part: not any(ch in part for ch in "*?["), path.parts))
            for found in map(Path, glob.glob(item, recursive=True)):
                names.setdefault(str(found), str(found.relative_to(fixed)))
        elif path.is_dir():
            for found in _below(path).files:
                names.setdefault(str(found), str(found.relative_to(path)))
        else:
            names.setdefault(str(path), path.name)
    return names


def _identity(path: Path) -> object:
    """What tells files apart however they are named: the device and inode (a link's, its target's;
    as `os.path.samefile`), cheaper than resolved paths. A file that cannot be found is its path, for
    `format_of` to say so; one whose file system numbers no inode (FAT, some network shares) its
    resolved path."""
    try:
        found = path.stat()
    except OSError:
        return path
    return (found.st_dev, found.st_ino) if found.st_ino else path.resolve()


def hive_values(path: Path) -> dict[str, str]:
    """key=value folders above a file (Hive partitioning), as column values. Hive and Spark write a
    value's `:`, `/`, `%` and the like as %XX (`table_id=VIP%3A1` for VIP:1), and polars reads them so."""
    return dict(map(unquote, part.split("=", 1)) for part in path.parent.parts if "=" in part)
