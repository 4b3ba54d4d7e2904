"""``ddtune doctor``'s lines about the grading sandbox: whether it can run here and each of its
layers as the probe saw them from inside, as the doctor's own typed ``Check`` lines."""

from __future__ import annotations

from backends.core import DdtuneError
from backends.server import Check


def sandbox_checks() -> list[Check]:
    """The sandbox (fails where it cannot run here, with the fix), then each protection of it (a
    missing layer is a warning: grading still runs)."""
    from workloads.grading.sandbox_isolation import isolation, protections

    found: list[Check] = []
    try:
        sandbox = isolation()
        found.append(Check(True, "grading sandbox", f"{sandbox.kind}: {sandbox.detail}"))
        found += [Check(layer.active or None, f"  {layer.name}", layer.detail) for layer in protections()]
    except DdtuneError as exc:
        found.append(Check(False, "grading sandbox", f"{exc.message} (fix: {exc.hint})"))
    return found
