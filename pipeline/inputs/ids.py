"""Round and bet ids as they are compared: two ids that differ only invisibly are one id."""

from __future__ import annotations

import polars as pl


def outside_ascii(text: pl.Expr) -> pl.Expr:
    """Whether a text holds a character outside ASCII: such a character is more than one byte of UTF-8,
    so comparing lengths tells, cheaper than a regex (docs/performance.md)."""
    return text.str.len_bytes() != text.str.len_chars()


def same_id(an_id: pl.Expr) -> pl.Expr:
    """An id (a round_id, a bet_id) as ids are compared: in Unicode NFKC, without format characters
    (zero-width, BOM, bidi controls), so that copies that differ only invisibly are one id. Only ids
    with a character outside ASCII are normalised: the others are already as compared."""
    return (pl.when(outside_ascii(an_id))
            .then(an_id.str.normalize("NFKC").str.replace_all(r"\p{Cf}", "")).otherwise(an_id))


def id_key(an_id: pl.Expr) -> pl.Expr:
    """A 64-bit hash of an id as compared (`same_id`): duplicates are looked for among numbers, not strings."""
    return same_id(an_id).hash(seed=0)


def copies_detail(noun: str, an_id: pl.Expr, copies: pl.Expr, where: str) -> pl.Expr:
    """A duplicate's detail: how many rows hold the id, and whether their copies differ invisibly."""
    invisibly = an_id.n_unique().over(same_id(an_id)) > 1
    return pl.format(f"{noun} {{}} appears on {{}} rows of the {where}{{}}", an_id, copies,
                     pl.when(invisibly).then(pl.lit(", its copies differing only invisibly (Unicode "
                                                    "normalisation, zero-width or BOM characters).")
                                             ).otherwise(pl.lit(".")))
