"""ddtune's own version, read from the installed distribution's metadata: the one place it is read.

pyproject.toml's ``[project] version`` is the only copy. An install (the wheel, or ``pip install -e``)
records it in the ``ddtune-*.dist-info`` it writes, and ``importlib.metadata`` reads it back, so
``ddtune --version``, ``tui.__version__`` and the runs' provenance all say the same thing without
reading a source file as text. An editable install records the version at install time: after
changing it in pyproject.toml, install again.
"""

from __future__ import annotations

import functools

DIST = "ddtune"
# A checkout imported with no install at all (only on sys.path) has no metadata. PEP 440-valid and
# below every release, so a record or a tool that compares versions still can; and it says what it is.
UNKNOWN = "0+unknown"


@functools.cache
def ddtune_version() -> str:
    """The installed ddtune's version, else ``UNKNOWN``. importlib.metadata is imported here, not at
    module level: it costs ~20 ms, which the headless commands that never print a version skip."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DIST)
    except PackageNotFoundError:
        return UNKNOWN
