"""PySpark data sources for mqwire topics."""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``kafkawire`` data source with ``spark``."""
    from sparkwire.kafka import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)


__all__ = ["register"]
