"""What the user asks of the server: the config file, knobs as data, how each knob reaches a given
SGLang release (its ``--help``), the launch plan, and verification of what the server reports.

The face: ``ServerConfig`` and its knob values (``KnobValue``, ``knob_text``, the table ``KNOBS``
and ``knob_spec``), a preset's knobs, the knob editor's form and check (``knob_form``,
``check_knob_texts``), and the checks of what the server reports back (``KnobCheck``). Loading the
config a command names, with its preset and --set knobs, is backends.server's ``requested_config``.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "backends.knobs.baseline": ("baseline_config",),
    "backends.knobs.config": ("ServerConfig", "load_preset"),
    "backends.knobs.decl": ("KnobTable",),
    "backends.knobs.editor": ("KnobForm", "KnobTexts", "check_knob_texts", "knob_form"),
    "backends.knobs.plan": ("DEFAULT_BLOCK_SIZE", "KNOBS", "KnobValue", "SHIPPED", "knob_spec", "knob_text",
                            "known_knobs", "window_too_small"),
    "backends.knobs.verify": ("KnobCheck",),
})
