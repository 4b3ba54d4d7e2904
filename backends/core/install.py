"""Whether ddtune's four top-level packages are ddtune's own where the import system finds them.

The wheel installs generic names (``tui``, ``workloads``, ``backends``, ``presets``).
Beside another tool (SGLang's environment, say) a distribution may install one of the same names,
or put a folder of that name on ``sys.path`` ahead of ddtune's: then ddtune, or its load worker and
simulator, import someone else's code or data. ``doctor`` names each such package, the distribution
that installs it, and the fix (README, "Install beside SGLang")."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from backends.core.version import DIST


@dataclass(frozen=True)
class Shadow:
    """One of ddtune's packages that another install provides: ``hides`` when the import system finds
    that one first (``found``), else it waits behind ddtune's (or overwrote its files in place)."""

    package: str
    found: str
    distribution: str | None  # "name version" of the other distribution, None for a bare folder
    hides: bool

    def sentence(self) -> str:
        who = f"the distribution {self.distribution}" if self.distribution else "a folder that no distribution owns"
        if self.hides:
            return f"'{self.package}' is imported from {self.found}, installed by {who}, not ddtune's"
        return f"{who} also installs a top-level '{self.package}' package (ddtune's is found first, at {self.found})"


def own_root() -> Path:
    """The folder ddtune's packages are installed in (a site-packages, or the checkout of an editable
    install): the one this code runs from."""
    return Path(__file__).resolve().parents[2]


def foreign_packages(packages: tuple[str, ...]) -> list[Shadow]:
    """Each of ``packages`` (ddtune's top-level ones: paths.PACKAGES) that another distribution
    installs, or that a folder ahead of ddtune's on ``sys.path`` hides. Reads the import path and the
    installed metadata; imports nothing."""
    from importlib.machinery import PathFinder
    from importlib.metadata import distribution, packages_distributions

    providers = packages_distributions()
    root = own_root()
    found: list[Shadow] = []
    for package in packages:
        spec = PathFinder.find_spec(package)  # a fresh look along sys.path, as a new ddtune process would
        places = list(spec.submodule_search_locations or []) if spec is not None else []
        where = Path(places[0]).resolve() if places else None
        others = []
        for name in dict.fromkeys(providers.get(package, [])):
            if name.lower().replace("_", "-") == DIST:
                continue
            dist = distribution(name)
            others.append((f"{dist.metadata['Name']} {dist.version}", Path(str(dist.locate_file(""))).resolve()))
        if where is not None and where != root / package:
            owner = next((label for label, base in others if base == where.parent), None)
            found.append(Shadow(package, str(where), owner, hides=True))
        elif others:
            found.append(Shadow(package, str(where or root / package), others[0][0], hides=False))
    return found

