"""The TubeMQ message payload: attribute header, attribute text and checksum.

With flag bit 0 set a payload is ``int32 attributeLength, UTF-8 attribute, data``; without it, just the data.
The attribute is ``k=v,k=v``; the keys ``$msgType$`` (the message type consumers filter on) and
``$msgTime$`` (``yyyyMMddHHmm``) are reserved for the system. The checksum is CRC-32 of the whole payload
masked to 31 bits.
"""

from __future__ import annotations

import ipaddress
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from mqwire.common.checksums import Buffer, crc32
from mqwire.common.errors import ChecksumError, ConfigurationError, ProtocolError
from tubemqwire.protocol.broker_service_pb2 import TransferedMessage
from tubemqwire.protocol.constants import (
    ARRAY_SEP,
    EQ,
    FLAG_HAS_ATTRIBUTE,
    MAX_MSG_TYPE_LENGTH,
    MSG_TIME_FORMAT,
    MSG_TIME_LENGTH,
    TOKEN_MSG_TIME,
    TOKEN_MSG_TYPE,
)

_LENGTH = struct.Struct(">i")


# ------------------------------------------------------------------------------------------- checksums
def checksum(payload: Buffer) -> int:
    """The checksum TubeMQ stores with a message: CRC-32 with the sign bit cleared."""
    return crc32(payload) & 0x7FFFFFFF


def verify_checksum(payload: Buffer, expected: int) -> None:
    actual = checksum(payload)
    if actual != expected:
        raise ChecksumError(f"TubeMQ message checksum {actual} does not match {expected}")


# ---------------------------------------------------------------------------------------------- payload
def encode_payload(data: Buffer, attribute: str | None = None) -> tuple[int, bytes]:
    """``(flag, payload)`` for a message. An empty or missing attribute sends the data alone, flag 0."""
    if not attribute:
        return 0, bytes(data)
    text = attribute.encode("utf-8")
    return FLAG_HAS_ATTRIBUTE, b"".join((_LENGTH.pack(len(text)), text, data))


def decode_payload(flag: int, payload: bytes) -> tuple[str | None, bytes]:
    """``(attribute, data)`` of a stored payload; ProtocolError when the attribute header does not fit."""
    if not flag & FLAG_HAS_ATTRIBUTE:
        return None, payload
    if len(payload) < 4:
        raise ProtocolError(f"payload of {len(payload)} bytes is too short for its attribute length")
    (length,) = _LENGTH.unpack_from(payload, 0)
    if length < 0 or length > len(payload) - 4:
        raise ProtocolError(f"attribute length {length} does not fit a payload of {len(payload)} bytes")
    try:
        attribute = payload[4 : 4 + length].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtocolError(f"attribute is not UTF-8: {exc}") from exc
    return attribute, payload[4 + length :]


@dataclass(frozen=True, slots=True)
class ReceivedMessage:
    """A message as a consumer hands it on: id, data and the attribute split into its parts."""

    message_id: int
    data: bytes
    flag: int
    attribute: str | None
    attributes: dict[str, str] = field(default_factory=dict)
    msg_type: str | None = None
    msg_time: str | None = None


def decode_message(message: TransferedMessage) -> ReceivedMessage:
    """Verify the checksum and split a fetched message. ChecksumError or ProtocolError on bad data."""
    payload = message.payLoadData
    verify_checksum(payload, message.checkSum)
    attribute, data = decode_payload(message.flag, payload)
    pairs = parse_attributes(attribute) if attribute else {}
    msg_type = pairs.pop(TOKEN_MSG_TYPE, None)
    msg_time = pairs.pop(TOKEN_MSG_TIME, None)
    return ReceivedMessage(message.messageId, data, message.flag, attribute, pairs, msg_type, msg_time)


# ------------------------------------------------------------------------------------------- attributes
def format_attributes(
    attributes: Mapping[str, str] | None = None, *, msg_type: str | None = None, msg_time: str | None = None
) -> str:
    """The attribute text: system keys first, as the Java client writes them, then the application's.

    Raises ConfigurationError (a ValueError) for keys or values the format cannot carry (blank, or holding ``,``
    or ``=`` or a reserved key).
    """
    items: list[str] = []
    if msg_type is not None:
        msg_type = msg_type.strip()
        if not msg_type or len(msg_type) > MAX_MSG_TYPE_LENGTH:
            raise ConfigurationError(f"msg_type must be 1 to {MAX_MSG_TYPE_LENGTH} characters")
        _check_token("msg_type", msg_type)
        items.append(f"{TOKEN_MSG_TYPE}{EQ}{msg_type}")
    if msg_time is not None:
        parse_msg_time(msg_time)
        items.append(f"{TOKEN_MSG_TIME}{EQ}{msg_time}")
    for key, value in (attributes or {}).items():
        if not key.strip() or not value.strip():
            raise ConfigurationError(f"attribute {key!r}={value!r}: key and value must not be blank")
        _check_token("attribute key", key)
        _check_token("attribute value", value)
        items.append(f"{key}{EQ}{value}")
    return ARRAY_SEP.join(items)


def _check_token(what: str, text: str) -> None:
    if ARRAY_SEP in text or EQ in text:
        raise ConfigurationError(f"{what} {text!r} must not contain ',' or '='")
    if TOKEN_MSG_TYPE in text or TOKEN_MSG_TIME in text:
        raise ConfigurationError(f"{what} {text!r} must not contain the reserved keys $msgType$ or $msgTime$")


def parse_attributes(text: str) -> dict[str, str]:
    """``k=v,k=v`` as a dict. Like the Java client, items without ``=`` or with a blank key are skipped."""
    result: dict[str, str] = {}
    for item in text.split(ARRAY_SEP):
        key, sep, value = item.partition(EQ)
        if sep and key.strip():
            result[key] = value
    return result


def format_msg_time(moment: datetime) -> str:
    """``yyyyMMddHHmm`` of a wall-clock time (the broker reads it in its own time zone)."""
    return moment.strftime(MSG_TIME_FORMAT)


def parse_msg_time(text: str) -> datetime:
    """The naive datetime of a ``yyyyMMddHHmm`` string; ValueError when it is not one."""
    if len(text) != MSG_TIME_LENGTH or not text.isdigit():
        raise ValueError(f"msg_time {text!r} is not yyyyMMddHHmm")
    return datetime.strptime(text, MSG_TIME_FORMAT)


# ------------------------------------------------------------------------------------------- addresses
def ipv4_to_int32(address: str) -> int:
    """SendMessageRequestP2B.sentAddr: the IPv4 address read as a big-endian signed int32."""
    value = int(ipaddress.IPv4Address(address))
    return value - (1 << 32) if value >= 1 << 31 else value


def int32_to_ipv4(value: int) -> str:
    return str(ipaddress.IPv4Address(value & 0xFFFFFFFF))
