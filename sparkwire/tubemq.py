"""The ``tubemqwire`` Spark data source: batch read and batch write of TubeMQ topics.

Positions are the broker's index offsets. A partition's offsets are those of its store, which the
partitions of a store share: they grow by one index entry per message of any of them, so they order
a partition's messages but do not count them. A read plans one input partition per topic partition
(``brokerId:topic:partitionId``), from ``startingOffsets`` to the store's end at planning time (or
``endingOffsets``): ``earliest``/``latest``, or JSON ``{"topic": {"brokerId:topic:partitionId": offset}}``.
Each task claims its partition with a client-balanced consumer in a group of its own, starting at the
range's start, and reads whole fetched batches until the confirmed position reaches the range's end; the
last batch may hold messages written while the task ran.
"""

from __future__ import annotations

from typing import Any

import tubemqwire
from sparkwire.security import tubemq_connect
from sparkwire.source import Sink, WireDataSource
from sparkwire.tubemq_read import SCHEMA, TubeMQBatchReader, tubemq_url
from sparkwire.tubemq_stream import TubeMQStreamReader
from sparkwire.writing import RowsSender


def tubemq_message_options(fields: dict[str, Any]) -> dict[str, Any]:
    """TubeMQ's own per-message option from a row: the ``msg_type`` column, when there is one."""
    msg_type = fields.get("msg_type")
    return {} if msg_type is None else {"msg_type": msg_type}


WRITE_ROWS = RowsSender(tubemqwire.connect, tubemq_message_options, empty_for_null=True)


class TubeMQDataSource(WireDataSource):
    """Short name ``tubemqwire``."""

    short_name = "tubemqwire"
    row_schema = SCHEMA
    batch_reader = TubeMQBatchReader
    stream_reader = TubeMQStreamReader
    sink = Sink(tubemq_url, WRITE_ROWS, tubemq_connect)
