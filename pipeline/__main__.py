"""`python -m baccarat_audit ...` is `baccarat-audit ...`.

A signal is taken from the entry point's first line: the handler below needs only `os` and
`signal`, which the interpreter has loaded already, and stands until `stops` installs the full one
(which also removes a run's staging folders). The CLI's imports (polars, pyarrow, typer) take most
of a second, and a SIGTERM among them ended Python with no word at all. An import that fails (a
broken install: a library missing or built for another machine) is the tool's failure, exit 3, as
every other; Python's own exit 1 would read as findings.
"""

import os
import signal

EXIT_CANNOT_RUN = 2  # as pipeline.errors says; not imported from there, which would come first


def _stopped(signum: int, frame: object) -> None:
    os.write(2, f"error: stopped by {signal.Signals(signum).name} before the run completed\n".encode())
    os._exit(EXIT_CANNOT_RUN)


for _stopping in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    if not (_stopping == signal.SIGHUP and signal.getsignal(_stopping) is signal.SIG_IGN):  # nohup
        signal.signal(_stopping, _stopped)

import contextlib  # noqa: E402 (after the handler, on purpose)
import sys  # noqa: E402

from . import stops  # noqa: E402
from .errors import EXIT_FAILED, failure  # noqa: E402


def main() -> None:
    stops.install(EXIT_CANNOT_RUN)
    try:
        from .cli import main as run  # imported after, for the reason above
    except Exception as error:
        print(f"error: {failure(error)}", file=sys.stderr)
        sys.exit(EXIT_FAILED)
    try:
        run()
    finally:
        # What the command printed goes out while a stop still ends it; then Python shuts down with
        # the stops ignored (`stops.ignored`).
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        stops.ignored()


if __name__ == "__main__":
    main()
