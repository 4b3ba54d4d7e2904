"""The knob editor: validated as you type, preset picker, diff against the running config."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Select, Static

from tui.literal import literal
from tui.widgets.ordered_input import OrderedInput

Validator = Callable[[dict[str, str]], dict[str, str]]  # field -> error message (empty: all good)


class KnobEditor(ModalScreen[dict[str, str] | None]):
    """Returns the edited knob values (as typed) on Apply, None on Cancel."""

    AUTO_FOCUS = "Input"  # the first knob; a single focus path, so typed keys never race it
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="knobs.cancel"),
                Binding("ctrl+s", "apply", "Apply", id="knobs.apply")]
    DEFAULT_CSS = """
    KnobEditor { align: center middle; }
    KnobEditor > Vertical {
        width: 80; max-width: 100%; height: auto; max-height: 100%; border: thick $accent; padding: 0 1;
        background: $surface;
    }
    KnobEditor VerticalScroll { height: auto; max-height: 60vh; margin: 1 0; }
    KnobEditor Grid { grid-size: 3; grid-columns: 10 16 1fr; grid-rows: auto; grid-gutter: 0 1; height: auto; }
    KnobEditor Grid > Static { height: auto; }  /* a hint wraps under itself: whole at 80x24, never cut */
    KnobEditor .error { color: $error; }
    KnobEditor .diff { color: $warning; }
    KnobEditor Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    KnobEditor Button { margin-left: 2; }
    """

    def __init__(self, current: dict[str, str], presets: dict[str, dict[str, str]], validate: Validator,
                 helps: dict[str, str] | None = None) -> None:
        super().__init__()
        self.current = dict(current)
        self.presets = presets
        self.validate = validate
        self.helps = helps or {}  # knob -> one help line, shown as the knob's tooltip

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("[b]Edit knobs[/b]  (applying restarts the server)")
            yield Select([(name, name) for name in sorted(self.presets)], prompt="preset…", id="preset", compact=True)
            with VerticalScroll(), Grid():  # every declared knob: scrolls when they outgrow the screen
                for name, value in self.current.items():
                    yield Label(name).with_tooltip(self.helps.get(name))
                    yield OrderedInput(value, id=f"knob-{name}", compact=True, tooltip=self.helps.get(name))
                    yield Static("", id=f"note-{name}")
            yield Static("", id="summary")
            with Horizontal():
                yield Button("Cancel \\[esc]", id="cancel", compact=True)
                yield Button("Apply & restart \\[ctrl+s]", variant="primary", id="apply", compact=True)

    def on_mount(self) -> None:
        width = max((len(name) for name in self.current), default=8) + 1
        self.query_one(Grid).styles.grid_columns = f"{max(width, 10)} 16 1fr"  # the longest knob name
        self._check()

    def values(self) -> dict[str, str]:
        return {name: self.query_one(f"#knob-{name}", Input).value.strip() for name in self.current}

    def on_input_changed(self, _event: Input.Changed) -> None:
        self._check()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.value is Select.BLANK:
            return
        for name, value in self.presets.get(str(event.value), {}).items():
            if name in self.current:
                self.query_one(f"#knob-{name}", Input).value = str(value)
        self._check()

    def _check(self) -> bool:
        values = self.values()
        errors = self.validate(values)
        for name in self.current:
            note = self.query_one(f"#note-{name}", Static)
            if name in errors:
                note.update(literal(errors[name]))  # the message quotes what was typed: text, not markup
                note.set_classes("error")
            elif values[name] != self.current[name]:
                note.update(literal(f"was {self.current[name]}"))
                note.set_classes("diff")
            else:
                note.update("")
        changed = [n for n in self.current if values[n] != self.current[n]]
        summary = self.query_one("#summary", Static)
        if errors:
            summary.update(f"[red]fix {len(errors)} field(s) before applying[/red]")
        else:
            summary.update(literal(f"{len(changed)} change(s): {', '.join(changed)}" if changed else "no changes"))
        self.query_one("#apply", Button).disabled = bool(errors) or not changed
        return not errors and bool(changed)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "apply":
            self.action_apply()
        else:
            self.action_cancel()

    def action_apply(self) -> None:
        if self._check():
            self.dismiss(self.values())

    def action_cancel(self) -> None:
        self.dismiss(None)
