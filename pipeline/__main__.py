"""`python -m pipeline ...` is `baccarat-audit ...`."""

from pipeline.cli import main

main()
