"""The Kafka broker's own ceiling for a setting: a "client" that costs next to nothing.

``kafka-ceiling`` produces by writing one Produce request, encoded once before the clock starts, again
and again (a batch of ``BATCH_BYTES`` per partition, five requests in flight on one connection, as a
producer's connection has), and checks every partition's answer in every response. It consumes by
fetching every partition from the start and reading only each batch's header (its record count and last
offset): no record is decoded, no CRC computed. What it reaches is what the broker takes or serves on this
machine when the client's work is almost nil, so a client's rate divided by it says how much of the way
that client is; a goal above it cannot be met by any client here.

It speaks the protocol through ``kafkawire.protocol`` (sans-IO) over a plain blocking socket (nothing
else runs in its process), reading each response into one reused buffer, so none of kafkawire's producer or
consumer runs in it and no byte is copied in user space that need not be.
"""

from __future__ import annotations

import socket
import struct
import time
from collections import deque
from urllib.parse import urlsplit

from measure import BATCH_BYTES, Clock, Latencies, Pace

from kafkawire.protocol.framing import decode_response, encode_request
from kafkawire.protocol.messages import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from kafkawire.protocol.records import encode_batch

PRODUCE_KEY, PRODUCE_VERSION = 0, 9  # names topics (v13 and later name them by id)
FETCH_KEY, FETCH_VERSION = 1, 12
METADATA_KEY = 3
IN_FLIGHT = 5
PARTITION_FETCH_BYTES = 1024 * 1024  # kafkawire's, aiokafka's and the Java client's default
FETCH_BYTES = 50 * 1024 * 1024
# A record batch's header: base offset (8), length (4), then at byte 23 the last offset delta (4) and at byte
# 57 the record count (4).
BATCH_HEAD = struct.Struct(">qi")
INT32 = struct.Struct(">i")
BATCH_HEADER_BYTES = 61
# No response here comes near this; a larger claimed size is refused before anything is allocated for it.
MAX_FRAME = FETCH_BYTES + 1024 * 1024


def _address(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or 9092


class Frames:
    """Response frames read from a blocking socket into one buffer that grows to the largest frame; a frame
    is a view of that buffer, good until the next read."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = memoryview(bytearray(1 << 20))
        self.size = memoryview(bytearray(4))

    def _fill(self, view: memoryview) -> None:
        got = 0
        while got < len(view):
            n = self.sock.recv_into(view[got:])
            if not n:
                raise RuntimeError("the broker closed the connection")
            got += n

    def read(self) -> memoryview:
        self._fill(self.size)
        (length,) = INT32.unpack(self.size)
        if not 0 <= length <= MAX_FRAME:
            raise RuntimeError(f"a response frame claims {length} bytes")
        if length > len(self.buffer):
            self.buffer = memoryview(bytearray(length))
        frame = self.buffer[:length]
        self._fill(frame)
        return frame


def _connect(url: str) -> tuple[socket.socket, Frames]:
    sock = socket.create_connection(_address(url))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock, Frames(sock)


def _partitions(sock: socket.socket, frames: Frames, topic: str) -> int:
    """The topic's partition count, from a Metadata request."""
    from kafkawire.protocol.messages import MetadataRequest, MetadataRequestTopic

    body = MetadataRequest(topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False)
    sock.sendall(encode_request(body, version=9, correlation_id=0, client_id="ceiling"))
    response = decode_response(METADATA_KEY, 9, frames.read())
    (found,) = response.topics
    if found.error_code:
        raise RuntimeError(f"metadata of {topic}: error {found.error_code}")
    return len(found.partitions)


def batch_plan(count: int, partitions: int, per_batch: int) -> list[list[int]]:
    """The records of each request, per partition: full requests of ``per_batch`` records on every
    partition, then the rest spread over the partitions of one last request."""
    full, rest = divmod(count, per_batch * partitions)
    plan = [[per_batch] * partitions for _ in range(full)]
    if rest:
        share, extra = divmod(rest, partitions)
        plan.append([share + (1 if p < extra else 0) for p in range(partitions)])
    return plan


def _produce_request(topic: str, counts: list[int], value: bytes) -> ProduceRequest:
    stamp = int(time.time() * 1000)
    data = [
        PartitionProduceData(index=p, records=encode_batch([(stamp, None, value, ())] * n))
        for p, n in enumerate(counts)
        if n
    ]
    return ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[TopicProduceData(name=topic, partition_data=data)],
    )


def _check_produced(frame: memoryview, expected: int) -> None:
    """Check a Produce response: ``expected`` partitions answered, none refused (else RuntimeError)."""
    response = decode_response(PRODUCE_KEY, PRODUCE_VERSION, frame)
    answered = 0
    for topic in response.responses:
        for partition in topic.partition_responses:
            if partition.error_code:
                raise RuntimeError(f"partition {partition.index}: error {partition.error_code}")
            answered += 1
    if answered != expected:
        raise RuntimeError(f"{answered} partitions answered of {expected}")


async def produce(url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies, pace: Pace) -> None:
    """``count`` records of ``value``: each request encoded once up front, five in flight, every answer checked
    (no latency samples: the requests are not sent at a pace)."""
    sock, frames = _connect(url)
    try:
        partitions = _partitions(sock, frames, topic)
        per_batch = max(1, BATCH_BYTES // (len(value) + 20))
        plan = batch_plan(count, partitions, per_batch)
        # Every full request is the same bytes, written again and again (the broker answers a connection's
        # requests in order, so their correlation ids need not differ); the last request is its own.
        requests: list[bytearray] = []
        cache: dict[tuple[int, ...], bytearray] = {}
        for counts in plan:
            key = tuple(counts)
            if key not in cache:
                cache[key] = encode_request(
                    _produce_request(topic, counts, value), version=PRODUCE_VERSION, correlation_id=0, client_id="c"
                )
            requests.append(cache[key])
        clock.start()
        waiting: deque[int] = deque()
        sent = 0
        while sent < len(requests) or waiting:
            while sent < len(requests) and len(waiting) < IN_FLIGHT:
                sock.sendall(requests[sent])
                waiting.append(sum(1 for n in plan[sent] if n))
                sent += 1
            _check_produced(frames.read(), waiting.popleft())
    finally:
        sock.close()


def scan_batches(records: bytes | memoryview | None) -> tuple[int, int]:
    """The record count and the next offset of the whole batches in ``records`` (a partial last batch, cut
    by the fetch size, is left for the next fetch); (0, -1) when there is none."""
    if not records:
        return 0, -1
    data = memoryview(records)
    position, total, next_offset = 0, 0, -1
    while len(data) - position >= BATCH_HEADER_BYTES:
        base_offset, length = BATCH_HEAD.unpack_from(data, position)
        end = position + 12 + length
        if end > len(data):
            break
        (last_delta,) = INT32.unpack_from(data, position + 23)
        (in_batch,) = INT32.unpack_from(data, position + 57)
        total += in_batch
        next_offset = base_offset + last_delta + 1
        position = end
    return total, next_offset


async def consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
    """Fetch every partition from offset 0 until ``count`` records came, reading only the batch headers."""
    sock, frames = _connect(url)
    try:
        clock.start()  # connected: the metadata lookup and the fetching are measured, as for the clients
        partitions = _partitions(sock, frames, topic)
        positions = [0] * partitions
        seen, correlation = 0, 1
        while seen < count:
            request = FetchRequest(
                replica_id=-1,
                max_wait_ms=500,
                min_bytes=1,
                max_bytes=FETCH_BYTES,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                topics=[
                    FetchTopic(
                        topic=topic,
                        partitions=[
                            FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=PARTITION_FETCH_BYTES)
                            for p, o in enumerate(positions)
                        ],
                    )
                ],
            )
            sock.sendall(encode_request(request, version=FETCH_VERSION, correlation_id=correlation, client_id="c"))
            correlation += 1
            response = decode_response(FETCH_KEY, FETCH_VERSION, frames.read())
            if response.error_code:
                raise RuntimeError(f"fetch: error {response.error_code}")
            for fetched in response.responses:
                for partition in fetched.partitions:
                    if partition.error_code:
                        raise RuntimeError(f"partition {partition.partition_index}: error {partition.error_code}")
                    got, next_offset = scan_batches(partition.records)
                    if next_offset >= 0:
                        positions[partition.partition_index] = next_offset
                    seen += got
    finally:
        sock.close()
