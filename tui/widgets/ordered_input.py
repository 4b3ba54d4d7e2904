"""An Input whose editing keys act in the order they were typed, even when keys arrive in bursts.

Textual's Input inserts a printable key in its own ``_on_key`` but leaves its bound keys (backspace,
delete, arrows, ctrl+u, ...) to bubble up to the App, which then runs the binding. Over SSH keys
arrive in bursts (one read of ``\\x7f3``): the App forwards both keys to the Input before the
bubbled backspace comes back, so ``3`` is inserted first and the late backspace deletes it; both
keys are lost. Upstream: Textualize/textual#6605; reproduction in docs/upstream/textual-burst-keys.md.

``OrderedInput`` runs its own bindings where the key arrives, so each key acts before the next one.
Only the Input's own, enabled, non-priority bindings are run here, plus the screen's focus moves
(tab, shift+tab): priority bindings were already checked by the App before the key was forwarded,
and any other key bound further up (escape, ctrl+s) bubbles exactly as before. User keymaps apply:
the binding comes from the screen's active bindings.

Focus moves need one more step. In a burst ``\\t1000`` the App forwards all five keys to the field
that has focus when each is read, so ``1000`` is already queued on this field when the tab moves
focus on. A key that reaches a field which no longer has focus goes back to the App as if typed
now, so it lands on the field that has focus, after that field's own focus event (which selects its
text, as a typed tab does).
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input

FOCUS_MOVES = ("focus_next", "focus_previous")


class OrderedInput(Input):
    async def _on_key(self, event: events.Key) -> None:
        if self.screen.focused is not self:
            event.stop()
            event.prevent_default()
            self.app.post_message(events.Key(event.key, event.character))
            return
        if not event.is_printable:
            active = self.screen.active_bindings.get(event.key)
            if active is not None and active.enabled and not active.binding.priority:
                action = active.binding.action
                if active.node is self or action.rpartition(".")[2] in FOCUS_MOVES:
                    event.stop()
                    event.prevent_default()
                    await self.app.run_action(action, active.node)
                    return
        await super()._on_key(event)
