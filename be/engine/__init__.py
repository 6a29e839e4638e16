"""The query engine shared by the FE (information_schema) and the CN: DuckDB locked down to the
Arrow tables it is handed, the functions of an allow-list, bounded time, memory and threads."""

from be.engine.allow_list import check
from be.engine.arrow_rows import answer_of
from be.engine.errors import (
    ArithmeticOverflow,
    EngineBusy,
    EngineError,
    InvalidQuery,
    InvalidValue,
    MemoryLimitExceeded,
    NoTables,
    NotGrouped,
    OrderTermOutOfRange,
    QueryAbandoned,
    QueryFailed,
    QueryInterrupted,
    QueryTimedOut,
    SourceNotAllowed,
    UnknownColumn,
    UnknownFunction,
    WrongColumnCount,
)
from be.engine.executor import Answer, ArrowAnswer, Engine
from be.engine.row_stream import StreamedAnswer, StreamLimits

__all__ = [
    "Answer",
    "ArrowAnswer",
    "Engine",
    "EngineBusy",
    "EngineError",
    "InvalidQuery",
    "ArithmeticOverflow",
    "InvalidValue",
    "MemoryLimitExceeded",
    "NoTables",
    "NotGrouped",
    "OrderTermOutOfRange",
    "QueryAbandoned",
    "QueryFailed",
    "QueryInterrupted",
    "QueryTimedOut",
    "SourceNotAllowed",
    "StreamLimits",
    "StreamedAnswer",
    "UnknownColumn",
    "UnknownFunction",
    "WrongColumnCount",
    "answer_of",
    "check",
]
