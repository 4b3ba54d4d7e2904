"""Prompt sources: what a workload sends, as typed records, from a built-in set, a standard set read
from its publisher's file, the user's own JSON/JSONL file in any of the field's formats, or a Hugging
Face dataset; and real long contexts built from real text (docs/workloads.md).

The face: ``load_source`` (SOURCE -> PromptSet), the records, and the built-in names.
"""

from backends.core.faces import lazy_face

__all__, __getattr__ = lazy_face(__name__, {
    "workloads.prompts.records": ("PromptRecord", "PromptSet", "Turn"),
    "workloads.prompts.sources": ("BUILTINS", "load_source"),
})
