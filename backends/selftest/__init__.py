"""``ddtune selftest``: the user's SGLang, flags and knobs on tiny models, through ddtune's own lifecycle.
"""
