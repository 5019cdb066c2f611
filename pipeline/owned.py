"""What the tool wrote into a folder, and so may replace or remove: the folder's manifest.

A run that publishes into a folder lists every file it puts there (paths relative to the folder) in
MANIFEST, each with its size and modification time. The manifest is rewritten before the first output
is moved in, vouching for both versions of every file the publish replaces (the old and the new), and
again once the last is in place, listing the new: a run killed at any moment leaves no file of its own
unlisted, and the next run takes over by itself. Anything not listed as it is now is someone else's:
the tool never removes or replaces it, and a run whose output name it holds stops before reading
anything (`claim`). An entry that would lead out of the folder (`..`, an absolute path, a link on the
way) is never followed. One run at a time writes into a folder (`locked`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .errors import InputError

MANIFEST = ".baccarat-audit.json"
TOOL = "baccarat-audit"
#: Hidden names of a run under way (`stops.run_folder` makes `PREFIX` + 12 hex digits) and of files
#: written beside their final name then renamed (`_written_beside`): a run killed outright leaves them.
LEFTOVER = re.compile(r"^\.(audit-[0-9a-f]{12}|(baccarat-audit\.json|report\.html)(\.[a-z0-9_]{8})?\.tmp)$")
LOCK = ".lock"  # held by a live run in its staging folder, so that another run does not remove it

_UMASK = os.umask(0o022)  # read once (setting it is the only way), and put back at once
os.umask(_UMASK)

Stamp = tuple[int, int]  # a file's size and modification time (ns): what tells it from one put in its place


def _inside(name: object) -> bool:
    """Whether a manifest entry names a path below the folder, written plainly: relative, with no
    `..`, `.` or empty part (anything else is not what the tool writes, and is never followed)."""
    if not isinstance(name, str) or not name or "\0" in name or "\\" in name:
        return False
    parts = name.split("/")
    return all(part not in ("", ".", "..") for part in parts)


def _stamps(entry: object) -> set[Stamp]:
    """The versions a manifest entry vouches for: `[size, mtime]`, or a list of them while a publish
    is under way."""
    def one(stamp: object) -> Stamp | None:
        ok = isinstance(stamp, list) and len(stamp) == 2 and all(type(n) is int for n in stamp)
        return (stamp[0], stamp[1]) if ok else None
    if (single := one(entry)) is not None:
        return {single}
    return {found for s in entry if (found := one(s)) is not None} if isinstance(entry, list) else set()


def listed(folder: Path) -> dict[str, set[Stamp]]:
    """The files the manifest of `folder` lists, each with the versions it vouches for (none when it
    has no readable manifest of this tool). Entries that would lead out of the folder are left out."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    if not (isinstance(data, dict) and data.get("tool") == TOOL and isinstance(data.get("files"), dict)):
        return {}
    return {name: stamps for name, entry in data["files"].items() if _inside(name) and (stamps := _stamps(entry))}


def _stamp(path: Path) -> Stamp:
    found = path.stat()
    return (found.st_size, found.st_mtime_ns)


def _written_beside(target: Path, text: str | Callable[[BinaryIO], None]) -> Path:
    """`text` (or what `text` writes to the open file) in a new hidden file beside `target`, made with
    O_EXCL under a random name: never written through a link someone left there."""
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name.lstrip('.')}.", suffix=".tmp")
    os.fchmod(handle, 0o666 & ~_UMASK)  # as any file the run writes, not mkstemp's owner-only 0600
    with os.fdopen(handle, "wb") as staged:
        if callable(text):
            text(staged)
        else:
            staged.write(text.encode("utf-8"))
    return Path(name)


def _write(folder: Path, files: dict[str, set[Stamp]]) -> None:
    entries = {name: [list(s) for s in sorted(stamps)] if len(stamps) > 1 else list(next(iter(stamps)))
               for name, stamps in sorted(files.items())}
    staged = _written_beside(folder / MANIFEST, json.dumps({"tool": TOOL, "files": entries}, indent=1) + "\n")
    os.replace(staged, folder / MANIFEST)


def _merged(*manifests: dict[str, set[Stamp]]) -> dict[str, set[Stamp]]:
    """Every version any of `manifests` vouches for, name by name."""
    merged: dict[str, set[Stamp]] = {}
    for files in manifests:
        for name, stamps in files.items():
            merged[name] = merged.get(name, set()) | stamps
    return merged


def _ours(folder: Path, name: str, ours: dict[str, set[Stamp]]) -> bool:
    """Whether `folder/name` is a plain file the manifest vouches for as it is now, reached through
    real folders only (no link on the way out of `folder`)."""
    path = folder
    for part in name.split("/")[:-1]:
        path = path / part
        if path.is_symlink() or not path.is_dir():
            return False
    path = folder / name
    return not path.is_symlink() and path.is_file() and _stamp(path) in ours.get(name, set())


def files_below(folder: Path, name: str) -> list[str]:
    """`name` (a file, or a folder: every file below it) as paths relative to `folder`."""
    top = folder / name
    if not top.is_dir():
        return [name]
    return sorted(str(Path(parent, file).relative_to(folder)) for parent, _, files in os.walk(top) for file in files)


def _foreign(folder: Path, name: str, ours: dict[str, list[int]]) -> Path | None:
    """The first path at or below `folder/name` that is not a file the manifest lists as it is now
    (None when all are)."""
    top = folder / name
    if not os.path.lexists(top):
        return None
    if top.is_symlink() or not (top.is_file() or top.is_dir()):
        return top
    if top.is_file():
        return None if _ours(folder, name, ours) else top
    for parent, folders, files in os.walk(top):
        for entry in sorted([*folders, *files]):
            path = Path(parent, entry)
            if path.is_symlink() or not (path.is_dir() or _ours(folder, str(path.relative_to(folder)), ours)):
                return path
    return None


def claim(folder: Path, names: Iterable[str]) -> None:
    """An InputError naming the first thing at one of `names` in `folder` (or below it) that this
    tool did not write there: replacing it would destroy it."""
    ours = listed(folder)
    for name in names:
        found = _foreign(folder, name, ours)
        if found is not None:
            raise InputError(f"{found}: not written by {TOOL}, and the run writes {folder / name}; "
                             "move it away or give another output directory")


def clean_leftovers(folder: Path) -> None:
    """Remove what runs killed outright left in `folder`: their staging folders (those no live run
    holds locked) and half-written files (`LEFTOVER`)."""
    if not folder.is_dir():
        return
    for entry in folder.iterdir():
        if not LEFTOVER.match(entry.name) or entry.is_symlink():
            continue
        if entry.is_dir():
            with _unlocked(entry) as dead:
                if dead:
                    shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


@contextmanager
def _unlocked(staging: Path) -> Iterator[bool]:
    """Whether no live run holds `staging` (its lock taken here for the block, so none starts to)."""
    try:
        handle = (staging / LOCK).open("a")
    except OSError:
        yield not any(staging.iterdir()) if staging.is_dir() else False
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True


def hold(staging: Path) -> object:
    """Lock `staging` for as long as the returned handle is open: the mark of a live run."""
    handle = (staging / LOCK).open("w")
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def _remove(folder: Path, files: Iterable[str], ours: dict[str, set[Stamp]]) -> None:
    """Remove those of `files` that are in `folder` as the manifest vouches for them (`_ours`), then
    every folder they leave empty; anything else stays where it is."""
    emptied = set()
    for name in files:
        if _ours(folder, name, ours):
            (folder / name).unlink()
        parent = (folder / name).parent
        while parent != folder and folder in parent.parents:
            emptied.add(parent)
            parent = parent.parent
    for parent in sorted(emptied, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):  # not empty, or not a folder: it holds something not ours, which stays
            if not parent.is_symlink():
                parent.rmdir()


def replace_file(target: Path, text: str | Callable[[BinaryIO], None]) -> None:
    """Write `text` (or let it write, given the open file) to `target` (whose place `claim` has
    checked) beside it, then move it in, listed (where the folder has a manifest) as both versions until
    the move is done."""
    folder = target.parent
    ours = listed(folder)
    staged = _written_beside(target, text)
    if ours:
        _write(folder, _merged(ours, {target.name: {_stamp(staged)}}))
    os.replace(staged, target)
    if ours:
        _write(folder, ours | {target.name: {_stamp(target)}})


def publish(staging: Path, folder: Path, names: Iterable[str], last: str | None = None) -> None:
    """Move `names` (files or folders, those that exist in `staging`) into `folder`, `last` (if
    given) after the others, replacing what earlier runs listed under those names and removing what
    they listed there that this run did not write; what the manifest lists under other names stays.
    `last` (summary.json) is removed first: outputs of two runs are never beside one. Until the last
    move is done the manifest vouches for the old files and the new alike."""
    names = [name for name in names if name != last]
    every = [*names, *([last] if last else [])]
    claim(folder, every)  # again: something may have come since the run started
    old = listed(folder)
    mine = {file for file in old if any(file == name or file.startswith(f"{name}/") for name in every)}
    new = {file: {_stamp(staging / file)} for name in every if (staging / name).exists()
           for file in files_below(staging, name)}  # a rename keeps both
    _write(folder, _merged(old, new))
    if last in old:
        _remove(folder, [last], old)
    for name in names:
        _remove(folder, [file for file in mine if file == name or file.startswith(f"{name}/")], old)
        if (staging / name).exists():
            if os.path.lexists(folder / name):  # a folder still holding what is not ours (`claim`)
                raise InputError(f"{folder / name}: holds files not written by {TOOL}; move them away")
            os.replace(staging / name, folder / name)
    if last and (staging / last).exists():
        os.replace(staging / last, folder / last)
    _write(folder, {file: stamps for file, stamps in old.items() if file not in mine} | new)


@contextmanager
def locked(folder: Path, cannot: str) -> Iterator[None]:
    """Hold `folder` for one run's writes, from its first check to its last move: an InputError at
    once when another run holds it. The lock is on the folder itself (flock), so no file is left behind
    and a killed run's lock ends with its process. The folder is made if need be, and removed again if
    the run leaves it empty (a run refused). An InputError, `cannot` and the reason, when it cannot be
    made or opened."""
    folder = Path(folder)
    made = [parent for parent in [folder, *folder.parents] if not os.path.lexists(parent)]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as error:
        raise InputError(f"{cannot} ({error.strerror})") from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise InputError(f"{folder}: another audit is writing {folder}; wait for it to end, or give "
                             "another output directory") from None
        yield
    finally:
        os.close(handle)
        for parent in made:  # innermost first; one that holds anything stays
            with contextlib.suppress(OSError):
                parent.rmdir()
