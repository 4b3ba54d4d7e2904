"""Recent requests of the live coding load: bounded DataTable, newest on top."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable

VERDICT_STYLE = {"pass": "green", "fail": "red", "error": "red", "timeout": "red",
                 "no_code": "yellow", "truncated": "yellow"}


class RequestsTable(DataTable):
    def __init__(self, max_rows: int = 200, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.max_rows = max_rows
        self._keys: list[Any] = []
        self.passed = 0
        self.total = 0

    def on_mount(self) -> None:
        self.add_columns("problem", "tokens", "tok/s", "accept", "ttft", "verdict")

    def add_request(self, row: dict[str, Any]) -> None:
        from rich.text import Text

        verdict = row.get("verdict") or "-"
        self.total += 1
        self.passed += verdict == "pass"
        accept = row.get("accept_len")
        key = self.add_row(
            str(row.get("problem", "?"))[:18],
            str(row.get("tokens", "-")),
            f"{row.get('tok_s', 0.0):.0f}",
            "-" if accept is None else f"{accept:.2f}",
            "-" if row.get("ttft_s") is None else f"{row['ttft_s'] * 1000:.0f}ms",
            Text(verdict, VERDICT_STYLE.get(verdict, "")),
        )
        self._keys.append(key)
        if len(self._keys) > self.max_rows:
            self.remove_row(self._keys.pop(0))
        self.move_cursor(row=self.row_count - 1)
        self.border_title = f"requests: {self.passed}/{self.total} pass"
