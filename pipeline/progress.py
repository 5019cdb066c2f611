"""A progress display for long runs: the current phase, its pieces done, and elapsed time on stderr.

Shown only to a person: not when stderr is not a terminal, under CI (`CI` set), or with --quiet.
The log is read and checked in pieces (see `run`), so those phases show a bar of pieces done;
the others a spinner. The final line of `audit` gives rounds per second.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def phases(enabled: bool = True) -> Iterator[Callable[..., None]]:
    """A callback `(phase, done=None, total=None)` that shows each phase and its pieces done; a no-op
    when no person is watching."""
    if not (enabled and sys.stderr.isatty() and not os.environ.get("CI")):
        yield lambda phase, done=None, total=None: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("opening the log", total=None)
        yield lambda phase, done=None, total=None: bar.update(task, description=phase, completed=done or 0,
                                                              total=total)
