"""The blocking Kafka client, for scripts, notebooks and synchronous frameworks.

The same shape as the async API, without ``await``::

    with kafkawire.sync.connect("kafka://127.0.0.1:9092") as client:
        with client.producer("orders") as producer:
            receipt = producer.send(b"v", key=b"k", headers={"h": b"v"})
            future = producer.enqueue(b"w")      # a concurrent.futures.Future of the RecordMetadata
            producer.flush(timeout=10)
        with client.consumer("orders", group="billing", start="earliest") as consumer:
            message = consumer.receive(timeout=5)
            consumer.commit()
        with client.admin() as admin:
            admin.create_topic("audit", partitions=3)
            print(admin.describe_topics(["audit"]))

It runs the async client of ``kafkawire`` in an event loop of its own (one thread per client, stopped by
``close``); options and errors are the async ones'. ``client.admin()`` gives every method of the async
``kafkawire.admin.Admin``, blocking, with the same arguments and results.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Unpack, cast

from kafkawire.admin import Admin as AsyncAdmin
from kafkawire.admin import ClusterDescription, ConfigEntry, GroupDescription, GroupListing, TopicDescription
from kafkawire.bulk import BulkMetadata
from kafkawire.client import AdminOptions, ClientOptions, ConsumerOptions, ProducerOptions
from kafkawire.client import Client as AsyncClient
from kafkawire.consumer import Consumer as AsyncConsumer
from kafkawire.delivery import BatchOutcome, metadata_at
from kafkawire.delivery import RecordFuture as AsyncRecordFuture
from kafkawire.group.metadata import GroupMetadata
from kafkawire.message import Message, RecordMetadata
from kafkawire.metadata import TopicPartition
from kafkawire.offsets import OffsetAndTimestamp
from kafkawire.producer import Producer as AsyncProducer
from kafkawire.share.admin import ShareGroupDescription
from mqwire.common.blocking import Bridge
from mqwire.common.blocking_clients import (
    BlockingAdmin,
    BlockingClient,
    BlockingConsumer,
    BlockingProducer,
    CallerSerializers,
    same_arguments,
)
from mqwire.common.blocking_enqueue import EnqueueQueue
from mqwire.common.blocking_future import RecordFuture

__all__ = ["Admin", "Client", "Consumer", "Producer", "connect"]


_Run = tuple[int, int, BatchOutcome | Exception, int]  # see AsyncProducer._enqueue_records


class _SliceQueue(EnqueueQueue[RecordMetadata]):
    """Hands a slice of records to the async producer in one call (``_enqueue_records``) and settles the
    blocking futures per batch: one callback for the records of a slice that share a batch, not one per record."""

    def __init__(self, bridge: Bridge, producer: AsyncProducer, what: str) -> None:
        super().__init__(bridge, producer.enqueue, what=what)
        self._enqueue_records = producer._enqueue_records

    async def hand_over_slice(
        self, args: list[Any], kwargs: list[Mapping[str, Any] | None], futures: list[RecordFuture[Any]]
    ) -> None:
        """On the loop: buffer the records in order; a refused one fails its own future, the others settle
        when their batch is acknowledged."""
        runs: list[_Run] = []
        try:
            await self._enqueue_records(args, kwargs, runs)
        except asyncio.CancelledError:
            self.fail_unsent(futures[runs[-1][1] if runs else 0 :])
            self._watch(futures, runs)
            raise
        self._watch(futures, runs)

    def _watch(self, futures: list[RecordFuture[Any]], runs: list[_Run]) -> None:
        # Per batch, the runs of futures it settles, each with the place of its first record in the batch.
        groups: dict[BatchOutcome, list[tuple[Sequence[RecordFuture[Any]], int]]] = {}
        for start, stop, got, first in runs:
            if isinstance(got, Exception):
                RecordFuture.finish_many(futures[start:stop], error=got)
                continue
            spans = groups.get(got)
            if spans is None:
                spans = groups[got] = []
            spans.append((futures[start:stop], first))
        unsettled = self._unsettled
        settle = self._settle_batch
        context = self._callback_context()
        for outcome, spans in groups.items():
            receipt = AsyncRecordFuture(outcome, spans[0][1])  # the batch's settling, seen through one record
            unsettled[receipt] = spans
            receipt.add_done_callback(settle, context=context)

    def _settle_batch(self, done: AsyncRecordFuture) -> None:
        """On the loop, once the batch of the receipt ``done`` is settled: every record of its runs at once."""
        spans = self._unsettled.pop(done, None)
        if spans is None or isinstance(spans, RecordFuture):
            return  # failed by close already
        outcome = done._outcome
        error = outcome.error
        ack = outcome._ack
        for futures, first in spans:
            if error is not None:
                RecordFuture.finish_many(futures, error=error)
            elif ack is not None:  # stored whole: each record's metadata made when asked, from the batch's
                RecordFuture.finish_many_lazily(futures, metadata_at, ack, first)
            else:  # each record's metadata as its async RecordFuture reads it
                places = range(first, first + len(futures))
                RecordFuture.finish_many(futures, [_RESULT(_RECEIPT(outcome, at)) for at in places])


_RESULT = AsyncRecordFuture.result
_RECEIPT = AsyncRecordFuture


class Producer(BlockingProducer[RecordMetadata]):
    """A blocking Kafka producer; threads may share one."""

    def _make_queue(self, bridge: Bridge, producer: Any, what: str) -> EnqueueQueue[RecordMetadata]:
        return _SliceQueue(bridge, producer, what)

    @same_arguments(AsyncProducer.enqueue)
    def send(self, *args: Any, **kwargs: Any) -> RecordMetadata:
        """Produce one record and wait for its ``RecordMetadata`` (the arguments of ``enqueue``)."""
        return self._send(args, kwargs)

    @same_arguments(AsyncProducer.enqueue)
    def enqueue(self, *args: Any, **kwargs: Any) -> concurrent.futures.Future[RecordMetadata]:
        """Buffer one record; the future resolves with its ``RecordMetadata`` once acknowledged."""
        if not kwargs and self._bare_values and len(args) == 1 and type(args[0]) is bytes:
            return self._queue.put_value(args[0])  # a bare value, nothing to serialize: straight to the queue
        return self._enqueue(args, kwargs)

    @same_arguments(AsyncProducer.enqueue_many)
    def enqueue_many(self, *args: Any, **kwargs: Any) -> concurrent.futures.Future[BulkMetadata]:
        """Buffer many records already in memory in one call, handed to the loop at once: the bulk path. A call is
        refused whole (raised here) or buffered whole; the future resolves with every record's RecordMetadata."""
        if self._serializers is not None:
            args, kwargs = self._serializers.apply_many(args, kwargs)
        return self._bulk(functools.partial(self._async.enqueue_many, *args, **kwargs))

    @same_arguments(AsyncProducer.begin_transaction)
    def begin_transaction(self, *args: Any, **kwargs: Any) -> None:
        """Start a transaction (a producer made with ``transactional_id``), after the records enqueued so far."""
        self._after_enqueued(functools.partial(self._async.begin_transaction, *args, **kwargs))

    @same_arguments(AsyncProducer.commit_transaction)
    def commit_transaction(self, *args: Any, **kwargs: Any) -> None:
        """Send every record enqueued so far, then make the transaction's records (and offsets) visible."""
        self._after_enqueued(functools.partial(self._async.commit_transaction, *args, **kwargs))

    @same_arguments(AsyncProducer.abort_transaction)
    def abort_transaction(self, *args: Any, **kwargs: Any) -> None:
        """Send every record enqueued so far, then mark the transaction aborted: read_committed readers skip it."""
        self._after_enqueued(functools.partial(self._async.abort_transaction, *args, **kwargs))

    @same_arguments(AsyncProducer.send_offsets_to_transaction)
    def send_offsets_to_transaction(self, *args: Any, **kwargs: Any) -> None:
        """Commit consumer offsets inside the transaction (``group`` best ``consumer.group_metadata()``)."""
        self._after_enqueued(functools.partial(self._async.send_offsets_to_transaction, *args, **kwargs))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Producer]:
        """``with producer.transaction():`` commits when the block ends, aborts when it raises: the async
        ``transaction()``, its end coming after the records the block enqueued."""
        manager = self._bridge.run_sync(self._async.transaction)
        self._bridge.call(manager.__aenter__)
        try:
            yield self
        except BaseException as error:
            # Ctrl-C or SystemExit must not be raised on the loop (asyncio would stop there): the block's end is
            # told as an error of its own, which aborts the same way; the original goes on here.
            told = error if isinstance(error, Exception) else RuntimeError(f"the block ended with {error!r}")
            self._after_enqueued(manager.__aexit__, type(told), told, told.__traceback__)
            raise
        self._after_enqueued(manager.__aexit__, None, None, None)


class Consumer(BlockingConsumer[Message]):
    """A blocking Kafka consumer: also ``getone``, ``commit`` and partition-wise seeks."""

    def group_metadata(self) -> GroupMetadata:
        """The member's group, generation and id, for ``send_offsets_to_transaction``."""
        return cast(GroupMetadata, self._bridge.run_sync(self._async.group_metadata))

    @same_arguments(AsyncConsumer.getone)
    def getone(self, *args: Any, **kwargs: Any) -> Message:
        """The next message (of the partitions given), waiting as long as it takes: aiokafka's ``getone``."""
        return self._take_one(self._async.getone, *args, **kwargs)

    @same_arguments(AsyncConsumer.getmany)
    def getmany(self, *args: Any, **kwargs: Any) -> list[Message]:
        """The records ready within ``timeout`` seconds (at most ``max_records``); ``[]`` when none came."""
        timeout = kwargs.get("timeout", 0)
        if kwargs.get("timeout_ms") is not None:
            timeout = kwargs["timeout_ms"] / 1000
        return self._getmany(timeout, kwargs.get("max_records"), lambda: self._async.getmany(*args, **kwargs))

    @same_arguments(AsyncConsumer.commit)
    def commit(self, *args: Any, **kwargs: Any) -> None:
        """Commit the delivered (or the given) offsets of the group and wait for the coordinator's answer."""
        self._call(self._async.commit, *args, **kwargs)

    @same_arguments(AsyncConsumer.seek_to_beginning)
    def seek_to_beginning(self, *args: Any, **kwargs: Any) -> None:
        """Read the partitions given (default: all assigned) again from their first retained record."""
        self._call(self._async.seek_to_beginning, *args, **kwargs)

    @same_arguments(AsyncConsumer.seek_to_end)
    def seek_to_end(self, *args: Any, **kwargs: Any) -> None:
        """Skip to the end of the partitions given (default: all assigned)."""
        self._call(self._async.seek_to_end, *args, **kwargs)


class Admin(BlockingAdmin[AsyncAdmin]):
    """A blocking Kafka admin: topics, partitions, records, configs and groups. Each method takes what the
    async ``kafkawire.admin.Admin`` method of the same name takes and returns what it returns."""

    @property
    def timeout(self) -> float:
        """Seconds each administrative request may take (the ``timeout`` option of ``client.admin``)."""
        return self._async.timeout

    # ------------------------------------------------------------------------------------------ topics
    @same_arguments(AsyncAdmin.create_topic)
    def create_topic(self, *args: Any, **kwargs: Any) -> None:
        """Create one topic; returns once its partitions have leaders."""
        return self._call(self._async.create_topic, *args, **kwargs)

    @same_arguments(AsyncAdmin.create_topics)
    def create_topics(self, *args: Any, **kwargs: Any) -> None:
        """Create ``NewTopic``s; raises the first error after all were tried."""
        return self._call(self._async.create_topics, *args, **kwargs)

    @same_arguments(AsyncAdmin.delete_topics)
    def delete_topics(self, *args: Any, **kwargs: Any) -> None:
        """Delete topics by name, waiting until they are gone; raises the first error after all were tried."""
        return self._call(self._async.delete_topics, *args, **kwargs)

    @same_arguments(AsyncAdmin.list_topics)
    def list_topics(self, *args: Any, **kwargs: Any) -> list[str]:
        """The names of the cluster's topics, sorted."""
        return self._call(self._async.list_topics, *args, **kwargs)

    @same_arguments(AsyncAdmin.describe_topics)
    def describe_topics(self, *args: Any, **kwargs: Any) -> list[TopicDescription]:
        """Partitions, leaders and replicas of the topics named (or of every topic)."""
        return self._call(self._async.describe_topics, *args, **kwargs)

    @same_arguments(AsyncAdmin.create_partitions)
    def create_partitions(self, *args: Any, **kwargs: Any) -> None:
        """Grow each topic to the given total number of partitions."""
        return self._call(self._async.create_partitions, *args, **kwargs)

    # ------------------------------------------------------------------------------------------ cluster
    @same_arguments(AsyncAdmin.describe_cluster)
    def describe_cluster(self, *args: Any, **kwargs: Any) -> ClusterDescription:
        """The cluster's id, controller and brokers."""
        return self._call(self._async.describe_cluster, *args, **kwargs)

    @same_arguments(AsyncAdmin.describe_configs)
    def describe_configs(self, *args: Any, **kwargs: Any) -> dict[tuple[str, str], dict[str, ConfigEntry]]:
        """Configs of ``{("topic", name) or ("broker", id): keys or None for all}``."""
        return self._call(self._async.describe_configs, *args, **kwargs)

    # ------------------------------------------------------------------------------------------ records
    @same_arguments(AsyncAdmin.list_offsets)
    def list_offsets(self, *args: Any, **kwargs: Any) -> dict[TopicPartition, OffsetAndTimestamp]:
        """Offsets for ``{tp: "earliest" | "latest" | "max_timestamp" | timestamp_ms}``."""
        return self._call(self._async.list_offsets, *args, **kwargs)

    @same_arguments(AsyncAdmin.delete_records)
    def delete_records(self, *args: Any, **kwargs: Any) -> dict[TopicPartition, int]:
        """Delete records before the given offsets; returns the new low watermarks."""
        return self._call(self._async.delete_records, *args, **kwargs)

    # ------------------------------------------------------------------------------------------ groups
    @same_arguments(AsyncAdmin.list_groups)
    def list_groups(self, *args: Any, **kwargs: Any) -> list[GroupListing]:
        """Groups known to every broker."""
        return self._call(self._async.list_groups, *args, **kwargs)

    @same_arguments(AsyncAdmin.describe_groups)
    def describe_groups(self, *args: Any, **kwargs: Any) -> list[GroupDescription]:
        """State, protocol and members of each group named, asked of its coordinator."""
        return self._call(self._async.describe_groups, *args, **kwargs)

    @same_arguments(AsyncAdmin.list_consumer_group_offsets)
    def list_consumer_group_offsets(self, *args: Any, **kwargs: Any) -> dict[TopicPartition, int | None]:
        """The offsets a group committed for the partitions given (None where it committed none)."""
        return self._call(self._async.list_consumer_group_offsets, *args, **kwargs)

    @same_arguments(AsyncAdmin.delete_groups)
    def delete_groups(self, *args: Any, **kwargs: Any) -> None:
        """Delete groups that have no members: consumer groups and share groups alike."""
        return self._call(self._async.delete_groups, *args, **kwargs)

    # ------------------------------------------------------------------------------------------ share groups
    @same_arguments(AsyncAdmin.describe_share_groups)
    def describe_share_groups(self, *args: Any, **kwargs: Any) -> list[ShareGroupDescription]:
        """State, epoch and members (with their assignments) of each share group named."""
        return self._call(self._async.describe_share_groups, *args, **kwargs)

    @same_arguments(AsyncAdmin.list_share_group_offsets)
    def list_share_group_offsets(self, *args: Any, **kwargs: Any) -> dict[TopicPartition, int | None]:
        """The start offsets of a share group (in the topics given: name -> partitions; None: all it has)."""
        return self._call(self._async.list_share_group_offsets, *args, **kwargs)

    @same_arguments(AsyncAdmin.alter_share_group_offsets)
    def alter_share_group_offsets(self, *args: Any, **kwargs: Any) -> None:
        """Set the start offsets of a share group, which must have no members."""
        return self._call(self._async.alter_share_group_offsets, *args, **kwargs)

    @same_arguments(AsyncAdmin.delete_share_group_offsets)
    def delete_share_group_offsets(self, *args: Any, **kwargs: Any) -> None:
        """Forget a share group's state in the topics given (no members allowed)."""
        return self._call(self._async.delete_share_group_offsets, *args, **kwargs)


class Client(BlockingClient[AsyncClient]):
    """A blocking Kafka client; ``close`` (or leaving ``with``) closes what it made and its loop thread."""

    def admin(self, **options: Unpack[AdminOptions]) -> Admin:
        """The administration client (topics, configs, groups), closed with this client at the latest; the
        options are those of ``AdminOptions``."""
        made = self._start(lambda client: client.admin(**options))
        return self._adopt(Admin(self.bridge, made, "kafkawire admin"))

    def producer(self, topic: str | None = None, /, **options: Unpack[ProducerOptions]) -> Producer:
        """A started producer to ``topic``; the options are those of ``ProducerOptions``."""
        given: dict[str, Any] = dict(options)
        serializers = CallerSerializers(given)
        made = self._start(lambda client: client.producer(topic, **given))
        return self._adopt(Producer(self.bridge, made, "kafkawire producer", serializers))

    def consumer(
        self, topics: str | Iterable[str] | re.Pattern[str] = (), /, **options: Unpack[ConsumerOptions]
    ) -> Consumer:
        """A started consumer of ``topics`` (or of a compiled pattern given as them); the options are those of
        ``ConsumerOptions``."""
        made = self._start(lambda client: client.consumer(topics, **options))
        return self._adopt(Consumer(self.bridge, made))


def connect(url: str, /, **options: Unpack[ClientOptions]) -> Client:
    """A connected blocking client for the cluster at ``url``; the options are those of ``ClientOptions``."""
    return Client(lambda: AsyncClient(url, **options), what="kafkawire")
