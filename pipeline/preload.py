"""Heavy imports started in the background while polars works.

Polars releases the GIL while it runs a query, so importing a large library in a thread at the start of
an audit overlaps the audit instead of following it; the code that needs the module later finds it
loaded (or waits on the import lock until it is).
"""

from __future__ import annotations

import importlib
import threading


def preload(*modules: str) -> threading.Thread:
    """Import `modules` in a daemon thread; returns the thread."""
    thread = threading.Thread(target=lambda: [importlib.import_module(m) for m in modules],
                              name=f"import {', '.join(modules)}", daemon=True)
    thread.start()
    return thread
