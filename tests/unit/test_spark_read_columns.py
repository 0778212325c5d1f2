"""The three sources' columns, declared once each: Spark's DDL string and the Arrow schema of the batches name
the same columns with the same types, in the same order."""

from __future__ import annotations

import pytest

from sparkwire import kafka, kafka_read, pulsar_read, tubemq_read
from sparkwire.read_columns import spark_ddl


@pytest.mark.parametrize(
    ("ddl", "arrow", "expected"),
    [
        (
            kafka.SCHEMA,
            kafka_read.ARROW_SCHEMA,
            "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
            "headers map<string, binary>",
        ),
        (
            pulsar_read.SCHEMA,
            pulsar_read.ARROW_SCHEMA,
            "key binary, value binary, topic string, partition int, message_id binary, timestamp timestamp, "
            "headers map<string, binary>",
        ),
        (
            tubemq_read.SCHEMA,
            tubemq_read.ARROW_SCHEMA,
            "key binary, value binary, topic string, partition int, partition_key string, message_id long, "
            "timestamp timestamp, msg_type string, headers map<string, binary>",
        ),
    ],
)
def test_the_ddl_and_the_arrow_schema_name_the_same_columns(ddl: str, arrow: object, expected: str) -> None:
    assert ddl == expected
    assert spark_ddl(arrow) == expected
