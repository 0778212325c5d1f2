"""Record batches, message format v2 (magic 2): the only format Kafka 4 reads and writes.

A batch is a 61-byte header followed by its records, compressed as a whole::

    base_offset int64, batch_length int32, partition_leader_epoch int32, magic int8, crc uint32,
    attributes int16, last_offset_delta int32, base_timestamp int64, max_timestamp int64,
    producer_id int64, producer_epoch int16, base_sequence int32, record_count int32, records...

The CRC-32C covers everything from ``attributes`` to the end. Each record is varint-framed::

    length varint, attributes int8, timestamp_delta varlong, offset_delta varint,
    key_length varint, key, value_length varint, value, header_count varint,
    (header_key_length varint, header_key, header_value_length varint, header_value)...

``BatchBuilder`` writes records straight into the buffer that becomes the batch, leaving room for the
header, so an uncompressed batch is built in one pass with no copy of its records. ``decode_batches`` reads
the records bytes of a fetch response: it stops quietly at a truncated last batch (brokers cut responses at
``max_bytes``), verifies each CRC and bounds every decompression. Lazily decoded, a compressed batch stays
compressed until ``RecordBatch.inflate`` (or reading its records) decompresses it under a limit the caller
chooses: a consumer spends one budget on a whole response, batch by batch.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from kafkawire.protocol import primitives as p
from mqwire.common.checksums import crc32c
from mqwire.common.compression import CompressionLimitError, compress, decompress
from mqwire.common.errors import ChecksumError, ProtocolError
from mqwire.common.speedups import load_speedups

_speedups = load_speedups("kafkawire.protocol._records_speedups")

MAGIC = 2
# Offsets inside the batch header.
_CRC_OFFSET = 17
_ATTRIBUTES_OFFSET = 21
HEADER_SIZE = 61
# The smallest record: every varint one byte, no key, value or headers.
_MIN_RECORD_SIZE = 7
# Offsets and timestamps are int64s, offset deltas int32s: a sum or delta past them is refused, not wrapped.
_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1
_INT32_MIN = -(2**31)
_INT32_MAX = 2**31 - 1
# A base offset or timestamp this far inside the int64 range cannot pass it by an int32 delta (nor by a
# one-byte timestamp delta), so the decoder checks the sums only for batches outside it or long deltas.
_SAFE_MIN = _INT64_MIN - _INT32_MIN
_SAFE_MAX = _INT64_MAX - _INT32_MAX

_PREFIX = struct.Struct(">qiibI")  # base offset .. crc
_TAIL = struct.Struct(">hiqqqhii")  # attributes .. record count
_LENGTH_AND_EPOCH = struct.Struct(">qii")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_LOG_APPEND = 0x08
TRANSACTIONAL = 0x10
CONTROL = 0x20
HAS_DELETE_HORIZON = 0x40

# Attribute code -> codec name of common.compression. Snappy is written in the xerial framing that the Java
# client writes and reads; decoding accepts both framings.
CODEC_NAMES = {1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CODEC_CODES = {name: code for code, name in CODEC_NAMES.items()}
_ENCODE_AS = {"snappy": "snappy-xerial"}

# Control record types (the key of the single record of a control batch).
ABORT_MARKER = 0
COMMIT_MARKER = 1

DEFAULT_MAX_UNCOMPRESSED = 64 * 1024 * 1024

Header = tuple[str, bytes | None]
# Decoded headers are a tuple: immutable, and the empty one is shared by every record without headers.
Headers = tuple[Header, ...]
T = TypeVar("T")


class RecordBatchTooLargeError(ProtocolError):
    """A record batch decompresses to more than the consumer allows (``limit`` bytes)."""

    def __init__(self, message: str, *, base_offset: int, limit: int) -> None:
        super().__init__(message)
        self.base_offset = base_offset
        self.limit = limit


@dataclass(slots=True)
class Record:
    # The order in which the decoder passes them (see RecordBatch.decode_records).
    offset: int
    key: bytes | None
    value: bytes | None
    headers: Headers
    timestamp: int


@dataclass(slots=True)
class RecordBatch:
    base_offset: int
    partition_leader_epoch: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: list[Record]
    # Decoded lazily (``decode_batches(lazy=True)``): the uncompressed records and their count ...
    payload: bytes | memoryview = b""
    record_count: int = 0
    # ... and, until ``inflate``, the compressed records of a compressed batch.
    compressed: bytes | memoryview = b""

    @property
    def compression(self) -> str | None:
        return CODEC_NAMES.get(self.attributes & COMPRESSION_MASK)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL)

    @property
    def is_control(self) -> bool:
        """A transaction marker written by the broker, not application data."""
        return bool(self.attributes & CONTROL)

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_LOG_APPEND)

    @property
    def next_offset(self) -> int:
        """The offset after this batch (where the next fetch continues, even if records were compacted away)."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def inflated(self) -> bool:
        """False while a lazily decoded batch's records are still compressed."""
        return not self.compressed

    def inflate(self, max_size: int = DEFAULT_MAX_UNCOMPRESSED) -> int:
        """Decompress the records of a lazily decoded batch; the bytes that took (0 when there was nothing to do).

        Raises RecordBatchTooLargeError when they would exceed ``max_size`` (the batch stays compressed, so
        that it may be inflated later under a larger limit) and ProtocolError when they are corrupt.
        """
        if not self.compressed:
            return 0
        codec = self.compression
        assert codec is not None
        try:
            payload = decompress(codec, self.compressed, max_size=max_size)
        except CompressionLimitError as exc:
            raise RecordBatchTooLargeError(
                f"record batch at offset {self.base_offset} decompresses to more than {max_size} bytes",
                base_offset=self.base_offset,
                limit=max_size,
            ) from exc
        _check_count(self.base_offset, self.record_count, len(payload))
        self.payload = payload
        self.compressed = b""
        return len(payload)

    def decode_records(
        self, make_record: Callable[..., T], prefix: tuple[object, ...] = (), suffix: tuple[object, ...] = ()
    ) -> list[T]:
        """The records of a lazily decoded batch, each ``make_record(*prefix, offset, key, value, headers,
        timestamp, *suffix)``: the consumer builds its messages straight from the bytes this way.

        Raises ProtocolError for a malformed record. A broker-stamped batch (log-append time) gives every
        record the batch's timestamp. A batch still compressed is inflated first under the default limit.
        """
        self.inflate()
        return _decode_batch_records(self, make_record, prefix, suffix)

    def control_type(self) -> int | None:
        """ABORT_MARKER or COMMIT_MARKER for a control batch, else None."""
        if not self.is_control:
            return None
        records = self.records if self.records or not self.payload else self.decode_records(Record)
        if not records or records[0].key is None or len(records[0].key) < 4:
            return None
        marker: int = p.INT16.unpack_from(records[0].key, 2)[0]
        return marker


def _decode_batch_records(
    batch: RecordBatch, make_record: Callable[..., T], prefix: tuple[object, ...], suffix: tuple[object, ...]
) -> list[T]:
    if batch.records or not batch.payload:  # decoded already (not lazily): build from the records
        return [make_record(*prefix, r.offset, r.key, r.value, r.headers, r.timestamp, *suffix) for r in batch.records]
    fixed_timestamp = batch.max_timestamp if batch.attributes & TIMESTAMP_TYPE_LOG_APPEND else None
    try:
        return _decode_records(
            batch.payload,
            batch.record_count,
            batch.base_offset,
            batch.base_timestamp,
            fixed_timestamp,
            make_record,
            prefix,
            suffix,
        )
    except p.DECODE_ERRORS as exc:
        raise ProtocolError(f"malformed record in batch at offset {batch.base_offset}: {exc}") from exc


def application_records(batches: Iterable[RecordBatch]) -> Iterator[Record]:
    """The records of every batch except control batches, in order."""
    for batch in batches:
        if not batch.is_control:
            yield from batch.records


class RecordTimestamps(Protocol):
    """The timestamps (ms) of a producer batch's records, in order: a list, or the compiled packed array."""

    def append(self, stamp: int, /) -> None: ...

    def extend(self, stamps: Iterable[int], /) -> None: ...

    def __len__(self) -> int: ...

    def __getitem__(self, index: int, /) -> int: ...


class RecordAppenderPy:
    """The records of an open batch and the counters of its header: what ``BatchBuilder`` changes per record.

    The reference for the compiled ``RecordAppender``, which the producer's per-record path calls directly.
    """

    __slots__ = ("base_timestamp", "buffer", "count", "max_size", "max_timestamp")

    def __init__(self, buffer: bytearray, max_size: int) -> None:
        self.buffer = buffer
        self.max_size = max_size
        self.count = 0
        self.base_timestamp = 0
        self.max_timestamp = -1

    def reclaim(self, size: int) -> bytearray | None:
        """The compiled appender's reclaim (the buffer cut back to ``size`` bytes with its memory kept): None
        here, where cutting a bytearray by more than half gives its memory back."""
        return None

    def add(self, timestamp: int, key: bytes | None, value: bytes | None, headers: Sequence[Header]) -> int:
        """Add a record; the bytes written so far after it, or -1 if it does not fit (the first always fits).

        Raises OverflowError for a timestamp, or a distance from the batch's first, that 64 bits cannot hold.
        """
        if not _INT64_MIN <= timestamp <= _INT64_MAX:
            raise OverflowError(f"record timestamp {timestamp} does not fit in 64 bits")
        count = self.count
        if count == 0:
            self.base_timestamp = timestamp
            limit = -1
        else:
            limit = self.max_size
        buffer = self.buffer
        if not _append_record(buffer, limit, count, timestamp - self.base_timestamp, key, value, headers):
            return -1
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        self.count = count + 1
        return len(buffer)

    def add_now(self, value: bytes | None, timestamps: RecordTimestamps) -> int:
        """``add`` of a record with only a value, stamped with the current time (ms); the stamp is appended to
        ``timestamps`` when the record goes in. The producer's loop of plain sends calls this per record."""
        timestamp = time.time_ns() // 1_000_000
        size = self.add(timestamp, None, value, ())
        if size >= 0:
            timestamps.append(timestamp)
        return size


class BatchBuilder:
    """Accumulates records into one batch; ``append`` refuses a record that would exceed ``max_size``.

    ``add(timestamp, key, value, headers)`` is the producer's per-record step: the bytes written so far after
    adding the record, or -1 if it does not fit (one compiled call when the extension is built).
    """

    __slots__ = (
        "_records",
        "add",
        "add_now",
        "base_sequence",
        "codec",
        "control",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "transactional",
    )

    def __init__(
        self,
        *,
        compression: str | None = None,
        max_size: int = 1024 * 1024,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
        partition_leader_epoch: int = -1,
        control: bool = False,
        buffer: bytearray | None = None,
    ) -> None:
        """``buffer``: a finished batch's, from ``reclaim_buffer`` (its first HEADER_SIZE bytes are rewritten
        when the batch is built); None, a new one."""
        if compression is not None and compression not in CODEC_CODES:
            raise ValueError(f"unknown compression {compression!r}; expected one of {sorted(CODEC_CODES)} or None")
        self.codec = compression
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.transactional = transactional
        self.partition_leader_epoch = partition_leader_epoch
        self.control = control
        if buffer is None or len(buffer) != HEADER_SIZE:
            buffer = bytearray(HEADER_SIZE)
        self._records = _RecordAppender(buffer, max_size)
        self.add: Callable[[int, bytes | None, bytes | None, Sequence[Header]], int] = self._records.add
        self.add_now: Callable[[bytes | None, RecordTimestamps], int] = self._records.add_now

    def __len__(self) -> int:
        return self._records.count

    @property
    def size(self) -> int:
        """Bytes written so far, before compression."""
        return len(self._records.buffer)

    def reclaim_buffer(self) -> bytearray | None:
        """Once the batch is done (and the builder used no more): its buffer, cut back to HEADER_SIZE bytes with
        its memory kept, for a next batch (``BatchBuilder(buffer=...)``), which then writes into pages already
        mapped instead of fresh ones. None when anything else still holds the buffer, and without the compiled
        speedups (a bytearray cut by more than half gives its memory back)."""
        return self._records.reclaim(HEADER_SIZE)

    def append(
        self, timestamp: int, key: bytes | None, value: bytes | None, headers: Sequence[Header] = ()
    ) -> int | None:
        """Add a record; return its offset delta, or None if it does not fit (the first record always fits)."""
        count = self._records.count
        if self.add(timestamp, key, value, headers) < 0:
            return None
        return count

    def append_many(
        self,
        timestamp: int,
        keys: list[bytes | None] | None,
        values: list[bytes | None],
        headers: list[Sequence[Header]] | None,
        start: int,
        stop: int,
    ) -> int:
        """Add records ``start``..``stop`` of the lists (all with one timestamp) in one pass, as many as fit;
        returns how many were added (at least one into an empty builder)."""
        if start >= stop:
            return 0
        if not _INT64_MIN <= timestamp <= _INT64_MAX:
            raise OverflowError(f"record timestamp {timestamp} does not fit in 64 bits")
        records = self._records
        count = records.count
        added = 0
        if count == 0:
            first_headers = () if headers is None else headers[start]
            first_key = None if keys is None else keys[start]
            self.add(timestamp, first_key, values[start], first_headers)
            count = added = 1
        delta = timestamp - records.base_timestamp
        more = _append_records(
            records.buffer, records.max_size, count, delta, keys, values, headers, start + added, stop
        )
        if more:
            if timestamp > records.max_timestamp:
                records.max_timestamp = timestamp
            records.count = count + more
        return added + more

    def build(self, base_offset: int = 0) -> bytes:
        """The finished batch. The builder can be built again (e.g. with a new sequence after a retry)."""
        return bytes(self.build_in_place(base_offset))

    def build_in_place(self, base_offset: int = 0) -> bytearray:
        """``build`` without the final copy: an uncompressed batch is the builder's own buffer, valid until
        the builder changes (the producer copies it into its request at once)."""
        records = self._records
        if records.count == 0:
            raise ValueError("a record batch needs at least one record")
        attributes = 0
        if self.codec is not None:
            attributes |= CODEC_CODES[self.codec]
        if self.transactional:
            attributes |= TRANSACTIONAL
        if self.control:
            attributes |= CONTROL
        tail = _TAIL.pack(
            attributes,
            records.count - 1,
            records.base_timestamp,
            records.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            records.count,
        )
        if self.codec is None:
            out = records.buffer
            out[_ATTRIBUTES_OFFSET:HEADER_SIZE] = tail
        else:
            payload = compress(_ENCODE_AS.get(self.codec, self.codec), memoryview(records.buffer)[HEADER_SIZE:])
            out = bytearray(HEADER_SIZE)
            out[_ATTRIBUTES_OFFSET:HEADER_SIZE] = tail
            out += payload
        crc = crc32c(memoryview(out)[_ATTRIBUTES_OFFSET:])
        _PREFIX.pack_into(out, 0, base_offset, len(out) - 12, self.partition_leader_epoch, MAGIC, crc)
        return out


def append_record_py(
    buffer: bytearray,
    limit: int,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header],
) -> bool:
    """Append one varint-framed record to ``buffer`` unless that would make it longer than ``limit`` (-1: none).

    Raises OverflowError for an offset delta outside int32 or a timestamp delta outside int64.
    """
    _check_deltas(offset_delta, timestamp_delta)
    zigzag = p.zigzag
    parts = [b"\x00", zigzag(timestamp_delta), zigzag(offset_delta)]  # attributes: unused
    if key is None:
        parts.append(b"\x01")  # zig-zag -1
    else:
        parts += (zigzag(len(key)), key)
    if value is None:
        parts.append(b"\x01")
    else:
        parts += (zigzag(len(value)), value)
    parts.append(zigzag(len(headers)))
    for header in headers:
        if not isinstance(header, tuple) or len(header) != 2 or not isinstance(header[0], str):
            raise TypeError("each record header must be a (str, bytes | None) pair")  # as the compiled one says
        name, header_value = header
        encoded = name.encode()
        parts += (zigzag(len(encoded)), encoded)
        if header_value is None:
            parts.append(b"\x01")
        else:
            parts += (zigzag(len(header_value)), header_value)
    body = b"".join(parts)
    length = zigzag(len(body))
    if limit >= 0 and len(buffer) + len(length) + len(body) > limit:
        return False
    buffer += length
    buffer += body
    return True


def _check_deltas(offset_delta: int, timestamp_delta: int) -> None:
    if not _INT32_MIN <= offset_delta <= _INT32_MAX:
        raise OverflowError(f"record offset delta {offset_delta} does not fit in 32 bits")
    if not _INT64_MIN <= timestamp_delta <= _INT64_MAX:
        raise OverflowError(f"record timestamp delta {timestamp_delta} does not fit in 64 bits")


def append_records_py(
    buffer: bytearray,
    limit: int,
    first_delta: int,
    timestamp_delta: int,
    keys: list[bytes | None] | None,
    values: list[bytes | None],
    headers: list[Sequence[Header]] | None,
    start: int,
    stop: int,
) -> int:
    """Records ``start``..``stop`` of the lists (None keys or headers: none), offset deltas counted from
    ``first_delta``, appended until one would make ``buffer`` longer than ``limit``; how many went in."""
    if (
        type(values) is not list
        or (keys is not None and type(keys) is not list)
        or (headers is not None and type(headers) is not list)
    ):
        raise TypeError("append_records: keys and headers must be lists or None, values a list")
    size = len(values)
    if (
        not 0 <= start <= stop <= size
        or (keys is not None and len(keys) != size)
        or (headers is not None and len(headers) != size)
    ):
        raise ValueError("append_records: keys, values and headers differ in length or bad range")
    # Every offset delta, first to last, checked before anything is appended (as the compiled loop does).
    _check_deltas(first_delta, timestamp_delta)
    if stop > start:
        _check_deltas(first_delta + stop - start - 1, timestamp_delta)
    for i in range(start, stop):
        key = None if keys is None else keys[i]
        record_headers = () if headers is None else headers[i]
        delta = first_delta + i - start
        if not append_record_py(buffer, limit, delta, timestamp_delta, key, values[i], record_headers):
            return i - start
    return stop - start


def encode_batch(
    records: Iterable[tuple[int, bytes | None, bytes | None, Sequence[Header]]],
    *,
    base_offset: int = 0,
    compression: str | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytes:
    """One batch of ``(timestamp, key, value, headers)`` records, without a size limit."""
    builder = BatchBuilder(
        compression=compression,
        max_size=2**31 - 1,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        transactional=transactional,
    )
    for timestamp, key, value, headers in records:
        builder.append(timestamp, key, value, headers)
    return builder.build(base_offset)


def decode_batches(
    data: p.Buffer | None,
    *,
    verify_crc: bool = True,
    max_uncompressed_size: int = DEFAULT_MAX_UNCOMPRESSED,
    lazy: bool = False,
) -> list[RecordBatch]:
    """Every complete batch in ``data`` (a partition's records from a fetch response).

    A truncated last batch is dropped: a broker cuts its response at the fetch size, and the consumer
    fetches the rest from ``next_offset`` of the last complete batch. CRCs and decompression are checked
    here; with ``lazy`` the records themselves are decompressed and decoded only by ``RecordBatch.inflate``
    and ``RecordBatch.decode_records``, so that batches nobody will see (control markers, aborted
    transactions, already consumed) cost nothing more, and the caller bounds the decompressed bytes.
    """
    if not data:
        return []
    buf = data if isinstance(data, memoryview) else memoryview(data)
    batches: list[RecordBatch] = []
    pos = 0
    end = len(buf)
    while end - pos >= 12 + 5:  # offset, length, epoch, magic: enough to know whether a batch is complete
        base_offset, length, leader_epoch = _LENGTH_AND_EPOCH.unpack_from(buf, pos)
        batch_end = pos + 12 + length
        if length < HEADER_SIZE - 12:
            raise ProtocolError(f"record batch at offset {base_offset} claims {length} bytes, fewer than its header")
        magic = buf[pos + 16]
        if magic != MAGIC:
            raise ProtocolError(f"record batch at offset {base_offset} has magic {magic}; only magic 2 is supported")
        if batch_end > end:
            break
        batches.append(
            _decode_batch(buf[pos:batch_end], base_offset, leader_epoch, verify_crc, max_uncompressed_size, lazy)
        )
        pos = batch_end
    return batches


def _decode_batch(
    batch: memoryview, base_offset: int, leader_epoch: int, verify_crc: bool, max_uncompressed: int, lazy: bool
) -> RecordBatch:
    (stored_crc,) = p.UINT32.unpack_from(batch, _CRC_OFFSET)
    if verify_crc:
        actual = crc32c(batch[_ATTRIBUTES_OFFSET:])
        if actual != stored_crc:
            raise ChecksumError(
                f"record batch at offset {base_offset}: CRC-32C {actual:#010x}, header says {stored_crc:#010x}"
            )
    (
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = _TAIL.unpack_from(batch, _ATTRIBUTES_OFFSET)
    if base_offset + last_offset_delta >= _INT64_MAX:
        # Its records' offsets, or the offset a fetch goes on from (next_offset), would not fit int64.
        raise ProtocolError(
            f"record batch at offset {base_offset}: last offset delta {last_offset_delta} puts its end past int64"
        )
    codec = CODEC_NAMES.get(attributes & COMPRESSION_MASK)
    if attributes & COMPRESSION_MASK and codec is None:
        raise ProtocolError(f"record batch at offset {base_offset}: unknown compression {attributes & 7}")
    payload: bytes | memoryview = b""
    compressed: bytes | memoryview = b""
    if codec is not None:
        if count < 0:
            _check_count(base_offset, count, 0)
        compressed = batch[HEADER_SIZE:]  # decompressed by inflate, under the caller's limit
    elif _speedups is not None:
        payload = batch[HEADER_SIZE:]  # the compiled decoder reads it in place: no copy of the whole batch
        _check_count(base_offset, count, len(payload))
    else:
        # One copy into bytes: indexing and slicing bytes is faster than a memoryview in Python.
        payload = bytes(batch[HEADER_SIZE:])
        _check_count(base_offset, count, len(payload))
    decoded = RecordBatch(
        base_offset,
        leader_epoch,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        [],
        payload,
        count,
        compressed,
    )
    if not lazy:
        decoded.inflate(max_uncompressed)
        decoded.records = decoded.decode_records(Record)
        decoded.payload = b""  # the records hold what is needed of it
    return decoded


def _check_count(base_offset: int, count: int, size: int) -> None:
    if count < 0 or count * _MIN_RECORD_SIZE > size:
        raise ProtocolError(f"record batch at offset {base_offset} claims {count} records in {size} bytes")


def decode_records_py(
    buf: bytes,
    count: int,
    base_offset: int,
    base_timestamp: int,
    fixed_timestamp: int | None,
    make_record: Callable[..., T],
    prefix: tuple[object, ...] = (),
    suffix: tuple[object, ...] = (),
) -> list[T]:
    """The ``count`` records of an uncompressed batch body, each
    ``make_record(*prefix, offset, key, value, headers, timestamp, *suffix)``.

    Raises ProtocolError for a malformed record, among them one whose offset or timestamp passes int64.
    """
    # The hot loop of every consumer: one-byte varints (the common case) are decoded inline.
    read_varint = p.read_varint
    # Near the int64 limits every record's sums are checked; elsewhere only those of long timestamp deltas.
    near_limits = not (_SAFE_MIN <= base_offset <= _SAFE_MAX and _SAFE_MIN <= base_timestamp <= _SAFE_MAX)
    records: list[T] = []
    append = records.append
    end = len(buf)
    pos = 0
    for _ in range(count):
        length = buf[pos]
        if length < 0x80:
            length = (length >> 1) ^ -(length & 1)
            pos += 1
        else:
            length, pos = read_varint(buf, pos)
        record_end = pos + length
        if length < _MIN_RECORD_SIZE - 1 or record_end > end:
            raise p.truncated("record", length, end - pos)
        pos += 1  # attributes: unused
        delta = buf[pos]
        if delta < 0x80:
            timestamp_delta = (delta >> 1) ^ -(delta & 1)
            pos += 1
        else:
            timestamp_delta, pos = p.read_varlong(buf, pos)
            if fixed_timestamp is None and not _INT64_MIN <= base_timestamp + timestamp_delta <= _INT64_MAX:
                raise _past_int64(base_offset, "timestamp", base_timestamp, timestamp_delta)
        delta = buf[pos]
        if delta < 0x80:
            offset_delta = (delta >> 1) ^ -(delta & 1)
            pos += 1
        else:
            offset_delta, pos = read_varint(buf, pos)
        key, pos = _get_bytes(buf, pos, record_end, "record key")
        value, pos = _get_bytes(buf, pos, record_end, "record value")
        header_count = buf[pos]
        if header_count == 0:
            pos += 1
            headers: Headers = ()
        else:
            headers, pos = _get_headers(buf, pos, record_end)
        if pos != record_end:
            raise ProtocolError(f"record length {length} does not match its fields")
        timestamp = base_timestamp + timestamp_delta if fixed_timestamp is None else fixed_timestamp
        offset = base_offset + offset_delta
        if near_limits:
            if not _INT64_MIN <= offset <= _INT64_MAX:
                raise _past_int64(base_offset, "offset", base_offset, offset_delta)
            if fixed_timestamp is None and not _INT64_MIN <= timestamp <= _INT64_MAX:
                raise _past_int64(base_offset, "timestamp", base_timestamp, timestamp_delta)
        append(make_record(*prefix, offset, key, value, headers, timestamp, *suffix))
    if pos != end:
        raise ProtocolError(f"{end - pos} bytes after the last record of a batch")
    return records


def _past_int64(batch_offset: int, what: str, base: int, delta: int) -> ProtocolError:
    return ProtocolError(f"record of the batch at offset {batch_offset}: {what} {base} + {delta} passes 64 bits")


def _get_headers(buf: bytes, pos: int, limit: int) -> tuple[Headers, int]:
    count, pos = p.read_varint(buf, pos)
    if count < 0 or count * 2 > limit - pos:
        raise ProtocolError(f"record claims {count} headers")
    headers: list[Header] = []
    for _ in range(count):
        name, pos = _get_bytes(buf, pos, limit, "header key")
        if name is None:
            raise ProtocolError("null record header key")
        value, pos = _get_bytes(buf, pos, limit, "header value")
        headers.append((name.decode(), value))
    return tuple(headers), pos


def _get_bytes(buf: bytes, pos: int, limit: int, what: str) -> tuple[bytes | None, int]:
    length = buf[pos]
    if length < 0x80:
        length = (length >> 1) ^ -(length & 1)
        pos += 1
    else:
        length, pos = p.read_varint(buf, pos)
    if length < 0:
        if length != -1:
            raise ProtocolError(f"{what} has length {length}")
        return None, pos
    stop = pos + length
    if stop > limit:
        raise p.truncated(what, length, limit - pos)
    return buf[pos:stop], stop


# The compiled inner loops (built with the package when a C compiler is present) or the Python ones above.
# MQWIRE_PURE_PYTHON=1 forces the Python ones.
_append_record: Callable[[bytearray, int, int, int, bytes | None, bytes | None, Sequence[Header]], bool]
_append_records: Callable[..., int]
_decode_records: Callable[..., list[Any]]
_RecordAppender: Callable[[bytearray, int], RecordAppenderPy]
# A new batch's timestamps: what its appender's add_now takes (the compiled one, only the compiled array).
new_record_timestamps: Callable[[], RecordTimestamps]
if _speedups is not None:
    _append_record = _speedups.append_record
    _append_records = _speedups.append_records
    _decode_records = _speedups.decode_records
    _RecordAppender = _speedups.RecordAppender
    new_record_timestamps = _speedups.RecordTimestamps
else:
    _append_record = append_record_py
    _append_records = append_records_py
    _decode_records = decode_records_py
    _RecordAppender = RecordAppenderPy
    new_record_timestamps = list
COMPILED = _speedups is not None



class DecompressionBudget:
    """What one fetch response may still decompress; compressed batches are inflated through ``inflate``."""

    __slots__ = ("limit", "remaining", "spent")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.remaining = limit
        # Set once a batch did not fit: every compressed batch after it waits for the next fetch.
        self.spent = False

    def inflate(self, batch: RecordBatch) -> bool:
        """Decompress ``batch`` out of the budget; False when it must wait for a later response.

        Raises RecordBatchTooLargeError when the batch alone exceeds the whole budget.
        """
        if batch.inflated:
            return True
        if self.spent:
            return False
        try:
            self.remaining -= batch.inflate(self.remaining)
        except RecordBatchTooLargeError:
            if self.remaining < self.limit:
                self.spent = True
                return False
            raise
        return True
