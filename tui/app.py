"""The ddtune Textual app: thin. Screens render, the controller runs workers and posts messages."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import Screen

from tui.screens.main import MainScreen

if TYPE_CHECKING:
    from tui.controller import ConsoleController


class DdtuneApp(App, inherit_bindings=False):  # App's own two keys (ctrl+q, ctrl+c) are ours
    TITLE = "ddtune"
    CSS_PATH = "ddtune.tcss"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    # The footer shows the show=True bindings in this order and cuts the rest at the right edge: at
    # 80 columns Help and Quit come first, labels are one word, and the rarer keys are in help (?)
    # and the palette (ctrl+p) only. Not inherited: App's ctrl+q and ctrl+c would come first. Where
    # an input has focus and takes ? and q as text, the footer shows F1 and ctrl+q for the same
    # actions instead. The ids are what users remap.
    BINDINGS = [
        Binding("question_mark,f1", "help", "Help", id="app.help"),
        Binding("q", "quit_console", "Quit", id="app.quit"),
        Binding("k", "edit_knobs", "Knobs", id="app.knobs"),
        Binding("l", "toggle_load", "Load", id="app.load"),
        Binding("u", "start_server", "Start", id="app.start"),
        Binding("f", "cycle_log_filter", "Filter", id="app.log_filter"),
        Binding("r", "results", "Results", id="app.results"),
        Binding("s", "sweep", "Sweep", id="app.sweep"),
        Binding("a", "apply_config_file", "Apply file", show=False, id="app.apply_file"),
        Binding("x", "stop_server", "Stop server", show=False, id="app.stop"),
        Binding("t", "toggle_requests", "Requests", show=False, id="app.requests"),
        Binding("b", "pin_baseline", "Pin A/B baseline", show=False, id="app.pin_baseline"),
        Binding("p", "pick_prompts", "Prompts", show=False, id="app.prompts"),
        Binding("S", "search", "Knob search", show=False, id="app.search"),
        Binding("g", "gpu_detail", "GPU processes", show=False, id="app.gpu_detail"),
        # Ctrl+Q and Ctrl+C ask the same question as q: leaving must never stop the server by surprise
        # (ctrl+c hidden: the screen's own ctrl+c comes first in the footer's order, before ? and q)
        Binding("ctrl+q", "quit_console", "Quit", priority=True, id="app.quit_ctrl"),
        Binding("ctrl+c", "quit_console", "Quit", show=False, priority=True, id="app.quit_ctrl_c"),
    ]
    # every action, for the command palette (Ctrl+P): (title, help, action)
    ACTIONS = (
        ("Edit knobs", "change budget/topk/window; Apply restarts the server and verifies them", "edit_knobs"),
        ("Apply the config file", "restart with the config file's knobs (asks first)", "apply_config_file"),
        ("Start / retry the server", "start it, re-attach to it, or retry a failed start", "start_server"),
        ("Stop the server", "stop the managed server (asks first)", "stop_server"),
        ("Load on/off", "stream prompts (coding by default) and plot tok/s and acceptance", "toggle_load"),
        ("Load prompts", "what the live load sends: coding, story, humaneval, a JSON/JSONL file, hf:NAME",
         "pick_prompts"),
        ("Cycle the log filter", "all, errors, draft, decode", "cycle_log_filter"),
        ("Requests / plots", "on a narrow terminal, show the recent requests in the plots' place", "toggle_requests"),
        ("Pin the A/B baseline", "the A/B strip compares every later configuration with the current one",
         "pin_baseline"),
        ("GPU processes", "every process on the GPUs, as nvitop lists them; the server's marked", "gpu_detail"),
        ("Results", "past runs; compare two per cell", "results"),
        ("Sweep", "pick presets, run a quick sweep, see the winner", "sweep"),
        ("Knob search", "type a knob space; find its fastest configuration with few restarts (ddtune search)",
         "search"),
        ("Help", "what the panels mean, every key", "help"),
        ("Quit", "leave the server running or stop it", "quit_console"),
    )

    def __init__(self, controller: ConsoleController | None = None, note: str | None = None,
                 sim_wrong: float | None = None) -> None:
        """``sim_wrong``: on the simulator, the share of coding answers it gets wrong on purpose
        (``backends.server.console_setup``), said beside the verdicts."""
        super().__init__()
        self.controller = controller
        self.note = note
        self.sim_wrong = sim_wrong
        self.main = MainScreen()
        self.said: deque[str] = deque(maxlen=50)  # the latest notifications' texts, after their toasts go

    TICK_S = 1.0  # the one periodic tick: every periodic redraw hangs off it

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = False) -> None:
        """Every notification is plain text, whatever a caller asks (``Widget.notify`` passes
        Textual's default, markup on): they carry server text, which is never markup (tui.literal)."""
        self.said.append(message)
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=False)

    def _on_delivery_complete(self, event) -> None:
        """A file Textual delivered (a screenshot by its own path): said as plain text. Textual's own
        handler says it with markup (``[$text-success]``), which every notification here shows raw."""
        event.prevent_default()
        if event.name == "screenshot":
            self.notify(f"saved the screenshot to {event.path}" if event.path else "saved the screenshot",
                        title="Screenshot", timeout=6)

    def on_mount(self) -> None:
        self._ticks = 0
        self.set_interval(self.TICK_S, self._tick)
        self.push_screen(self.main)
        if self.note:
            self.sub_title = self.note
            self.notify(self.note, timeout=6)
        if self.sim_wrong is not None:
            self.main.say_sim_wrong(self.sim_wrong)
        if self.controller is not None:
            self.controller.attach(self.main.post_message, self.run_worker)

    def _tick(self) -> None:
        self._ticks += 1
        if self.controller is not None:
            self.controller.tick()
        if self.main.is_mounted:
            self.main.tick(self._ticks)

    # --- actions ----------------------------------------------------------------------------
    def action_cycle_log_filter(self) -> None:
        from tui.widgets.log_pane import LogPane

        name = self.main.query_one(LogPane).cycle_filter()
        self.notify(f"log filter: {name}", timeout=2)

    def action_edit_knobs(self) -> None:
        if self.controller is None:
            return
        from backends.knobs import knob_form
        from tui.screens.knob_editor import KnobEditor

        controller = self.controller
        config = controller.config
        form = knob_form(config)
        current = form.values  # every declared knob, so a new one is offered with no code

        def applied(values: dict[str, str] | None) -> None:
            if values is None:
                return
            typed = form.check(values).values  # the editor applies only when nothing is wrong
            changed = {k: typed[k] for k, v in values.items() if v != current[k]}
            controller.restart_with(changed)
            self.notify("restarting with " + ", ".join(f"{k}={v}" for k, v in changed.items()), timeout=4)

        editor = KnobEditor(current, form.presets(), lambda values: form.check(values).problems,
                            {name: form.help[name] for name in current})
        self.push_screen(editor, applied)

    def action_apply_config_file(self) -> None:
        """Restart with the config file's knobs, after asking (as stopping does): it reloads the model."""
        if self.controller is None:
            return
        from tui.screens.quit_dialog import ConfirmApply

        controller = self.controller
        now, wanted = controller.config, controller.file_config
        if wanted.config_hash() == now.config_hash():
            self.notify("the server already runs the config file's knobs", timeout=3)
            return
        changes = ", ".join(f"{k} {now.knobs.get(k)} -> {v}" for k, v in wanted.knobs.items()
                            if now.knobs.get(k) != v)

        def chosen(restart: bool | None) -> None:
            if restart and controller.apply_config_file():
                self.notify("restarting with the config file's knobs", timeout=4)

        self.push_screen(ConfirmApply(changes), chosen)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every action, its key in the title ("Edit knobs (k)"), so the palette teaches the keys."""
        from dataclasses import replace

        keys: dict[str, str] = {}
        for binding in self.BINDINGS:  # an action's first binding, and that binding's first key ("q", not ctrl+c)
            if isinstance(binding, Binding) and binding.action not in keys:
                keys[binding.action] = self.get_key_display(replace(binding, key=binding.key.split(",")[0]))
        for title, help_text, action in self.ACTIONS:
            key = f" ({keys[action]})" if action in keys else ""
            yield SystemCommand(title + key, help_text, lambda action=action: self.run_action(action))
        yield from (cmd for cmd in super().get_system_commands(screen) if cmd.title not in ("Quit",))

    def save_screenshot(self, filename: str | None = None, path: str | None = None,
                        time_format: str | None = None) -> str:
        from tui.screenshot import write_screenshot

        return str(write_screenshot(self, filename, path or "."))

    def deliver_screenshot(self, filename: str | None = None, path: str | None = None,
                           time_format: str | None = None) -> str | None:
        from tui.screenshot import deliver_screenshot

        return deliver_screenshot(self, filename, path)

    def on_other_config_running(self, message) -> None:
        """A start or restart met a server of another config file: ask before replacing it."""
        from tui.screens.quit_dialog import ConfirmReplace

        controller = self.controller

        def chosen(replace: bool | None) -> None:
            if replace and controller is not None:
                controller.replace_other()
                self.notify("replacing the other config's server", timeout=4)
            else:
                self.notify(f"kept pid {message.pid} running; u asks again", timeout=4)

        self.push_screen(ConfirmReplace(message.pid, message.phase, message.theirs, message.ours), chosen)

    def action_start_server(self) -> None:
        if self.controller is not None:
            self.controller.start()
            self.notify("starting (or re-attaching to) the server", timeout=3)

    def action_stop_server(self) -> None:
        if self.controller is None:
            return
        from tui.screens.quit_dialog import ConfirmStop

        controller = self.controller

        def chosen(stop: bool | None) -> None:
            if stop:
                controller.stop()
                self.notify("stopping the server…", timeout=4)

        self.push_screen(ConfirmStop(), chosen)

    def action_toggle_requests(self) -> None:
        if not self.main.has_class("-narrow"):
            self.notify("the requests are beside the plots at this width", timeout=2)
            return
        self.main.toggle_class("-requests")
        if self.main.has_class("-requests"):
            self.main.requests.focus()  # up/down pick a request, Enter says why it failed

    def action_toggle_load(self) -> None:
        if self.controller is None:
            return
        running = self.controller.toggle_load()
        source = self.controller.load_prompts
        self.notify(f"load starting ({source})" if running else "load stopping", timeout=2)

    def action_pick_prompts(self) -> None:
        if self.controller is None:
            return
        from tui.screens.prompts_picker import PromptsPicker
        from workloads.live import load_sources

        controller = self.controller

        def chosen(source: str | None) -> None:
            if source is not None and source != controller.load_prompts:
                restarted = controller.choose_prompts(source)
                self.notify(f"load prompts: {source}" + ("; the load restarts on them" if restarted else ""),
                            timeout=3)

        sources = load_sources()
        self.push_screen(PromptsPicker(controller.load_prompts, sources.builtins, sources.problem), chosen)

    def action_pin_baseline(self) -> None:
        if self.controller is None:
            return
        figures = self.controller.pin_baseline()
        self.notify(f"A/B baseline: {figures.name}; later configurations are compared with it", timeout=4)

    def action_gpu_detail(self) -> None:
        from tui.screens.gpu_detail import GpuDetail

        self.push_screen(GpuDetail(self.main.gpu))

    def action_results(self) -> None:
        from tui.screens.results import ResultsScreen

        self.push_screen(ResultsScreen())

    def action_sweep(self) -> None:
        if self.controller is None:
            return
        from backends.knobs import knob_form
        from tui.screens.sweep import SweepScreen

        self.push_screen(SweepScreen(self.controller, knob_form().preset_names()))

    def action_search(self) -> None:
        if self.controller is None:
            return
        from tui.screens.search import SearchScreen
        from workloads.search import SearchRequest

        self.push_screen(SearchScreen(self.controller, SearchRequest.example(self.controller.config).space))

    def action_help(self) -> None:
        from tui.screens.help import HelpScreen

        self.push_screen(HelpScreen())

    def action_quit_console(self) -> None:
        from tui.screens.quit_dialog import QuitDialog

        def chosen(choice: str | None) -> None:
            if choice is not None:
                self.run_worker(self._leave(choice == "stop"), exclusive=True, group="quit")

        controller = self.controller
        can_stop = controller is not None and controller.session.backend.CAN_STOP
        running = controller is not None and controller.server_running
        self.push_screen(QuitDialog(can_stop=can_stop, running=running), chosen)

    async def _leave(self, stop_server: bool) -> None:
        from tui.screens.search import SearchScreen

        for screen in self.screen_stack:  # a search under way stops first (resumable), its lanes stopped
            if isinstance(screen, SearchScreen):
                await screen.stop_search(restore=False)
        if self.controller is not None:
            if stop_server:
                self.notify("stopping the server…", timeout=10)
            await self.controller.detach(stop_server)
        self.exit()
