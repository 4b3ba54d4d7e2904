"""Quitting asks whether to leave the server running (the default) or stop it; stopping, and
applying the config file (a restart), ask first."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label
from textual.widgets.button import ButtonVariant


class QuitDialog(ModalScreen[str | None]):
    """Dismisses with "leave", "stop", or None (stay). ``can_stop=False`` (an endpoint ddtune only
    attaches to) offers no stop; ``running=False`` (the server was stopped, or its start failed)
    offers nothing to leave running or stop: only quit or stay."""

    BINDINGS = [Binding("escape", "stay", "Stay", id="quit.stay"),
                Binding("l", "choose('leave')", "Leave running", id="quit.leave"),
                Binding("s", "choose('stop')", "Stop server", id="quit.stop")]
    DEFAULT_CSS = """
    QuitDialog { align: center middle; }
    QuitDialog > Vertical { width: 72; max-width: 100%; height: auto; border: thick $accent; padding: 1 2;
                            background: $surface; }
    QuitDialog Label { width: 100%; }
    QuitDialog Horizontal { height: auto; margin-top: 1; }
    QuitDialog Button { margin-right: 2; }
    """

    def __init__(self, can_stop: bool = True, running: bool = True) -> None:
        super().__init__()
        self.endpoint = not can_stop  # someone else's server: ddtune cannot tell whether it runs
        self.running = running
        self.can_stop = can_stop and running

    def compose(self) -> ComposeResult:
        with Vertical():
            if self.endpoint:
                yield Label("Quit ddtune. The server is not ddtune's to stop (an endpoint);\n"
                            "it keeps running.")
            elif not self.running:
                yield Label("Quit ddtune. This console runs no server now (it was stopped, or did not start).")
            else:
                yield Label("Quit ddtune. The server keeps running unless you stop it;\n"
                            "the next `ddtune` re-attaches to it.")
            with Horizontal():
                yield Button("Leave it running \\[l]" if self.can_stop else "Quit \\[l]", variant="primary",
                             id="leave", compact=True)
                if self.can_stop:
                    yield Button("Stop the server \\[s]", variant="error", id="stop", compact=True)
                yield Button("Stay \\[esc]", id="stay", compact=True)

    def on_mount(self) -> None:
        self.query_one("#leave", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None if event.button.id == "stay" else event.button.id)

    def action_choose(self, choice: str) -> None:
        if choice == "stop" and not self.can_stop:
            return
        self.dismiss(choice)

    def action_stay(self) -> None:
        self.dismiss(None)


class Confirm(ModalScreen[bool]):
    """A question whose yes costs a model load: ``y`` (or the subclass's key) says yes, Esc keeps the
    server as it is (the default focus). Dismisses with True for yes. Subclasses give the lines (plain
    text: they may hold paths and knob values), the yes button and their bindings."""

    DEFAULT_CSS = QuitDialog.DEFAULT_CSS.replace("QuitDialog", "Confirm")
    YES: tuple[str, ButtonVariant] = ("Yes", "warning")  # the yes button's label and variant

    def lines(self) -> list[tuple[str, str | None]]:
        """(text, id) of each line of the question."""
        raise NotImplementedError

    def compose(self) -> ComposeResult:
        with Vertical():
            for text, ident in self.lines():
                yield Label(text, markup=False, id=ident)
            with Horizontal():
                yield Button(f"{self.YES[0]} \\[y]", variant=self.YES[1], id="yes", compact=True)
                yield Button("Keep it running \\[esc]", variant="primary", id="no", compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class ConfirmStop(Confirm):
    """Stopping a server that took minutes to load asks first. Dismisses with True to stop."""

    BINDINGS = [Binding("escape,n", "answer(False)", "Keep it", id="stop.keep"),
                Binding("y,s", "answer(True)", "Stop it", id="stop.stop")]
    YES: tuple[str, ButtonVariant] = ("Stop it", "error")

    def lines(self) -> list[tuple[str, str | None]]:
        return [("Stop the server? Starting it again reloads the model.", None)]


class ConfirmApply(Confirm):
    """Applying the config file restarts the server, so it asks first, as stopping does. Dismisses
    with True to restart."""

    BINDINGS = [Binding("escape,n", "answer(False)", "Keep it", id="apply.keep"),
                Binding("y,a", "answer(True)", "Restart", id="apply.restart")]
    YES: tuple[str, ButtonVariant] = ("Restart", "warning")

    def __init__(self, changes: str) -> None:
        super().__init__()
        self.changes = changes

    def lines(self) -> list[tuple[str, str | None]]:
        return [("Restart with the config file's knobs? The server reloads the model.", None)] + \
            ([(self.changes, "changes")] if self.changes else [])


class ConfirmReplace(Confirm):
    """The server here runs another config file: replacing it stops it (its model load is lost), so
    the console asks, as stopping does. Dismisses with True to replace it."""

    BINDINGS = [Binding("escape,n", "answer(False)", "Keep it", id="replace.keep"),
                Binding("y", "answer(True)", "Replace it", id="replace.replace")]
    YES: tuple[str, ButtonVariant] = ("Replace it", "warning")

    def __init__(self, pid: int | None, phase: str, theirs: str, ours: str) -> None:
        super().__init__()
        self.text = (f"The server here (pid {pid}, {phase}) was started from another config:\n  {theirs}\n"
                     f"Stop it and start this console's config instead?\n  {ours}\n"
                     "Stopping it throws its model load away.")

    def lines(self) -> list[tuple[str, str | None]]:
        return [(self.text, "replace-text")]
