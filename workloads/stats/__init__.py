"""Statistics: percentiles, distributions, estimates with confidence intervals. Pure.
"""
