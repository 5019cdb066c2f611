"""`python -m pipeline ...` is `baccarat-audit ...`.

A stop by signal is taken as `stops` takes it from the first moment: the CLI's imports (polars,
pyarrow, typer) take most of a second, and a Ctrl-C among them ended Python with a traceback, a
SIGTERM with no word at all.
"""

from pipeline import stops
from pipeline.errors import EXIT_CANNOT_RUN


def main() -> None:
    stops.install(EXIT_CANNOT_RUN)
    from pipeline.cli import main as run  # imported after, for the reason above

    run()


if __name__ == "__main__":
    main()
