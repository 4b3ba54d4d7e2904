# The types of what backends.sim offers (its __init__.py loads each module on first use).

from backends.sim.args import wrong_rate as wrong_rate
from backends.sim.runner import main as main
