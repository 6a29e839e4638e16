"""Quire's MySQL wire-protocol front, built on mysql-mimic's authentication and session interface."""

from mysql_mimic.auth import IdentityProvider, User
from mysql_mimic.session import BaseSession

from fe.mysql.connection import (
    Account,
    Connection,
    NativePasswordPlugin,
    ProcessInfo,
    native_password_hash,
)
from fe.mysql.errors import ErrorCode, QueryError
from fe.mysql.results import Column, Result, column
from fe.mysql.server import MysqlFront

__all__ = [
    "Account",
    "BaseSession",
    "Column",
    "Connection",
    "ErrorCode",
    "IdentityProvider",
    "MysqlFront",
    "NativePasswordPlugin",
    "ProcessInfo",
    "QueryError",
    "Result",
    "User",
    "column",
    "native_password_hash",
]
