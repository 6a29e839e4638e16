"""Spark reads Quire tables straight from block storage: spark.read.format("quire")
(be/spark/source.py) once `register(spark)` has registered the data source."""

from __future__ import annotations

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark) -> None:
    """Register the "quire" data source with a SparkSession and let it prune by Spark's filters.
    Set `spark.python.unix.domain.socket.enabled=true` when the session is built: Python
    partitions then talk to Spark over a unix socket, several times faster than loopback TCP."""
    from be.spark.source import QuireDataSource

    spark.dataSource.register(QuireDataSource)
    spark.conf.set(PUSHDOWN_CONF, "true")
