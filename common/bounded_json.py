"""JSON received from a peer (admin APIs, schema registries, OAuth2 providers), decoded with its nesting bounded.

``json.loads`` recurses once per nesting level: a body of a few thousand ``[`` raises RecursionError, and a
value nested just under the interpreter's limit parses but breaks whatever walks it later. ``loads`` turns
both into ProtocolError and refuses nesting deeper than ``max_depth`` whatever the stack depth of its caller.
"""

from __future__ import annotations

import json
from typing import Any

from mqwire.common.errors import ProtocolError

__all__ = ["MAX_DEPTH", "loads"]

#: The deepest nesting of arrays and objects accepted; the APIs read here nest a few levels.
MAX_DEPTH = 64


def loads(data: bytes | str, *, what: str = "the body", max_depth: int = MAX_DEPTH) -> Any:
    """``data`` decoded as JSON; ProtocolError (naming ``what``) when it is not JSON or nests too deep."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise ProtocolError(f"{what} nests JSON deeper than {max_depth} levels") from None
    except ValueError as exc:  # also UnicodeDecodeError
        raise ProtocolError(f"{what} is not JSON ({exc})") from None
    # Counting brackets is cheap and bounds the depth from above: most bodies need no walk.
    opened = data.count("[") + data.count("{") if isinstance(data, str) else data.count(b"[") + data.count(b"{")
    if opened > max_depth and _deeper_than(value, max_depth):
        raise ProtocolError(f"{what} nests JSON deeper than {max_depth} levels")
    return value


def _deeper_than(value: Any, limit: int) -> bool:
    # Iterative on purpose: a recursive walk would hit the very limit this guards against.
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False
