"""The server and the machine it runs on: lifecycle, logs, readiness, knobs, telemetry.

Never imports textual, rich, plotext or tui (tests/unit/test_layers.py checks it).
"""
