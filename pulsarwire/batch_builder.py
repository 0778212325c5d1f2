"""Building what a partition producer sends, without I/O: batches, key-based batches, chunks, their metadata.

The builders collect encoded batch entries (``protocol.batch.encode_entry_fast``) with an item each (the
producer's receipt futures; anything here) and hand them back as :class:`Batch` objects; the producer
decides when (size, count, its publish-delay timer), compresses, encrypts and frames. Nothing here touches
asyncio or a connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from pulsarwire.protocol.metadata import encode_message_metadata

__all__ = ["Batch", "BatchBuilder", "KeyBasedBatchBuilder", "batch_metadata", "split_chunks"]

T = TypeVar("T")


@dataclass
class Batch(Generic[T]):
    """One batch to send: its entries, their items, sequence ids, and the key a keyed batch has."""

    entries: list[bytes]
    items: list[T]
    first: int
    last: int
    partition_key: bytes | None = None
    partition_key_b64: bool = False
    ordering_key: bytes | None = None

    @property
    def count(self) -> int:
        """The number of messages in the batch."""
        return len(self.items)

    @property
    def size(self) -> int:
        """The size of the entries together: the batch's uncompressed size."""
        return sum(map(len, self.entries))

    @property
    def payload(self) -> bytes:
        """The entries joined (for compressing or encrypting; a plain batch's frame joins them itself)."""
        return b"".join(self.entries)


class BatchBuilder(Generic[T]):
    """The entries of the batch being filled, in order."""

    __slots__ = ("_entries", "first", "items", "size")

    def __init__(self) -> None:
        self._entries: list[bytes] = []
        self.items: list[T] = []
        self.size = 0
        self.first = 0

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, entry: bytes, item: T, sequence_id: int) -> None:
        """Append an entry; the first one's sequence id is the batch's."""
        if not self._entries:
            self.first = sequence_id
        self._entries.append(entry)
        self.items.append(item)
        self.size += len(entry)

    def take(self) -> Batch[T] | None:
        """The batch, and an empty builder; None when there was nothing."""
        if not self._entries:
            return None
        entries, items, first = self._entries, self.items, self.first
        self._entries, self.items, self.size = [], [], 0
        return Batch(entries, items, first, first + len(items) - 1)


class _KeyGroup(Generic[T]):
    __slots__ = ("entries", "first", "items", "last", "ordering_key", "partition_key", "partition_key_b64")

    def __init__(self, partition_key: bytes | None, key_b64: bool, ordering_key: bytes | None, first: int) -> None:
        self.partition_key = partition_key
        self.partition_key_b64 = key_b64
        self.ordering_key = ordering_key
        self.first = first
        self.last = first
        self.entries: list[bytes] = []
        self.items: list[T] = []


class KeyBasedBatchBuilder(Generic[T]):
    """One batch per key (the ordering key, else the partition key) within one batching window, as the Java
    client's key-based batcher builds them for Key_Shared subscriptions."""

    __slots__ = ("_groups", "count", "size")

    def __init__(self) -> None:
        self._groups: dict[bytes | None, _KeyGroup[T]] = {}
        self.count = 0
        self.size = 0

    def __len__(self) -> int:
        return self.count

    def add(
        self,
        entry: bytes,
        item: T,
        sequence_id: int,
        partition_key: bytes | None,
        key_b64: bool,
        ordering_key: bytes | None,
    ) -> None:
        """Add an entry to the batch of its key."""
        key = ordering_key if ordering_key is not None else partition_key
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _KeyGroup(partition_key, key_b64, ordering_key, sequence_id)
        group.entries.append(entry)
        group.items.append(item)
        group.last = sequence_id
        self.size += len(entry)
        self.count += 1

    def take(self) -> list[Batch[T]]:
        """The batches of the window in the order of their first message, and an empty builder."""
        groups = sorted(self._groups.values(), key=lambda g: g.first)
        self._groups, self.count, self.size = {}, 0, 0
        return [
            Batch(g.entries, g.items, g.first, g.last, g.partition_key, g.partition_key_b64, g.ordering_key)
            for g in groups
        ]


def batch_metadata(
    batch: Batch[T],
    producer_name: bytes,
    publish_time: int,
    *,
    compression: int,
    encryption: bytes = b"",
) -> bytes:
    """The MessageMetadata of a batch; the key of a keyed batch is what a Key_Shared subscription dispatches by."""
    return encode_message_metadata(
        producer_name,
        batch.first,
        publish_time,
        partition_key=batch.partition_key,
        partition_key_b64_encoded=batch.partition_key_b64,
        ordering_key=batch.ordering_key,
        compression=compression,
        uncompressed_size=batch.size,
        num_messages_in_batch=batch.count,
        highest_sequence_id=batch.last,
        encryption=encryption,
    )


def split_chunks(body: bytes, chunk_size: int) -> list[bytes]:
    """The pieces of a chunked message, each at most ``chunk_size`` bytes."""
    if chunk_size < 1:
        raise ValueError(f"chunk size must be positive, got {chunk_size}")
    return [body[start : start + chunk_size] for start in range(0, len(body), chunk_size)]
