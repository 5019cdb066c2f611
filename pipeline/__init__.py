"""Punto banco hand-history audit: replay recorded rounds and flag every departure from procedure.

Data flow, one module per stage: ingest -> replay -> checks -> findings -> report.
The rules themselves live in `tableau` (drawing) and `cards` (notation and values); the scalar
replay (`coup`) and the vectorized replay (`replay`) are two evaluators of that one statement.
"""

__version__ = "0.1.0"
