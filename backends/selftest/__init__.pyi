# The types of what backends.selftest offers (its __init__.py loads each module on first use).

from backends.selftest.run import run_selftest as run_selftest
