"""The leader's scheduled refreshes of asynchronous materialized views (`REFRESH ... ON SCHEDULE
EVERY n unit [STARTS 'datetime']`): a task on the FE's event loop that refreshes each view due,
as the user who made it (their grants decide what its query reads), every n units from its
STARTS, or from when this FE began to lead. A refresh that fails is logged and tried again at
the next one."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from fe.mysql.errors import QueryError
from fe.statements import materialized_views
from metadata.catalog import Catalog

logger = logging.getLogger(__name__)


class ViewRefresher:
    def __init__(self, catalog: Catalog, writer, new_session: Callable, check_seconds: Callable):
        self.catalog = catalog
        self.writer = writer
        self.new_session = new_session
        self.check_seconds = check_seconds
        self.refreshed_at: dict[int, float] = {}  # view id -> epoch second of its last refresh

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.check_seconds())
            if not self.writer.is_leader():
                self.refreshed_at.clear()  # a new leader counts from when it leads
                continue
            try:
                due = self._due(time.time())
            except Exception:  # a bug: the next look tries again
                logger.exception("no materialized view refreshed this time")
                continue
            for view_id in due:
                await self._refresh(view_id)

    def _due(self, now: float) -> list[int]:
        due = []
        scheduled = {}
        for table in list(self.catalog.tables.values()):
            schedule = materialized_views.schedule_of(table)
            if schedule is not None:
                scheduled[table.id] = schedule
        for view_id, (every, starts) in scheduled.items():
            first = starts - every if now < starts else now  # due at STARTS, or every from now
            last = self.refreshed_at.setdefault(view_id, first)
            if now >= starts and now - last >= every:
                due.append(view_id)
        for gone in set(self.refreshed_at) - set(scheduled):
            del self.refreshed_at[gone]
        return due

    async def _refresh(self, view_id: int) -> None:
        table = self.catalog.tables.get(view_id)
        database = self.catalog.dbs.get(table.db_id) if table is not None else None
        if database is None:
            return
        self.refreshed_at[view_id] = time.time()
        session = self.new_session()
        session.username, session.user_host = materialized_views.owner_of(table)
        session.database = database.name
        try:
            await materialized_views.refilled(session, database.name, table)
            logger.info("materialized view %s.%s refreshed", database.name, table.name)
        except QueryError as error:
            logger.warning(
                "materialized view %s.%s not refreshed: %s", database.name, table.name, error
            )
        except Exception:  # a bug: the next refresh is tried all the same
            logger.exception("materialized view %s.%s not refreshed", database.name, table.name)
