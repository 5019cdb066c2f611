"""Outputs: the regulator report, its charts, the evidence of each finding, a round explained step by
step, and values shortened where they are shown.
"""
