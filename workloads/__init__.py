"""What ddtune sends to a server and how it judges the answers.

Never imports textual, rich, plotext or tui (tests/unit/test_layers.py checks it).
"""
