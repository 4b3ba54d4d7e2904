"""The help screen: what the panels mean and which keys do what."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown

HELP = """\
# ddtune

**Server panel**: backend, pid, URL, SGLang version; the startup phase with progress and the
time expected from earlier starts; each knob as requested and as the server reports it
(`✓ verified`, `✗ MISMATCH`, `… unverified` when the server does not say).

**GPU panel**: per GPU, memory with the server's share (magenta) and others (blue), utilisation
history, power, temperature; an idle machine's jitter (a few watts, a degree, a few per cent of
CPU) is held still, not redrawn every second. `g` (or a click) lists every GPU process: pid, user,
GPU memory, SM utilisation, command, the server's marked.

**Plots**: tok/s and acceptance length of the live coding load (client: the rolling 5 s rate, the
1 s rate faint behind it; "approx" when the server sends no token counts and chunks are counted),
the server's own `Decode batch` throughput, and in green the no-speculation tok/s when a saved run
or sweep baseline of this model knows it; yellow lines mark config changes, labelled with the
change. The last 10 minutes stay on screen across restarts.

**A/B strip** (under the plots): per configuration since its marker, mean tok/s and acceptance
with a 95% interval, requests and pass rate, and the change against the configuration before (or
the baseline pinned with `b`): `+12.4% tok/s [8.1, 16.7]`, in colour only when the interval
excludes no change.

| key | action |
|---|---|
| `k` | edit knobs; Apply restarts the server and verifies the knobs took effect |
| `a` | apply the config file's knobs, after asking (after tuning, or when re-attaching kept a tuned server) |
| `u` | start, re-attach, or retry after a failed start |
| `x` | stop the server (asks first) |
| `l` | start / stop the live load; it pauses across a restart and resumes once verified |
| `p` | the load's prompts: coding, story, humaneval, a JSON/JSONL file, hf:NAME (a new A/B) |
| `t` | narrow terminal: the recent requests in the plots' place (and back) |
| `↑` `↓` `Enter` | in the requests table: pick a request, open it: its verdict and why (the failed test, the error) |
| `j` `k` | down / up in any list that has focus (requests, results, sweep, search, GPU processes) |
| `g` | GPU processes: every process on the GPUs, as nvitop lists them, the server's marked |
| `b` | pin the current configuration as the A/B strip's baseline |
| `f` | cycle the log filter: all, errors (fatal, error, warning), draft, decode; ddtune's notes show in all |
| `/` | search the log (a capital letter makes it case-sensitive); Enter goes to the next match, Esc closes |
| `n` / `N` | next / previous line matching the search |
| `←` `→` `End` | with the log focused: scroll long lines sideways; End follows the tail again |
| `r` | results: past runs, compare two per cell |
| `s` | sweep: pick presets, run a quick sweep, see the winner; a baseline checks outputs (identical/DIFFERS) |
| `S` | knob search (`ddtune search`): a space's fastest config with few restarts; Esc stops it; `a`: apply its best |
| `?` `f1` | this help (f1 where a text field takes ?; ctrl+q quits there) |
| `ctrl+p` | command palette (each action with its key) |
| `q` `ctrl+q` `ctrl+c` | quit (asks whether to leave the server running) |

Headless equivalents: `ddtune up/restart/down/status`, `ddtune bench`, `ddtune eval`, `ddtune load`,
`ddtune sweep`, `ddtune search`.
"""


class HelpScreen(ModalScreen[None]):
    """Scrolls (arrows, PgUp/PgDn, the wheel) when it is taller than the terminal, as at 80x24."""

    BINDINGS = [Binding("escape,q,question_mark", "app.pop_screen", "Close", id="help.close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen VerticalScroll { width: 90%; max-width: 100; height: auto; max-height: 90%; border: thick $accent; }
    HelpScreen Markdown { height: auto; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(HELP)

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()
