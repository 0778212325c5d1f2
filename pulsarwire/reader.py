"""The public reader: a non-durable subscription that starts where asked and needs no acknowledgements."""

from __future__ import annotations

import uuid
from typing import Any, Literal

from mqwire.common.contract import Deserializer
from mqwire.common.options import check_bool, check_int_range, check_str
from pulsarwire.consumer import Subscriber
from pulsarwire.crypto import CryptoKeyReader
from pulsarwire.message import EARLIEST, LATEST, MessageId
from pulsarwire.options import ConsumerConfig, check_schema, consumer_crypto
from pulsarwire.protocol.pulsar_api_pb2 import CommandSubscribe
from pulsarwire.schema import Schema
from pulsarwire.session import Session
from pulsarwire.topic_consumer import TopicConsumer


class Reader(Subscriber):
    """Reads a topic from ``start``: ``async with client.reader(topic, start="earliest") as reader``.

    ``start`` is "latest" (the default, as for consumers), "earliest" or a MessageId (a send ``Receipt``
    too; topics without partitions; the message itself is included when ``start_inclusive``). The options
    are described in :class:`pulsarwire.ReaderOptions`. A reader needs no acknowledgements: its
    subscription is non-durable. After a reconnection the reader goes on after the last message it handed
    out.
    """

    def __init__(
        self,
        session: Session,
        topic: str,
        *,
        start: Literal["latest", "earliest"] | MessageId = "latest",
        start_inclusive: bool = False,
        receiver_queue_size: int = 1000,
        reader_name: str | None = None,
        subscription_role_prefix: str = "reader",
        read_compacted: bool = False,
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
        schema: Schema[Any] | None = None,
        crypto_key_reader: CryptoKeyReader | None = None,
        crypto_failure_action: str = "FAIL",
    ) -> None:
        if isinstance(start, MessageId):
            self._start = MessageId(*start)
        elif isinstance(start, str) and start.lower() in ("earliest", "latest"):
            self._start = EARLIEST if start.lower() == "earliest" else LATEST
        else:
            raise ValueError(f"option start must be 'earliest', 'latest' or a MessageId, got {start!r}")
        self._start_inclusive = check_bool("start_inclusive", start_inclusive)
        prefix = check_str("subscription_role_prefix", subscription_role_prefix)
        options = ConsumerConfig(
            subscription=f"{prefix}-{uuid.uuid4().hex[:10]}",
            subscription_type=CommandSubscribe.Exclusive,
            receiver_queue_size=check_int_range("receiver_queue_size", receiver_queue_size, 1, 1 << 24),
            consumer_name=None if reader_name is None else check_str("reader_name", reader_name),
            read_compacted=check_bool("read_compacted", read_compacted),
            schema_info=None if schema is None else schema.info,
            **consumer_crypto({"crypto_key_reader": crypto_key_reader,
                               "crypto_failure_action": crypto_failure_action}.pop),
        )
        checked = check_schema(schema, "value_deserializer", value_deserializer)
        super().__init__(
            session,
            [topic],
            options,
            f"reader of {topic}",
            key_deserializer=key_deserializer,
            value_deserializer=value_deserializer,
            schema=checked,
        )
        self.topic = self.topics[0]

    async def __aenter__(self) -> Reader:
        await self.start()
        return self

    def _make(self, given: str, topic: str, partition: int, queue_size: int) -> TopicConsumer:
        start = self._start
        if partition >= 0 and start not in (EARLIEST, LATEST):
            raise ValueError(f"{self.topic} has partitions; a reader can start at a message id only without them")
        return TopicConsumer(
            self._session,
            self._queue,
            topic,
            given,
            partition,
            self.options,
            queue_size=queue_size,
            on_failure=self._partition_failed,
            durable=False,
            start_message_id=start,
            start_inclusive=self._start_inclusive,
            counters=self._counters,
        )

    async def has_message_available(self) -> bool:
        """Whether a message after the last one read is stored (asks the broker for its last message id)."""
        self._affinity.check()
        if not self._started:
            await self.start()
        if len(self._queue):
            return True
        for consumer in self._consumers:
            if await consumer.has_message_available():
                return True
        return False

    def __repr__(self) -> str:
        return f"Reader(topic={self.topic!r})"


__all__ = ["Reader"]
