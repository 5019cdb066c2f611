"""Errors that stop a run, each with the exit code the README documents."""

from __future__ import annotations

import tempfile
import traceback

EXIT_CLEAN = 0
EXIT_FLAGGED = 1
EXIT_CANNOT_RUN = 2
EXIT_FAILED = 3  # the tool itself failed (a bug, or its engine: a Spark job lost), not its input


class InputError(Exception):
    """The input cannot be audited at all. The message is one line naming file and column or row."""

    exit_code = EXIT_CANNOT_RUN


class OutputError(InputError):
    """An output could not be written (the disk full, a file too large, a read-only file system):
    the caller names the output directory, not the log being read at the time."""


def first_line(error: object) -> str:
    """The first line of an error's message, for a one-line report of it ("" when it has none): a
    polars or Java error may run to a page."""
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


def failure(error: BaseException) -> str:
    """One line for a failure of the tool itself, which would otherwise end Python with a traceback and
    exit 1, the code of a run with findings: what failed, and a file holding the traceback to report."""
    with tempfile.NamedTemporaryFile("w", prefix="baccarat-audit-", suffix=".traceback", delete=False) as kept:
        traceback.print_exception(error, file=kept)
    first = first_line(error)
    return (f"the tool failed ({type(error).__name__}{': ' + first if first else ''}); not a verdict on the log. "
            f"Traceback: {kept.name}")
