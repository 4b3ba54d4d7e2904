"""An Input whose editing keys act in the order they were typed, even when keys arrive in bursts.

Textual's Input inserts a printable key in its own ``_on_key`` but leaves its bound keys (backspace,
delete, arrows, ctrl+u, ...) to bubble up to the App, which then runs the binding. Over SSH keys
arrive in bursts (one read of ``\\x7f3``): the App forwards both keys to the Input before the
bubbled backspace comes back, so ``3`` is inserted first and the late backspace deletes it; both
keys are lost. Upstream: Textualize/textual#6605; reproduction in docs/upstream/textual-burst-keys.md.

``OrderedInput`` runs its own bindings where the key arrives, so each key acts before the next one.
Only the Input's own, enabled, non-priority bindings are run here: priority bindings were already
checked by the App before the key was forwarded, and a key bound further up (escape, ctrl+s, tab)
bubbles exactly as before. User keymaps apply: the binding comes from the screen's active bindings.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input


class OrderedInput(Input):
    async def _on_key(self, event: events.Key) -> None:
        if not event.is_printable:
            active = self.screen.active_bindings.get(event.key)
            if active is not None and active.node is self and active.enabled and not active.binding.priority:
                event.stop()
                event.prevent_default()
                await self.run_action(active.binding.action)
                return
        await super()._on_key(event)
