"""Sweeps: bring the server to each configuration in turn (or several lanes at once) and measure it.
"""
