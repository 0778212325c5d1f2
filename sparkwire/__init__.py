"""PySpark data sources for mqwire topics."""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``kafkawire``, ``pulsarwire`` and ``tubemqwire`` data sources with ``spark``."""
    from sparkwire.kafka import KafkaDataSource
    from sparkwire.pulsar import PulsarDataSource
    from sparkwire.tubemq import TubeMQDataSource

    spark.dataSource.register(KafkaDataSource)
    spark.dataSource.register(PulsarDataSource)
    spark.dataSource.register(TubeMQDataSource)


__all__ = ["register"]
