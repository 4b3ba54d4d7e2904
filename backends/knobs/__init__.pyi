# The types of what backends.knobs offers (its __init__.py loads each module on first use).

from backends.knobs.baseline import baseline_config as baseline_config
from backends.knobs.config import ServerConfig as ServerConfig, load_preset as load_preset
from backends.knobs.decl import KnobTable as KnobTable
from backends.knobs.editor import (KnobForm as KnobForm, KnobTexts as KnobTexts, check_knob_texts as check_knob_texts,
                                   knob_form as knob_form)
from backends.knobs.plan import (DEFAULT_BLOCK_SIZE as DEFAULT_BLOCK_SIZE, KNOBS as KNOBS, KnobValue as KnobValue,
                                 SHIPPED as SHIPPED, knob_spec as knob_spec, knob_text as knob_text,
                                 known_knobs as known_knobs, window_too_small as window_too_small)
from backends.knobs.verify import KnobCheck as KnobCheck
