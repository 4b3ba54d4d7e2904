# The types of what backends.core offers (its __init__.py loads each module on first use).

from backends.core.answers import (BadAnswer as BadAnswer, ERROR_BYTES as ERROR_BYTES, StreamLimits as StreamLimits,
                                   TOKENS_MAX as TOKENS_MAX, amount as amount, count as count,
                                   dropped_shown as dropped_shown, fetch as fetch, idle_s as idle_s,
                                   read_body as read_body, sse_lines as sse_lines)
from backends.core.apikey import (ENV_KEY as ENV_KEY, api_key as api_key, auth_headers as auth_headers, mask as mask,
                                  redact as redact, redact_argv as redact_argv)
from backends.core.datafile import (Lines as Lines, MAX_BYTES as MAX_BYTES, MAX_LINE as MAX_LINE, Note as Note,
                                    TooDeep as TooDeep, loads as loads, read_bytes as read_bytes,
                                    read_json as read_json, read_jsonl as read_jsonl, read_text as read_text,
                                    read_toml as read_toml, warn as warn)
from backends.core.errors import (ConfigError as ConfigError, DdtuneError as DdtuneError, PortTaken as PortTaken,
                                  ServerError as ServerError, ServerUnreachable as ServerUnreachable,
                                  UsageError as UsageError)
from backends.core.exports import save_export as save_export
from backends.core.fields import (INT64_MAX as INT64_MAX, MAX_NAME as MAX_NAME, bounded as bounded, expect as expect,
                                  fail as fail, key_name as key_name, server_base as server_base, shown as shown)
from backends.core.paths import (package_dirs as package_dirs, presets_dir as presets_dir,
                                 private_umask as private_umask, problems_file as problems_file, runs_dir as runs_dir)
from backends.core.phase import Phase as Phase
from backends.core.plaintext import escaped as escaped, plain as plain
from backends.core.version import ddtune_version as ddtune_version
from backends.core.writes import (append_text as append_text, check_folder as check_folder,
                                  check_output as check_output, make_folder as make_folder,
                                  open_append as open_append, write_atomic as write_atomic)
