"""Message keys on TubeMQ, which has none: a key travels as the attribute ``mqwire.key``.

TubeMQ messages carry data and a text attribute (``k=v,k=v``), no key. So that code written for Kafka or
Pulsar (``send(value, key=b"k")``) loses nothing, a producer writes the key into the attribute, base64url
without padding (the attribute is text and may not hold ``,`` or ``=``; an empty key is written as ``.``,
which base64 never produces), and uses it to pick the partition. A tubemqwire consumer takes it out of
the attributes again and gives it back as ``message.key``; other TubeMQ clients see an attribute.
"""

from __future__ import annotations

import base64
import binascii

KEY_ATTRIBUTE = "mqwire.key"
_EMPTY = "."


def encode_key(key: bytes) -> str:
    """The attribute value carrying ``key``."""
    if not key:
        return _EMPTY
    return base64.urlsafe_b64encode(key).rstrip(b"=").decode("ascii")


def decode_key(text: str) -> bytes | None:
    """The key an attribute value carries; None when it is not one we wrote (left among the headers)."""
    if text == _EMPTY:
        return b""
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
