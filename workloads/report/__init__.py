"""``ddtune report``: read runs, sweeps and searches back, compare configurations with 95% intervals, and
render the result.
"""
