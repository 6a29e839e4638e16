"""Every bound of the web console in one place."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ConsoleLimits:
    max_logins: int = (
        64  # logged-in browsers at once; past it the least recently seen is logged out
    )
    idle_seconds: float = 1800.0  # a login unused this long is logged out
    page_rows: int = 100  # rows of a result shown per page
    max_cell_chars: int = 2000  # a longer value is shown cut, with a mark
    max_sql_bytes: int = 1 << 20  # a statement sent from the editor
    chart_points: int = 600  # samples kept per chart (one per chart_interval_seconds)
    chart_interval_seconds: float = 1.0

    def __post_init__(self) -> None:
        assert self.max_logins > 0 and self.idle_seconds > 0
        assert 0 < self.page_rows <= 10_000
        assert self.max_cell_chars >= 16
        assert self.max_sql_bytes > 0
        assert self.chart_points > 1 and self.chart_interval_seconds > 0
