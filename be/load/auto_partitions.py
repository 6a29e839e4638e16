"""A load into an auto partition table whose rows need partitions the table lacks: the FE that
redirected the load (its address in the load's claims) makes them, as it makes an INSERT's, and
answers the table's schema with them. A TN in a process of its own (`quire tn`) asks it over
HTTP with the cluster token; `quire up` asks the FE of its process directly."""

from __future__ import annotations

import logging

import pyarrow as pa
import requests

from be.table_schema import TableSchema

logger = logging.getLogger(__name__)

AUTO_PARTITIONS_PATH = "/api/_auto_partitions"  # on an FE's HTTP port
TOKEN_HEADER = "X-Quire-Token"
MAX_VALUES = 10_000  # distinct partition values asked for at once (a batch of a load's rows)


def partition_values(rows: pa.Table, columns: tuple[str, ...]) -> list[list]:
    """The distinct values of rows' partition columns, as JSON takes them (dates as ISO text)."""
    values = zip(*(rows.column(name).to_pylist() for name in columns), strict=True)
    distinct = dict.fromkeys(values)
    return [[v.isoformat() if hasattr(v, "isoformat") else v for v in value] for value in distinct]


def asked_of_front(
    front: str, token: str, timeout: float, table_id: int, rows: pa.Table, columns: tuple[str, ...]
) -> TableSchema | None:
    """The table's schema once the FE at front (http://host:port) has made the partitions rows
    need; None if it did not (the rows are filtered, said in the log)."""
    values = partition_values(rows, columns)[:MAX_VALUES]
    try:
        response = requests.post(
            front + AUTO_PARTITIONS_PATH,
            json={"table_id": table_id, "values": values},
            headers={TOKEN_HEADER: token},
            timeout=timeout,
        )
        answer = response.json()
        if response.status_code != 200:
            raise ValueError(answer.get("msg", f"HTTP {response.status_code}"))
        return TableSchema.from_fields(answer["schema"])
    except (requests.RequestException, pa.ArrowException, ValueError, KeyError, TypeError) as error:
        logger.warning("the FE made no auto partitions for table %d: %s", table_id, error)
        return None
