"""A progress display for long runs: the current phase and elapsed time on stderr.

Shown only to a person: not when stderr is not a terminal, under CI (`CI` set), or with --quiet.
Polars runs each pass as one plan, so phases are what can honestly be shown; the final line of
`audit` gives rounds per second.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def phases(enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """A callback that shows each phase as it starts; a no-op when no person is watching."""
    if not (enabled and sys.stderr.isatty() and not os.environ.get("CI")):
        yield lambda phase: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("opening the log", total=None)
        yield lambda phase: bar.update(task, description=phase)
