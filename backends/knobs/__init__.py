"""What the user asks of the server: the config file, knobs as data, how each knob reaches a given
SGLang release (its ``--help``), the launch plan, and verification of what the server reports.

The face: ``ServerConfig`` loaded from the config file, with presets and ``--set`` values parsed
through the knob table (``KNOBS``, ``knob_spec``, the rules between knobs); the launch plan for an
SGLang ``--help``; the installed SGLang's version; and the checks of what the server reports back.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "backends.knobs.config": ("ServerConfig", "load_config", "load_preset", "parse_knob_value", "parse_set",
                              "preset_names"),
    "backends.knobs.editor": ("KnobForm", "KnobTexts", "check_knob_texts", "knob_form"),
    "backends.knobs.plan": ("DEFAULT_BLOCK_SIZE", "KNOBS", "KnobValue", "as_count", "cross_knob_errors", "knob_spec",
                            "knob_text", "plan_launch"),
    "backends.knobs.serverhelp": ("sglang_version",),
    "backends.knobs.verify": ("BASE_KEYS", "KnobCheck"),
})
