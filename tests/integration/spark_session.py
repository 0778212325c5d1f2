"""The local Spark session the Spark data source tests run in (one per test module)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

from pyspark.sql import SparkSession

import sparkwire


def local_session(app_name: str, **config: str) -> Iterator[Any]:
    """A ``local[2]`` session with the data sources registered, stopped after use; ``config`` adds Spark
    settings (``spark.jars.packages`` is read only when the first session's JVM starts)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
    )
    for key, value in config.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    sparkwire.register(session)
    yield session
    session.stop()
