"""SET: session variables on this FE, SET GLOBAL journaled (a non-leader forwards it), SET NAMES,
user variables (@x, kept by the session until it ends); SET TRANSACTION accepted and ignored."""

from __future__ import annotations

from sqlglot import exp

from fe.mysql.errors import QueryError
from fe.mysql.results import Result
from fe.sql import statements as st
from fe.statements import mysql_functions, queries
from fe.variables import coerce
from metadata import ops

POSITIVE_VARIABLES = ("query_timeout", "exec_mem_limit")  # they bound every query


def sets_global(statement: st.SetStatement) -> bool:
    return any(_is_global(item) for item in statement.expression.expressions)


def _is_global(item: exp.Expression) -> bool:
    if (item.args.get("kind") or "").upper() == "GLOBAL":
        return True
    target = item.this.this if isinstance(item.this, exp.EQ | exp.PropertyEQ) else None
    return (
        isinstance(target, exp.SessionParameter)
        and (target.args.get("kind") or "").upper() == "GLOBAL"
    )


async def run(session, statement: st.SetStatement) -> Result:
    for item in statement.expression.expressions:
        await _set_item(session, item)
    return Result()


async def _set_item(session, item: exp.SetItem) -> None:
    kind = (item.args.get("kind") or "").upper()
    if kind in ("NAMES", "CHARACTER SET", "CHARSET"):
        charset = item.name or "utf8mb4"
        for name in (
            "character_set_client",
            "character_set_connection",
            "character_set_results",
        ):
            session.variables.set(name, charset if charset.lower() != "default" else "utf8mb4")
        return
    if kind == "TRANSACTION" or item.args.get("kind") is None and isinstance(item.this, exp.Var):
        return
    assignment = item.this
    if not isinstance(assignment, exp.EQ | exp.PropertyEQ):
        raise QueryError(1064, "You have an error in your SQL syntax near SET")
    target = assignment.this
    scope = kind
    if isinstance(target, exp.SessionParameter):
        scope = (target.args.get("kind") or scope or "SESSION").upper()
        name = target.name
    elif isinstance(target, exp.Parameter):
        await _set_user_variable(session, target.name.lower(), assignment.expression)
        return
    elif isinstance(target, exp.Placeholder):
        return
    else:
        name = target.name
    value = await _evaluate(session, assignment.expression)
    await set_variable(session, name.lower(), value, scope)


async def _set_user_variable(session, name: str, expression: exp.Expression) -> None:
    held = session.user_variables
    if name not in held and len(held) >= session.services.config["max_user_variables"]:
        raise QueryError(
            1105, f"A session holds at most {len(held)} user variables (max_user_variables)"
        )
    held[name] = await _evaluate(session, expression)


async def _evaluate(session, expression: exp.Expression):
    if isinstance(expression, exp.Column | exp.Var):
        if expression.name.upper() == "DEFAULT":
            return None
        return expression.name  # SET autocommit = ON, SET time_zone = SYSTEM
    plan = queries.plan_select(exp.select(expression.copy()))
    result = await queries.run_select(session, plan)
    return result.rows[0][0] if result.rows else None


async def set_variable(session, name: str, value, scope: str) -> None:
    try:
        type_, _, dynamic = session.variables.get_schema(name)
    except Exception:
        raise QueryError(1193, f"Unknown system variable '{name}'") from None
    if not dynamic:
        raise QueryError(1238, f"Variable '{name}' is a read only variable")
    try:
        typed = coerce(type_, value) if value is not None else None
    except (TypeError, ValueError):
        raise QueryError(
            1231, f"Variable '{name}' can't be set to the value of '{value}'"
        ) from None
    if name == "time_zone" and typed is not None:
        try:
            mysql_functions.time_zone(typed)
        except mysql_functions.UnknownTimeZone:
            raise QueryError(1298, f"Unknown or incorrect time zone: '{typed}'") from None
    if name in POSITIVE_VARIABLES and typed is not None and typed <= 0:
        raise QueryError(1231, f"Variable '{name}' can't be set to the value of '{value}'")
    if scope == "GLOBAL":
        session.require_admin()
        if name == "require_secure_transport" and typed and not session.services.front.ssl_context:
            raise QueryError(
                3161,
                "No secure transports (SSL or Shared Memory) are configured, unable to set --require_secure_transport=ON.",
            )
        text = "" if typed is None else str(int(typed) if isinstance(typed, bool) else typed)
        await session.services.writer.commit([ops.SetGlobalVariable(name, text)])
        return
    session.variables.set(name, typed)
