"""The ``pulsarwire`` Spark data source: batch read and batch write of Pulsar topics.

Pulsar has no offsets; a position is a message id, and the column ``message_id`` carries it serialized
(``pulsarwire.MessageId.deserialize`` reads it back). A read plans one input partition per topic
partition, from ``startingOffsets`` to the partition's last message id at planning time (or
``endingOffsets``): ``earliest``/``latest``, or JSON mapping a partition's full topic name to a message
id as base64 of its serialized form (the start is exclusive: the message after it is the first row).
Each task reads its partition with a non-durable reader, so reading leaves no subscription behind.
"""

from __future__ import annotations

from pyspark.sql.datasource import (
    DataSource,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

import pulsarwire
from sparkwire.pulsar_read import SCHEMA, PulsarBatchReader, pulsar_url
from sparkwire.pulsar_stream import PulsarStreamReader
from sparkwire.security import pulsar_connect
from sparkwire.writing import RowsSender, RowsStreamWriter, RowsWriter


class PulsarDataSource(DataSource):
    """Short name ``pulsarwire``."""

    @classmethod
    def name(cls) -> str:
        return "pulsarwire"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: StructType) -> PulsarBatchReader:
        return PulsarBatchReader(dict(self.options))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return RowsWriter(dict(self.options), pulsar_url, WRITE_ROWS, pulsar_connect)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return PulsarStreamReader(dict(self.options))

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        return RowsStreamWriter(dict(self.options), pulsar_url, WRITE_ROWS, pulsar_connect)


WRITE_ROWS = RowsSender(pulsarwire.connect, empty_for_null=True)
