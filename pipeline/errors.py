"""Errors that stop a run, each with the exit code the README documents."""

from __future__ import annotations

EXIT_CLEAN = 0
EXIT_FLAGGED = 1
EXIT_CANNOT_RUN = 2
EXIT_FAILED = 3  # the tool itself failed (a bug, or its engine: a Spark job lost), not its input


class InputError(Exception):
    """The input cannot be audited at all. The message is one line naming file and column or row."""

    exit_code = EXIT_CANNOT_RUN


def first_line(error: object) -> str:
    """The first line of an error's message, for a one-line report of it ("" when it has none): a
    polars or Java error may run to a page."""
    text = str(error).strip()
    return text.splitlines()[0] if text else ""
