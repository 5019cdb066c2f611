"""`python -m pipeline ...` is `baccarat-audit ...`.

A stop by signal is taken as `stops` takes it from the first moment: the CLI's imports (polars,
pyarrow, typer) take most of a second, and a Ctrl-C among them ended Python with a traceback, a
SIGTERM with no word at all. An import that fails (a broken install: a library missing or built for
another machine) is the tool's failure, exit 3, as every other; Python's own exit 1 would read as findings.
"""

import sys

from pipeline import stops
from pipeline.errors import EXIT_CANNOT_RUN, EXIT_FAILED, failure


def main() -> None:
    stops.install(EXIT_CANNOT_RUN)
    try:
        from pipeline.cli import main as run  # imported after, for the reason above
    except Exception as error:
        print(f"error: {failure(error)}", file=sys.stderr)
        sys.exit(EXIT_FAILED)
    run()


if __name__ == "__main__":
    main()
