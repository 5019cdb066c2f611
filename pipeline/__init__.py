"""Punto banco hand-history audit: replay recorded rounds and flag every departure from procedure.

Installed as `baccarat_audit`. The library (`api`): `audit`, `explain`, `odds`, the `Audit` they
return and the `InputError` bad input raises. Data flow, one module per stage: ingest -> replay ->
checks -> findings -> report. The rules themselves live in `tableau` (drawing) and `cards` (notation
and values); the scalar replay (`coup`) and the vectorized replay (`replay`) are two evaluators of
that one statement.
"""

import os

# Read by polars when it is imported, after its own settings: pages freed are handed back to the
# system at once, not a second later, so that a run's peak is the work of its pieces in hand, not
# what the pieces before them freed (docs/performance.md). A setting of the user's is kept.
os.environ.setdefault("_RJEM_MALLOC_CONF", "muzzy_decay_ms:0")

__version__ = "0.1.0"
__all__ = ["Audit", "InputError", "audit", "explain", "odds"]


def __getattr__(name: str) -> object:
    """The library, imported when first asked for: `python -m baccarat_audit` starts with this module,
    and stands its signal handler before the heavy imports (see `__main__`)."""
    if name in __all__:
        from . import api
        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
