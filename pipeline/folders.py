"""Where the package's data is: the contracts, mappings and profiles of schemas/.

They are kept at the top of the checkout and shipped inside the package by a wheel (pyproject.toml
maps them to baccarat_audit/schemas), so an installed tool finds them as a checkout does.
"""

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent
SCHEMAS = next(folder for folder in (_PACKAGE / "schemas", _PACKAGE.parent / "schemas") if folder.is_dir())
