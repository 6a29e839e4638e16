"""What can go wrong running a query in the engine, as kinds of our own: `be` never speaks MySQL,
the FE maps each kind to an error code."""

from __future__ import annotations


class EngineError(Exception):
    FIELDS: tuple[str, ...] = ("message",)  # the attributes a kind is made again from, in order

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class UnknownFunction(EngineError):
    """A function the engine does not offer (not on the allow-list, or unknown to DuckDB)."""

    FIELDS = ("name",)

    def __init__(self, name: str):
        super().__init__(f"FUNCTION {name} does not exist")
        self.name = name


class SourceNotAllowed(EngineError):
    """A FROM item that is not a plain table name or a subquery (table functions, VALUES, ...)."""


class UnknownColumn(EngineError):
    FIELDS = ("name",)

    def __init__(self, name: str):
        super().__init__(f"Unknown column '{name}'")
        self.name = name


class WrongColumnCount(EngineError):
    """A subquery or row gives more columns than its place takes."""

    FIELDS = ()

    def __init__(self):
        super().__init__("Operand should contain 1 column(s)")


class OrderTermOutOfRange(EngineError):
    """ORDER BY <n> with n beyond the select list."""

    FIELDS = ()

    def __init__(self):
        super().__init__("Unknown column in 'order clause': the ORDER BY position is out of range")


class NotGrouped(EngineError):
    """A column neither grouped by nor aggregated, in a query that aggregates."""

    FIELDS = ("column",)

    def __init__(self, column: str):
        super().__init__(f"nonaggregated column '{column}'")
        self.column = column


class NoTables(EngineError):
    """`*` in a query without FROM."""

    FIELDS = ()

    def __init__(self):
        super().__init__("No tables used")


class InvalidQuery(EngineError):
    """DuckDB could not parse what it was given."""


class ArithmeticOverflow(EngineError):
    """Integer arithmetic past its type's range (MySQL's 1690)."""

    FIELDS = ("type_name", "expression")

    def __init__(self, type_name: str, expression: str):
        super().__init__(f"{type_name} value is out of range in '({expression})'")
        self.type_name = type_name
        self.expression = expression


class InvalidValue(EngineError):
    """A value could not be converted or is out of range."""


class QueryFailed(EngineError):
    """Anything else DuckDB refused; the message is DuckDB's first line, without its internals."""


class QueryInterrupted(EngineError):
    FIELDS = ()

    def __init__(self):
        super().__init__("Query execution was interrupted")


class QueryAbandoned(QueryInterrupted):
    """The one who asked went away (its client disconnected): the query was stopped."""


class QueryTimedOut(EngineError):
    FIELDS = ("seconds",)

    def __init__(self, seconds: float):
        super().__init__(f"Query ran longer than {seconds:g} s")
        self.seconds = seconds


class MemoryLimitExceeded(EngineError):
    FIELDS = ("limit_bytes",)

    def __init__(self, limit_bytes: int):
        super().__init__(f"Query needed more than {limit_bytes} bytes of memory")
        self.limit_bytes = limit_bytes


class EngineBusy(EngineError):
    FIELDS = ("running", "waiting")

    def __init__(self, running: int, waiting: int):
        super().__init__(f"{running} queries running and {waiting} waiting")
        self.running = running
        self.waiting = waiting
