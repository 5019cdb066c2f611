"""Engines: the audit run on polars (one read, then the checks across rounds over staged pieces) and on
Spark, both returning `run.Result`, with the staging and parts they work through.
"""
