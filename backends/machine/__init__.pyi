# The types of what backends.machine offers (its __init__.py loads each module on first use).


from backends.machine.gpu import GpuSampler as GpuSampler
from backends.machine.gpuset import (GpuIdentity as GpuIdentity, choose as choose, differences as differences,
                                     groups as groups, inventory as inventory, parse_gpus as parse_gpus,
                                     sharing as sharing)
from backends.machine.host import server_tree_pids as server_tree_pids
