"""The individual ACK frame written by hand: the ack path sends many entry positions, not protobuf objects.

The bytes equal ``encode_command(commands.ack(consumer_id, [MessageIdData(...), ...]))``, which the unit
tests check.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from pulsarwire.protocol.pulsar_api_pb2 import BaseCommand
from pulsarwire.protocol.wire import LEN, VARINT, tag, varint

_TYPE_ACK = tag(1, VARINT) + varint(BaseCommand.ACK)
_ACK_FIELD = tag(BaseCommand.ACK, LEN)
_CONSUMER_ID = tag(1, VARINT)
_INDIVIDUAL = tag(2, VARINT) + varint(0)
_MESSAGE_ID = tag(3, LEN)
_LEDGER = tag(1, VARINT)
_ENTRY = tag(2, VARINT)
_SIZES = struct.Struct(">II")
_UINT64 = (1 << 64) - 1


def individual_ack_frame(consumer_id: int, positions: Iterable[tuple[int, int]]) -> bytes:
    """A complete ACK frame (size prefix included) acknowledging each ``(ledger_id, entry_id)``."""
    parts = [_CONSUMER_ID, varint(consumer_id), _INDIVIDUAL]
    for ledger, entry in positions:
        body = _LEDGER + varint(ledger & _UINT64) + _ENTRY + varint(entry & _UINT64)
        parts += (_MESSAGE_ID, varint(len(body)), body)
    ack = b"".join(parts)
    command = _TYPE_ACK + _ACK_FIELD + varint(len(ack)) + ack
    return _SIZES.pack(len(command) + 4, len(command)) + command
