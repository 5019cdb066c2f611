"""Heavy imports started in the background while polars works.

Polars releases the GIL while it runs a query, so importing a large library in a thread at the start of
an audit overlaps the audit instead of following it; the code that needs the module later finds it
loaded (or waits on the import lock until it is).
"""

from __future__ import annotations

import contextlib
import importlib
import threading


def preload(*modules: str) -> threading.Thread:
    """Import `modules` in a daemon thread; returns the thread. An import that fails here fails again
    where the module is needed, and is reported there as one line: here it would print a traceback."""
    def load() -> None:
        for module in modules:
            with contextlib.suppress(Exception):
                importlib.import_module(module)

    thread = threading.Thread(target=load, name=f"import {', '.join(modules)}", daemon=True)
    thread.start()
    return thread
