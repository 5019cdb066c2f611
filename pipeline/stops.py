"""A run stopped by a signal (a scheduler's SIGTERM past its time limit, Ctrl-C, a closed terminal):
one line on stderr, exit 2, nothing published, and no staging folder left behind. Once its outputs
are in place the run has completed, and a stop ends it with its own code (`publishing`).

The stop is carried out in the signal handler itself, which removes the staging folders and ends the
process with `os._exit`. An exception raised from the handler, as Python's own KeyboardInterrupt is,
lands on whatever bytecode the main thread is running: one that landed in a weakref callback of the
import machinery was swallowed ("Exception ignored in ... _get_module_lock"), and the run never ended
(CI killed it after two minutes). Exiting from the handler relies on no Python state but the folders
listed here. Python runs the handler between bytecodes of the main thread, so a polars query under way
(whose threads are the only other writers) finishes first: nothing writes into a folder as it goes.
The stop waits for that query: most are a piece of the log.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import InputError

# SIGHUP: the terminal of an ad-hoc run closed (an ssh session lost), which killed it outright.
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

_staging: set[Path] = set()  # folders of runs under way, removed by a stop
_publishing = threading.Event()  # set while finished outputs are moved into place
_installed: list = []  # the handler `install` stood, if it did (`ignored` sets it aside)
_completed: list[int] = []  # the exit code of the run whose outputs are in place (`publishing`)


def said(stop: str) -> str:
    """The one line a run stopped by the signal named `stop` ends with."""
    return f"error: stopped by {stop} before the run completed"


@contextmanager
def removed_if_stopped(folder: Path) -> Iterator[None]:
    """Within the block, a stop removes `folder` (which need not exist yet) before the process ends."""
    _staging.add(folder)
    try:
        yield
    finally:
        _staging.discard(folder)


def remove_on_stop(folder: Path) -> None:
    """A stop removes `folder` (a scratch folder of the whole process) before the process ends."""
    _staging.add(folder)


@contextmanager
def run_folder(parent: Path, prefix: str, cannot: str) -> Iterator[Path]:
    """A new folder in `parent` (made if need be), `prefix` and a random name, for a run's files under
    way: removed on the way out however the run ends, a stop by signal included (it is listed before it
    is made, so that no stop falls between). An InputError, `cannot` and the reason, when `parent` or
    the folder cannot be made."""
    folder = parent / f"{prefix}{secrets.token_hex(6)}"
    with removed_if_stopped(folder):
        try:
            try:
                parent.mkdir(parents=True, exist_ok=True)
                folder.mkdir(mode=0o700)
            except OSError as error:
                raise InputError(f"{cannot} ({error.strerror})") from None
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def publishing(exit_code: int) -> Iterator[None]:
    """Within the block a stop is ignored: the finished outputs are being moved into place (a few
    renames), and a stop among them would leave an output directory holding two runs' outputs. The run
    then ends as it would have, its outputs complete.

    Once they are in place the run has completed: a stop then ends the process at once with
    `exit_code`, the run's own, and no line (it would say the run had not completed)."""
    _publishing.set()
    try:
        yield
    finally:
        _publishing.clear()
    _completed[:] = [exit_code]


def ignored() -> None:
    """From now on a stop is ignored, where `install` stood the handler: for the command's last moment,
    its output written, as Python shuts down. Python then puts back the default handlers (but leaves an
    ignored signal ignored), and a stop would end the process with no word at all (-15)."""
    if _installed and threading.current_thread() is threading.main_thread():  # where a handler can be changed
        for stopping in SIGNALS:
            if signal.getsignal(stopping) is _installed[0]:
                signal.signal(stopping, signal.SIG_IGN)


def install(exit_code: int) -> None:
    """Make SIGTERM, SIGINT and SIGHUP stop the process as described above, with `exit_code`. SIGHUP
    stays ignored when it is (`nohup` ignores it so that a run outlives its terminal); SIGINT is taken
    even then: a shell script ignores it in the jobs it starts in the background, which no Ctrl-C
    reaches anyway, only a deliberate `kill -INT`."""
    def stop(signum: int, frame: object) -> None:
        if _publishing.is_set():
            return
        for folder in list(_staging):
            shutil.rmtree(folder, ignore_errors=True)
        if _completed:  # the outputs are in place: the run ends with its own code, and no line says otherwise
            os._exit(_completed[0])
        # os.write, not print: the main thread may be inside a write to sys.stderr, and a buffered
        # stream entered again from a signal handler raises instead of writing.
        shown = "\r\x1b[2K\x1b[?25h" if os.isatty(2) else ""  # the progress bar's line, and its hidden cursor
        os.write(2, f"{shown}{said(signal.Signals(signum).name)}\n".encode())
        os._exit(exit_code)

    _installed[:] = [stop]
    for stopping in SIGNALS:
        if not (stopping == signal.SIGHUP and signal.getsignal(stopping) is signal.SIG_IGN):
            signal.signal(stopping, stop)
