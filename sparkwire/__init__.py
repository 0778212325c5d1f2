"""PySpark data sources for mqwire topics."""

from __future__ import annotations

from typing import Any

try:  # checked here, before a data source imports them, to name the extra that brings them
    import pyarrow  # type: ignore[import-untyped]  # noqa: F401
    import pyspark  # noqa: F401
except ModuleNotFoundError as exc:
    if exc.name not in ("pyspark", "pyarrow"):
        raise
    raise ModuleNotFoundError(
        f"sparkwire needs the 'spark' extra ({exc.name} is not installed): pip install 'mqwire[spark]'",
        name=exc.name,
    ) from None


def register(spark: Any) -> None:
    """Register the ``kafkawire``, ``pulsarwire`` and ``tubemqwire`` data sources with ``spark``."""
    from sparkwire.kafka import KafkaDataSource
    from sparkwire.pulsar import PulsarDataSource
    from sparkwire.tubemq import TubeMQDataSource

    spark.dataSource.register(KafkaDataSource)
    spark.dataSource.register(PulsarDataSource)
    spark.dataSource.register(TubeMQDataSource)


__all__ = ["register"]
