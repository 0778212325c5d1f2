"""The ``pulsarwire`` Spark data source: batch read and batch write of Pulsar topics.

Pulsar has no offsets; a position is a message id, and the column ``message_id`` carries it serialized
(``pulsarwire.MessageId.deserialize`` reads it back). A read plans one input partition per topic
partition, from ``startingOffsets`` to the partition's last message id at planning time (or
``endingOffsets``): ``earliest``/``latest``, or JSON mapping a partition's full topic name to a message
id as base64 of its serialized form (the start is exclusive: the message after it is the first row).
Each task reads its partition with a non-durable reader, so reading leaves no subscription behind.
"""

from __future__ import annotations

import pulsarwire
from sparkwire.pulsar_read import SCHEMA, PulsarBatchReader, pulsar_url
from sparkwire.pulsar_stream import PulsarStreamReader
from sparkwire.security import pulsar_connect
from sparkwire.source import Sink, WireDataSource
from sparkwire.writing import RowsSender

WRITE_ROWS = RowsSender(pulsarwire.connect, empty_for_null=True)


class PulsarDataSource(WireDataSource):
    """Short name ``pulsarwire``."""

    short_name = "pulsarwire"
    row_schema = SCHEMA
    batch_reader = PulsarBatchReader
    stream_reader = PulsarStreamReader
    sink = Sink(pulsar_url, WRITE_ROWS, pulsar_connect)

