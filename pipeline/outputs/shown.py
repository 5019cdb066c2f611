"""Log text as a person is shown it: control characters made visible, long values shortened.

A value from a log reaches a terminal, summary.json and the report: an ESC or a newline in it could
drive the terminal or forge a line of output, and a field of megabytes would be copied whole. The
outputs for machines (findings.parquet, quarantine) keep every value as it was.
"""

from __future__ import annotations

import re


SHOWN_CHARS = 200  # a value longer than this is shortened where a person reads it (documented in the README)

#: C0 and C1 controls, DEL, and the format characters that reorder or hide text (bidi controls,
#: zero-width characters, BOM), each shown as its escape.
_HIDDEN = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def visible(text: str) -> str:
    """`text` with each control or hidden format character written as its escape (`\\x1b`, `\\u202e`)."""
    return _HIDDEN.sub(lambda found: _escape(found.group()), text)


def _escape(char: str) -> str:
    point = ord(char)
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}"


def shortened(text: str, limit: int = SHOWN_CHARS) -> str:
    """`text`, cut to `limit` characters with a marker saying how many more it had."""
    return text if len(text) <= limit else f"{text[:limit]}…[{len(text) - limit:,} more characters]"


def shown(value: object, limit: int = SHOWN_CHARS) -> str:
    """A value as a terminal line or the report shows it: visible, then shortened."""
    return shortened(visible("" if value is None else str(value)), limit)


def kept_short(value: object, limit: int = SHOWN_CHARS) -> object:
    """A value as summary.json and evidence.json keep it: text shortened (JSON escapes controls), a
    list or a mapping value by value, anything else as it is."""
    if isinstance(value, str):
        return shortened(value, limit)
    if isinstance(value, list):
        return [kept_short(item, limit) for item in value]
    if isinstance(value, dict):
        return {key: kept_short(item, limit) for key, item in value.items()}
    return value


def counted(count: int, noun: str, spec: str = "", plural: str | None = None) -> str:
    """"1 round", "2 rounds" (`spec` formats the number): counts a person reads, on the terminal and
    in the report, never "1 findings"."""
    return f"{count:{spec}} {noun if count == 1 else plural or noun + 's'}"
