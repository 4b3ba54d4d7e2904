# The types of what backends.core offers (its __init__.py loads each module on first use).

from backends.core.answers import BadAnswer as BadAnswer
from backends.core.apikey import mask as mask, redact_argv as redact_argv
from backends.core.datafile import loads as loads
from backends.core.errors import (ConfigError as ConfigError, DdtuneError as DdtuneError, PortTaken as PortTaken,
                                  ServerError as ServerError, UsageError as UsageError)
from backends.core.exports import save_export as save_export
from backends.core.fields import server_base as server_base
from backends.core.paths import private_umask as private_umask, runs_dir as runs_dir
from backends.core.phase import Phase as Phase
from backends.core.plaintext import escaped as escaped
from backends.core.version import ddtune_version as ddtune_version
from backends.core.writes import check_output as check_output, write_atomic as write_atomic
