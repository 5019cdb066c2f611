"""Inputs: a log found, opened and read as contract text (CSV, JSON, Parquet; mappings of a provider's
layout; card events), its rows narrowed, its ids and times read.
"""
