"""``ddtune selftest``: the user's SGLang, flags and knobs on tiny models, through ddtune's own lifecycle.

The face: ``run_selftest(config, ...)``, whose report lists each check with its fix.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "backends.selftest.run": ("run_selftest",),
})
