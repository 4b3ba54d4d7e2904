"""ddtune doctor: check the setup, one line per check, with the fix for each problem."""

from __future__ import annotations

HELP = "check ddtune's install, the config, the server interpreter and flags, the knobs, the port, the state, " \
       "the GPU, the sandbox"
EXAMPLES = """\
examples:
  ddtune doctor
  ddtune --config box.toml doctor

When another distribution installs or hides one of ddtune's four packages (tui, backends,
workloads, presets), the first line names it and the package (the fix: install ddtune in an
environment of its own). Exit 0 when every check passes (warnings allowed), 1 when one fails.
"""


def add_arguments(parser) -> None:
    pass


def _line(ok: bool | None, what: str, detail: str = "") -> None:
    mark = {True: "ok  ", False: "FAIL", None: "warn"}[ok]
    print(f"[{mark}] {what}" + (f": {detail}" if detail else ""))


def run(args) -> int:
    from backends.server import run_doctor

    report = run_doctor(getattr(args, "config", None))
    for check in report.checks:
        _line(check.ok, check.what, check.detail)
    if report.gpu is None:  # the config could not be read
        return 1
    failed = report.failed
    try:
        from workloads.grading import sandbox_checks

        checks = sandbox_checks()
    except ImportError as exc:  # another distribution's 'workloads' hides ddtune's: the packages line says whose
        failed = True
        _line(False, "grading sandbox", f"not checked: {exc} (see the packages line)")
    else:
        for check in checks:
            _line(check.ok, check.what, check.detail)
        failed = failed or any(check.ok is False for check in checks)
    _line(report.gpu.ok, report.gpu.what, report.gpu.detail)
    return 1 if failed else 0
