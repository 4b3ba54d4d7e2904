# The types of what backends.knobs offers (its __init__.py loads each module on first use).

from backends.knobs.config import (ServerConfig as ServerConfig, load_config as load_config,
                                   load_preset as load_preset, parse_knob_value as parse_knob_value,
                                   parse_set as parse_set, preset_names as preset_names)
from backends.knobs.editor import (KnobForm as KnobForm, KnobTexts as KnobTexts,
                                   check_knob_texts as check_knob_texts, knob_form as knob_form)
from backends.knobs.plan import (DEFAULT_BLOCK_SIZE as DEFAULT_BLOCK_SIZE, KNOBS as KNOBS, KnobValue as KnobValue,
                                 as_count as as_count, cross_knob_errors as cross_knob_errors, knob_spec as knob_spec,
                                 knob_text as knob_text, plan_launch as plan_launch)
from backends.knobs.serverhelp import sglang_version as sglang_version
from backends.knobs.verify import BASE_KEYS as BASE_KEYS, KnobCheck as KnobCheck
