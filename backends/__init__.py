"""The server and the machine it runs on: lifecycle, logs, readiness, knobs, telemetry.

Never imports textual, rich, plotext or tui (tests/unit/test_layers.py checks it).
"""

import sys

# httpx imports its command-line tool (httpx._main) whenever click is installed, and the tool imports
# click, pygments and rich: in an SGLang environment (uvicorn brings click) each headless command paid
# about 0.1 s of imports for them, and the layers that never load the UI stack loaded rich. Nothing
# here uses the tool; marked absent, httpx takes its own fallback (it catches the ImportError).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
