"""The SGLang simulator (``ddtune sim``, ``python -m backends.sim``): see runner.py for behaviour.

The face: ``main`` runs it with SGLang-style argv; ``wrong_rate`` reads the share of coding answers a
simulator started with a config's extra args gets wrong on purpose.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "backends.sim.args": ("wrong_rate",),
    "backends.sim.runner": ("main",),
})
