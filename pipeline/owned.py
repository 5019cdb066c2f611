"""What the tool wrote into a folder, and so may replace or remove: the folder's manifest.

A run that publishes into a folder lists every file it puts there (paths relative to the folder) in
MANIFEST. The manifest is rewritten before the first output is moved in, listing the old outputs and
the new, and again once the last is in place, listing the new: a run killed at any moment leaves no
file of its own unlisted. Anything not listed is someone else's: the tool never removes or replaces
it, and a run whose output name it holds stops before reading anything (`claim`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import InputError

MANIFEST = ".baccarat-audit.json"
TOOL = "baccarat-audit"
#: Hidden names of a run under way (`stops.run_folder` makes `PREFIX` + 12 hex digits) and of files
#: written beside their final name then renamed: a run killed outright leaves them behind.
LEFTOVER = re.compile(r"^\.(audit-[0-9a-f]{12}|baccarat-audit\.json\.tmp|report\.html\.tmp)$")
LOCK = ".lock"  # held by a live run in its staging folder, so that another run does not remove it


def listed(folder: Path) -> dict[str, list[int]]:
    """The files the manifest of `folder` lists, each with its size and modification time as written
    (none when it has no readable manifest of this tool)."""
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not (isinstance(data, dict) and data.get("tool") == TOOL and isinstance(data.get("files"), dict)):
        return {}
    return {name: stamp for name, stamp in data["files"].items() if isinstance(stamp, list)}


def _stamp(path: Path) -> list[int]:
    """What tells a file the tool wrote from one put in its place since: its size and modification time."""
    found = path.stat()
    return [found.st_size, found.st_mtime_ns]


def _write(folder: Path, files: dict[str, list[int]]) -> None:
    staged = folder / f"{MANIFEST}.tmp"
    staged.write_text(json.dumps({"tool": TOOL, "files": dict(sorted(files.items()))}, indent=1) + "\n",
                      encoding="utf-8")
    os.replace(staged, folder / MANIFEST)


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
        return None if ours.get(name) == _stamp(top) else top
    for parent, folders, files in os.walk(top):
        for entry in sorted([*folders, *files]):
            path = Path(parent, entry)
            if path.is_symlink() or not (path.is_dir() or ours.get(str(path.relative_to(folder))) == _stamp(path)):
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


def _remove(folder: Path, files: Iterable[str]) -> None:
    """Remove the listed `files` from `folder`, then every folder they leave empty."""
    emptied = set()
    for name in files:
        path = folder / name
        if path.is_file() and not path.is_symlink():
            path.unlink()
        parent = path.parent
        while parent != folder and folder in parent.parents:
            emptied.add(parent)
            parent = parent.parent
    for parent in sorted(emptied, key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):  # not empty: it holds something not ours, which stays
            parent.rmdir()


def replace_file(staged: Path, target: Path) -> None:
    """Move `staged` to `target` (whose place `claim` has checked), and list it as now written where
    the folder has a manifest."""
    folder = target.parent
    ours = listed(folder)
    os.replace(staged, target)
    if ours:
        _write(folder, ours | {target.name: _stamp(target)})


def publish(staging: Path, folder: Path, names: Iterable[str], last: str | None = None) -> None:
    """Move `names` (files or folders, those that exist in `staging`) into `folder`, `last` (if
    given) after the others, replacing what earlier runs listed under those names and removing what
    they listed there that this run did not write; what the manifest lists under other names stays.
    `last` (summary.json) is removed first: outputs of two runs are never beside one."""
    names = [name for name in names if name != last]
    every = [*names, *([last] if last else [])]
    claim(folder, every)  # again: something may have come since the run started
    old = listed(folder)
    mine = {file for file in old if any(file == name or file.startswith(f"{name}/") for name in every)}
    new = {file: _stamp(staging / file) for name in every if (staging / name).exists()
           for file in files_below(staging, name)}  # a rename keeps both
    _write(folder, old | new)
    if last in old:
        _remove(folder, [last])
    for name in names:
        _remove(folder, [file for file in mine if file == name or file.startswith(f"{name}/")])
        if (staging / name).exists():
            if os.path.lexists(folder / name):  # a folder still holding what is not ours (`claim`)
                raise InputError(f"{folder / name}: holds files not written by {TOOL}; move them away")
            os.replace(staging / name, folder / name)
    if last and (staging / last).exists():
        os.replace(staging / last, folder / last)
    _write(folder, {file: stamp for file, stamp in old.items() if file not in mine} | new)
