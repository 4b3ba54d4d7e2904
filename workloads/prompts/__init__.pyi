# The types of what workloads.prompts offers (its __init__.py loads each module on first use).

from workloads.prompts.records import PromptRecord as PromptRecord, PromptSet as PromptSet, Turn as Turn
from workloads.prompts.sources import BUILTINS as BUILTINS, load_source as load_source
