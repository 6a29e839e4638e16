"""MySQL error codes, their SQLSTATEs, and the exception statement execution raises."""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    """Server error codes, named as in MySQL's server error reference (without the ER_ prefix)."""

    DB_CREATE_EXISTS = 1007
    DB_DROP_EXISTS = 1008
    CON_COUNT_ERROR = 1040
    HANDSHAKE_ERROR = 1043
    DBACCESS_DENIED_ERROR = 1044
    ACCESS_DENIED_ERROR = 1045
    NO_DB_ERROR = 1046
    UNKNOWN_COM_ERROR = 1047
    BAD_NULL_ERROR = 1048
    BAD_DB_ERROR = 1049
    TABLE_EXISTS_ERROR = 1050
    BAD_TABLE_ERROR = 1051
    NON_UNIQ_ERROR = 1052
    SERVER_SHUTDOWN = 1053
    BAD_FIELD_ERROR = 1054
    DUP_FIELDNAME = 1060
    DUP_KEYNAME = 1061
    DUP_ENTRY = 1062
    PARSE_ERROR = 1064
    EMPTY_QUERY = 1065
    NO_TABLES_USED = 1096
    WRONG_FIELD_WITH_GROUP = 1055
    MIX_OF_GROUP_FUNC_AND_FIELDS = 1140
    OPERAND_COLUMNS = 1241
    ILLEGAL_VALUE_FOR_TYPE = 1367
    CANT_DROP_FIELD_OR_KEY = 1091
    NO_SUCH_THREAD = 1094
    KILL_DENIED_ERROR = 1095
    UNKNOWN_ERROR = 1105
    UNKNOWN_TABLE = 1109
    PASSWORD_NO_MATCH = 1133
    WRONG_VALUE_COUNT_ON_ROW = 1136
    NONEXISTING_GRANT = 1141
    TABLEACCESS_DENIED_ERROR = 1142
    COLUMNACCESS_DENIED_ERROR = 1143
    NO_SUCH_TABLE = 1146
    SYNTAX_ERROR = 1149
    NET_PACKET_TOO_LARGE = 1153
    NET_PACKETS_OUT_OF_ORDER = 1156
    NET_READ_ERROR = 1158
    NET_READ_INTERRUPTED = 1159
    NET_ERROR_ON_WRITE = 1160
    UNKNOWN_SYSTEM_VARIABLE = 1193
    LOCK_WAIT_TIMEOUT = 1205
    LOCK_DEADLOCK = 1213
    WRONG_ARGUMENTS = 1210
    SPECIFIC_ACCESS_DENIED_ERROR = 1227
    WRONG_VALUE_FOR_VAR = 1231
    WRONG_TYPE_FOR_VAR = 1232
    NOT_SUPPORTED_YET = 1235
    UNKNOWN_STMT_HANDLER = 1243
    COLLATION_CHARSET_MISMATCH = 1253
    DATA_OUT_OF_RANGE = 1264
    OPTION_PREVENTS_STATEMENT = 1290
    TRUNCATED_WRONG_VALUE = 1292
    UNSUPPORTED_PS = 1295
    INVALID_CHARACTER_STRING = 1300
    SP_DOES_NOT_EXIST = 1305
    QUERY_INTERRUPTED = 1317
    TRUNCATED_WRONG_VALUE_FOR_FIELD = 1366
    CANNOT_USER = 1396
    DATA_TOO_LONG = 1406
    WRONG_PARAMCOUNT_TO_NATIVE_FCT = 1582
    MAX_PREPARED_STMT_COUNT_REACHED = 1461
    READ_ONLY_MODE = 1836
    MALFORMED_PACKET = 1835
    CONNECTION_KILLED = 1927
    QUERY_TIMEOUT = 3024
    SECURE_TRANSPORT_REQUIRED = 3159
    USER_DOES_NOT_EXIST = 3162
    SESSION_WAS_KILLED = 3169
    CAPACITY_EXCEEDED = 3170
    USER_ACCESS_DENIED_FOR_USER_ACCOUNT_BLOCKED_BY_PASSWORD_LOCK = 3955
    UNKNOWN_CATALOG = 5086  # Doris's ERR_UNKNOWN_CATALOG


SQLSTATES: dict[int, str] = {
    ErrorCode.PASSWORD_NO_MATCH: "42000",
    ErrorCode.DB_CREATE_EXISTS: "HY000",
    ErrorCode.DB_DROP_EXISTS: "HY000",
    ErrorCode.CON_COUNT_ERROR: "08004",
    ErrorCode.HANDSHAKE_ERROR: "08S01",
    ErrorCode.DBACCESS_DENIED_ERROR: "42000",
    ErrorCode.ACCESS_DENIED_ERROR: "28000",
    ErrorCode.NO_DB_ERROR: "3D000",
    ErrorCode.UNKNOWN_COM_ERROR: "08S01",
    ErrorCode.BAD_NULL_ERROR: "23000",
    ErrorCode.BAD_DB_ERROR: "42000",
    ErrorCode.TABLE_EXISTS_ERROR: "42S01",
    ErrorCode.BAD_TABLE_ERROR: "42S02",
    ErrorCode.NON_UNIQ_ERROR: "23000",
    ErrorCode.SERVER_SHUTDOWN: "08S01",
    ErrorCode.BAD_FIELD_ERROR: "42S22",
    ErrorCode.DUP_FIELDNAME: "42S21",
    ErrorCode.DUP_KEYNAME: "42000",
    ErrorCode.DUP_ENTRY: "23000",
    ErrorCode.PARSE_ERROR: "42000",
    ErrorCode.EMPTY_QUERY: "42000",
    ErrorCode.OPERAND_COLUMNS: "21000",
    ErrorCode.COLLATION_CHARSET_MISMATCH: "42000",
    ErrorCode.WRONG_FIELD_WITH_GROUP: "42000",
    ErrorCode.MIX_OF_GROUP_FUNC_AND_FIELDS: "42000",
    ErrorCode.ILLEGAL_VALUE_FOR_TYPE: "22007",
    ErrorCode.CANT_DROP_FIELD_OR_KEY: "42000",
    ErrorCode.NO_SUCH_THREAD: "HY000",
    ErrorCode.KILL_DENIED_ERROR: "HY000",
    ErrorCode.UNKNOWN_ERROR: "HY000",
    ErrorCode.UNKNOWN_TABLE: "42S02",
    ErrorCode.WRONG_VALUE_COUNT_ON_ROW: "21S01",
    ErrorCode.NONEXISTING_GRANT: "42000",
    ErrorCode.TABLEACCESS_DENIED_ERROR: "42000",
    ErrorCode.COLUMNACCESS_DENIED_ERROR: "42000",
    ErrorCode.NO_SUCH_TABLE: "42S02",
    ErrorCode.SYNTAX_ERROR: "42000",
    ErrorCode.NET_PACKET_TOO_LARGE: "08S01",
    ErrorCode.NET_PACKETS_OUT_OF_ORDER: "08S01",
    ErrorCode.NET_READ_ERROR: "08S01",
    ErrorCode.NET_READ_INTERRUPTED: "08S01",
    ErrorCode.NET_ERROR_ON_WRITE: "08S01",
    ErrorCode.UNKNOWN_SYSTEM_VARIABLE: "HY000",
    ErrorCode.LOCK_WAIT_TIMEOUT: "HY000",
    ErrorCode.LOCK_DEADLOCK: "40001",
    ErrorCode.WRONG_ARGUMENTS: "HY000",
    ErrorCode.SPECIFIC_ACCESS_DENIED_ERROR: "42000",
    ErrorCode.WRONG_VALUE_FOR_VAR: "42000",
    ErrorCode.WRONG_TYPE_FOR_VAR: "42000",
    ErrorCode.NOT_SUPPORTED_YET: "42000",
    ErrorCode.UNKNOWN_STMT_HANDLER: "HY000",
    ErrorCode.DATA_OUT_OF_RANGE: "22003",
    ErrorCode.OPTION_PREVENTS_STATEMENT: "HY000",
    ErrorCode.TRUNCATED_WRONG_VALUE: "22007",
    ErrorCode.UNSUPPORTED_PS: "HY000",
    ErrorCode.INVALID_CHARACTER_STRING: "HY000",
    ErrorCode.SP_DOES_NOT_EXIST: "42000",
    ErrorCode.QUERY_INTERRUPTED: "70100",
    ErrorCode.TRUNCATED_WRONG_VALUE_FOR_FIELD: "HY000",
    ErrorCode.CANNOT_USER: "HY000",
    ErrorCode.DATA_TOO_LONG: "22001",
    ErrorCode.WRONG_PARAMCOUNT_TO_NATIVE_FCT: "42000",
    ErrorCode.MAX_PREPARED_STMT_COUNT_REACHED: "42000",
    ErrorCode.READ_ONLY_MODE: "HY000",
    ErrorCode.MALFORMED_PACKET: "HY000",
    ErrorCode.CONNECTION_KILLED: "70100",
    ErrorCode.QUERY_TIMEOUT: "HY000",
    ErrorCode.USER_DOES_NOT_EXIST: "HY000",
    ErrorCode.SESSION_WAS_KILLED: "HY000",
    ErrorCode.CAPACITY_EXCEEDED: "HY000",
    ErrorCode.USER_ACCESS_DENIED_FOR_USER_ACCOUNT_BLOCKED_BY_PASSWORD_LOCK: "HY000",
    ErrorCode.UNKNOWN_CATALOG: "42000",
}

DEFAULT_SQLSTATE = "HY000"


def sqlstate_for(code: int) -> str:
    return SQLSTATES.get(code, DEFAULT_SQLSTATE)


class QueryError(Exception):
    """A statement failed with a MySQL error the client should see as is.

    Raise it anywhere in statement execution; the connection turns it into an ERR packet and keeps
    serving the client.
    """

    def __init__(self, code: int, message: str, sqlstate: str | None = None):
        sqlstate = sqlstate or sqlstate_for(code)
        assert 1000 <= code <= 65535, code
        assert len(sqlstate) == 5 and sqlstate.isascii(), sqlstate
        super().__init__(f"({code}, {sqlstate}) {message}")
        self.code = code
        self.message = message
        self.sqlstate = sqlstate


class ConnectionAborted(Exception):
    """The connection must end: its client has been told why (or cannot be told anything)."""
