"""Text looked up in a fixed table, written the way polars' streaming engine keeps in bounded memory.

`replace_strict` with a dictionary held the streaming engine to whole columns. Casting the text to an
Enum of the table's keys (anything else becomes null) and gathering the values by the Enum's index
streams, and is as fast.
"""

from __future__ import annotations

import itertools

import polars as pl


def position(text: pl.Expr, keys: list[str] | pl.Series) -> pl.Expr:
    """Each text's position among `keys` (distinct); null where the text is null or not one of them.
    Gathering from a column of values in the keys' order looks the text up."""
    return text.cast(pl.Enum(keys), strict=False).to_physical()


def lookup(text: pl.Expr, table: dict[str, object], dtype: pl.DataType) -> pl.Expr:
    """The value `table` holds for each text; null where the text is null or not a key."""
    keys = sorted(table)
    values = pl.Series([table[key] for key in keys], dtype=dtype)
    return pl.lit(values).gather(position(text, keys))


def case_variants(text: str) -> set[str]:
    """`text` in every mix of upper and lower case of its letters: the keys a table looked up without
    folding case first has for it."""
    return {"".join(chars) for chars in itertools.product(*({c.upper(), c.lower()} for c in text))}
