"""The rules of punto banco, stated once: cards, the tableau, a coup's replay (scalar and vectorized),
bets and what each profile pays, the exact odds. No I/O beyond the profiles' own TOML files, no log.
"""
