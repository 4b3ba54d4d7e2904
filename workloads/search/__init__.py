"""``ddtune search``: find the fastest configuration of a knob space with few restarts.
"""
