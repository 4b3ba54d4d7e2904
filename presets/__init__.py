"""The data ddtune ships, as a package of data only: flavours.toml (the knob table), knobs/*.toml
(server knob presets) and problems/coding.toml (the coding problems, with the reference solutions
the simulator answers from and the tests the grader runs).

A package, not a folder beside the code, so ``importlib.resources.files("presets")`` finds it
wherever the other packages are found: a checkout on sys.path, an editable install, or the wheel in
site-packages (backends/core/paths.py). Nothing here is code; nothing should be imported from here.
"""
