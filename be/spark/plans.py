"""Asking an FE for a table's read plan over HTTP (fe/cluster/read_plans.py), with requests."""

from __future__ import annotations

import requests

from be import read_plan
from be.read_plan import ReadPlan, ReadPlanFormatError
from be.spark.errors import BadOption, PlanRefused
from be.spark.limits import SparkReadLimits

DEFAULT_LIMITS = SparkReadLimits()


def plan_url(fe: str, db: str, table: str) -> str:
    base = fe if "://" in fe else f"http://{fe}"
    return f"{base.rstrip('/')}/api/{db}/{table}/_read_plan"


def split_table(name: str) -> tuple[str, str]:
    db, dot, table = name.partition(".")
    if not dot or not db or not table or "." in table:
        raise BadOption(f'the option table is "db.table", not {name!r}')
    return db, table


def fetch_plan(
    fe: str,
    user: str,
    password: str,
    table: str,
    *,
    snapshot: int | None = None,
    columns: tuple[str, ...] | None = None,
    schema_only: bool = False,
    limits: SparkReadLimits = DEFAULT_LIMITS,
) -> ReadPlan:
    """The FE's read plan of table ("db.t"); PlanRefused with the FE's message if it refuses."""
    db, name = split_table(table)
    body: dict[str, object] = {"schema_only": schema_only}
    if snapshot is not None:
        body["snapshot"] = snapshot
    if columns is not None:
        body["columns"] = list(columns)
    try:
        response = requests.post(
            plan_url(fe, db, name),
            json=body,
            auth=(user, password),
            timeout=limits.plan_timeout_seconds,
            stream=True,
        )
    except requests.RequestException as error:
        raise PlanRefused(f"the FE at {fe} did not answer: {error}", 0) from None
    with response:
        if response.status_code != 200:
            try:
                message = response.json().get("msg", response.reason)
            except ValueError:
                message = response.reason
            raise PlanRefused(f"{response.status_code}: {message}", response.status_code)
        data = response.raw.read(limits.max_plan_bytes + 1, decode_content=True)
    if len(data) > limits.max_plan_bytes:
        raise PlanRefused(f"the read plan is over {limits.max_plan_bytes} bytes", 0)
    try:
        return read_plan.decode(data, limits.max_plan_bytes)
    except ReadPlanFormatError as error:
        raise PlanRefused(f"the FE sent a broken read plan: {error.message}", 0) from None
