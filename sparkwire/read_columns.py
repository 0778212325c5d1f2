"""The columns of the rows a source reads, declared once for each source: the Arrow schema of the batches its
tasks yield and the DDL string its ``DataSource.schema`` gives Spark, which must name the same columns.

Every source leads with ``key, value, topic, partition``, then its position columns, ``timestamp``, its own
extra columns and ``headers``.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]

BINARY = pa.binary()
STRING = pa.string()
INT = pa.int32()
LONG = pa.int64()
TIMESTAMP = pa.timestamp("us", tz="UTC")
HEADERS = pa.map_(pa.string(), pa.binary())

# Spark's DDL name of each Arrow type above.
_DDL = {
    BINARY: "binary",
    STRING: "string",
    INT: "int",
    LONG: "long",
    TIMESTAMP: "timestamp",
    HEADERS: "map<string, binary>",
}

Column = tuple[str, Any]  # a name and its Arrow type


def read_schema(positions: list[Column], extra: list[Column] | None = None) -> pa.Schema:
    """The Arrow schema of a source's rows: the leading columns, ``positions``, ``timestamp``, ``extra``,
    ``headers``."""
    leading = [("key", BINARY), ("value", BINARY), ("topic", STRING), ("partition", INT)]
    return pa.schema([*leading, *positions, ("timestamp", TIMESTAMP), *(extra or []), ("headers", HEADERS)])


def spark_ddl(schema: pa.Schema) -> str:
    """The DDL string Spark reads for ``schema`` (``key binary, value binary, ...``)."""
    return ", ".join(f"{column.name} {_DDL[column.type]}" for column in schema)
