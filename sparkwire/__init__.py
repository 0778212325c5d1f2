"""PySpark data sources for mqwire topics."""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``kafkawire`` and ``pulsarwire`` data sources with ``spark``."""
    from sparkwire.kafka import KafkaDataSource
    from sparkwire.pulsar import PulsarDataSource

    spark.dataSource.register(KafkaDataSource)
    spark.dataSource.register(PulsarDataSource)


__all__ = ["register"]
