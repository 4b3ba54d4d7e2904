"""Where the live plots' restart-marker labels go, so that they never overlap (pure).

After a sweep or search the markers crowd together: each label is numbered (``#3 budget 16 -> none``),
put on the lowest of a few staggered rows where it fits beside its line (right of it, else left),
cut to the room there (``#3 budg…``), or shortened to its number; the full text of every marker is
in the log pane (tui/screens/main.py), under the same number.
"""

from __future__ import annotations

from dataclasses import dataclass

MIN_CUT = 6  # a cut label keeps at least this many characters ("#3 bu…"), else only its number shows


@dataclass(frozen=True)
class Placed:
    col: int     # the first column of the text
    row: int     # 0: the bottom row, then upwards
    text: str

    @property
    def end(self) -> int:
        return self.col + len(self.text)


def _free(taken: list[tuple[int, int]], start: int, end: int) -> bool:
    return start >= 0 and all(end + 1 <= a or start >= b + 1 for a, b in taken)  # one blank column between


def place(markers: list[tuple[int, str]], columns: int, rows: int = 3) -> list[Placed]:
    """``markers``: (column of the line, label) oldest first; ``columns`` of plotting area. Labels in
    ``rows`` rows, none overlapping another or running off the plot (the newest are placed first:
    when room runs out, the oldest labels shrink or go)."""
    taken: list[list[tuple[int, int]]] = [[] for _ in range(max(rows, 1))]
    placed: list[Placed] = []
    for col, label in sorted(markers, key=lambda m: -m[0]):
        number = label.split(" ", 1)[0]
        choice = None
        for text in _forms(label, number):
            for row, spans in enumerate(taken):
                for start in (col + 1, col - len(text)):  # right of the line, else left of it
                    if start + len(text) <= columns and _free(spans, start, start + len(text)):
                        choice = Placed(start, row, text)
                        break
                if choice:
                    break
            if choice:
                break
        if choice is not None:
            taken[choice.row].append((choice.col, choice.end))
            placed.append(choice)
    return sorted(placed, key=lambda p: (p.row, p.col))


def _forms(label: str, number: str):
    """The label in full, then cut shorter and shorter (to MIN_CUT), then its number alone."""
    yield label
    for n in range(len(label) - 1, MIN_CUT - 1, -1):
        yield label[:n - 1] + "…"
    if number != label:
        yield number
