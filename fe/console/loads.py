"""The Loads page's rows: the loads the TN keeps of the databases shown, asked of the data plane
once per page (SHOW LOAD and SHOW STREAM LOAD ask it once per database each), shown as those two
statements show them to the logged-in user."""

from __future__ import annotations

from be.service.errors import ServiceError
from fe.console.statements import Failure
from fe.security import privileges
from fe.statements.show import LOAD_STATES, load_time

LOAD_COLUMNS = (
    "Label", "Database", "Table", "Source", "State", "LoadedRows", "FilteredRows", "LoadBytes",
    "Started", "Seconds", "User", "Message",
)  # fmt: skip
UNKNOWN_ERROR = 1105


def load_rows(session, databases: list[str]) -> tuple[list[list], Failure | None]:
    """One row per load of the databases whose table the user may see; or the failure to ask
    the TN."""
    plane = session.services.data_plane
    if plane is None or not databases:
        return [], None
    try:
        records = plane.load_records(None)
    except ServiceError as error:
        return [], Failure(UNKNOWN_ERROR, "HY000", f"the loads could not be listed: {error}")
    shown = set(databases)
    rows = [
        [r.label, r.db, r.table, r.source, LOAD_STATES[r.state], r.loaded_rows,
         r.filtered_rows, r.load_bytes, load_time(r.started_ms), _seconds(r.started_ms, r.finished_ms),
         r.user, r.message or "OK"]
        for r in sorted(records, key=lambda r: r.started_ms)
        if r.db in shown and privileges.has_any(session.user, r.db, r.table)
    ]  # fmt: skip
    return rows, None


def _seconds(started_ms: int, finished_ms: int) -> str:
    """Whole seconds between the two times as shown (to the second); "" unless both are known."""
    if not started_ms or not finished_ms:
        return ""
    return f"{finished_ms // 1000 - started_ms // 1000:.0f}"
