"""A family's face that loads on first use.

Each family of ``backends`` and ``workloads`` has one door, its package ``__init__``: it names what
the family offers (``__all__``) and the module each name comes from. A module is imported when one
of its names is first used (PEP 562 ``__getattr__``), not when the family is: importing a family,
or any module in it by its full path, runs its ``__init__`` first, and a face that imported all it
offers would make every such import, and every command, pay for the whole family. With this, ``ddtune
--help`` lists the knobs without the log parser, ``ddtune eval --regrade`` grades without the HTTP
client, and the load worker starts without the reports. The names' types are in the face's stub
(``__init__.pyi``), which tests/unit/test_faces.py holds to the same names and homes.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_face(face: str, homes: Mapping[str, tuple[str, ...]]) -> tuple[list[str], Callable[[str], object]]:
    """``(__all__, __getattr__)`` for the package ``face``: ``homes`` maps each module (its full
    path) to the names the face offers from it."""
    where = {name: module for module, names in homes.items() for name in names}

    def __getattr__(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {face!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        vars(sys.modules[face])[name] = value  # found directly from now on
        return value

    return sorted(where), __getattr__
