"""The Pulsar binary protocol without I/O: frames and commands as bytes in, typed objects out, and back."""

from pulsarwire.protocol import commands
from pulsarwire.protocol import pulsar_api_pb2 as pb
from pulsarwire.protocol.commands import PROTOCOL_VERSION
from pulsarwire.protocol.frames import (
    DEFAULT_MAX_MESSAGE_SIZE,
    FRAME_SIZE_PADDING,
    Frame,
    PulsarFrameSplitter,
    decode_frame,
    encode_command,
    encode_payload_frame,
    encode_payload_frame_raw,
)

__all__ = [
    "DEFAULT_MAX_MESSAGE_SIZE",
    "FRAME_SIZE_PADDING",
    "PROTOCOL_VERSION",
    "Frame",
    "PulsarFrameSplitter",
    "commands",
    "decode_frame",
    "encode_command",
    "encode_payload_frame",
    "encode_payload_frame_raw",
    "pb",
]
