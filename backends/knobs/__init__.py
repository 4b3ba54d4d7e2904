"""What the user asks of the server: the config file, knobs as data, how each knob reaches a given
SGLang release (its ``--help``), the launch plan, and verification of what the server reports.
"""
