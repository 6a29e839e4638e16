"""Statements run as a logged-in user, their answers as text tables a page at a time.

A result's rows are taken from its source only as pages are asked for (a Pager), so a large
result is never held whole; a new statement closes the open one."""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from datetime import time as day_time
from decimal import Decimal

from fe.console.limits import ConsoleLimits
from fe.mysql.errors import QueryError
from fe.mysql.results import Result, as_column

UNKNOWN_ERROR = 1105


@dataclass
class Failure:
    code: int
    sqlstate: str
    message: str

    def __str__(self) -> str:
        return f"ERROR {self.code} ({self.sqlstate}): {self.message}"


@dataclass
class Page:
    columns: list[str] = field(default_factory=list)
    rows: list[list[str | None]] = field(default_factory=list)
    first_row: int = 0  # the number of rows before this page
    more: bool = False  # rows follow this page
    affected_rows: int = 0
    info: str = ""
    seconds: float = 0.0
    failure: Failure | None = None


class Pager:
    """The rows of one result, handed out a page at a time."""

    def __init__(self, result: Result, limits: ConsoleLimits):
        self.columns = [as_column(c).name for c in result.columns]
        self.limits = limits
        self.taken = 0
        self._rows = _rows_of(result.rows)
        self._peeked = None  # a row taken from the source to learn whether more follow
        self._done = False

    async def page(self) -> tuple[list[list[str | None]], int, bool]:
        """(the next page's rows as text, the rows before it, whether more follow)."""
        first = self.taken
        rows = []
        while len(rows) < self.limits.page_rows and not self._done:
            row = await self._next()
            if row is not None:
                rows.append([shown(v, self.limits.max_cell_chars) for v in row])
        self.taken += len(rows)
        more = not self._done and await self._peek()
        return rows, first, more

    async def all_rows(self) -> AsyncIterator[list]:
        while not self._done:
            row = await self._next()
            if row is not None:
                yield row

    async def _peek(self) -> bool:
        if self._peeked is None:
            self._peeked = await self._next()
        return self._peeked is not None

    async def _next(self):
        if self._peeked is not None:
            row, self._peeked = self._peeked, None
            return row
        try:
            return await anext(self._rows)
        except StopAsyncIteration:
            self._done = True
            return None

    async def close(self) -> None:
        """Stops the rows' source (a query still streaming stops)."""
        self._done = True
        await self._rows.aclose()


async def _rows_of(rows: Iterable | AsyncIterator) -> AsyncIterator:
    if hasattr(rows, "__aiter__"):
        async with contextlib.aclosing(rows) as parts:
            async for part in parts:
                for row in part:
                    yield row
        return
    iterator = iter(rows)
    while True:
        batch = list(itertools.islice(iterator, 1024))
        for row in batch:
            yield row
        if len(batch) < 1024:
            return


def shown(value, max_chars: int) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        text = value.decode("utf-8", errors="replace")
    elif isinstance(value, bool):
        text = str(int(value))
    elif isinstance(value, datetime):
        text = value.isoformat(sep=" ")
    elif isinstance(value, date | day_time | Decimal | timedelta):
        text = str(value)
    else:
        text = str(value)
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


async def run(session, sql: str) -> Result:
    """sql's answer in session, QueryError as MySQL would answer, anything else as 1105."""
    return await session.handle_query(sql, {})


def failure_of(error: Exception) -> Failure:
    if isinstance(error, QueryError):
        return Failure(error.code, error.sqlstate, error.message)
    return Failure(UNKNOWN_ERROR, "HY000", "The statement failed on the server; see fe.log")


async def page_of(session, sql: str, limits: ConsoleLimits) -> tuple[Page, Pager | None]:
    """The first page of sql's answer (and the pager for the rest, if the answer has rows)."""
    started = time.perf_counter()
    try:
        result = await run(session, sql)
    except Exception as error:  # noqa: BLE001 - every failure is shown as MySQL's error
        return Page(failure=failure_of(error), seconds=time.perf_counter() - started), None
    if not result.columns:
        page = Page(affected_rows=result.affected_rows, info=result.info)
        page.seconds = time.perf_counter() - started
        return page, None
    pager = Pager(result, limits)
    try:
        rows, first, more = await pager.page()
    except Exception as error:  # noqa: BLE001
        await pager.close()
        return Page(failure=failure_of(error), seconds=time.perf_counter() - started), None
    page = Page(pager.columns, rows, first, more, seconds=time.perf_counter() - started)
    return page, (pager if more else None)


async def table_of(session, sql: str, limits: ConsoleLimits) -> Page:
    """A whole small answer (SHOW statements of the pages), cut at a page of rows times ten."""
    started = time.perf_counter()
    try:
        result = await run(session, sql)
        if not result.columns:
            return Page(affected_rows=result.affected_rows, info=result.info)
        pager = Pager(result, ConsoleLimits(page_rows=min(10 * limits.page_rows, 10_000)))
        rows, _, more = await pager.page()
        await pager.close()
    except Exception as error:  # noqa: BLE001
        return Page(failure=failure_of(error), seconds=time.perf_counter() - started)
    return Page(pager.columns, rows, 0, more, seconds=time.perf_counter() - started)
