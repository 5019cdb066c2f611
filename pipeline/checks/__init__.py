"""Checks: each round's checks as named polars expressions, the checks across rounds (duplicates,
shoes), fairness, settlement of the bets, the contract, and the findings they make.
"""
