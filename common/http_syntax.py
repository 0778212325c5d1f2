"""HTTP/1.1 message syntax (RFC 9112) as the admin client uses it: what may be sent, and a strict reading of what
comes back. No I/O here: ``mqwire.common.http`` reads the lines and bytes and hands them to these functions.

Sending: the method must be a token, the request target visible ASCII (no space, CR, LF, NUL or other control
character) and header names tokens with values free of control characters, so that nothing a caller passes can
end a line early and add a header or a second request. Violations raise ConfigurationError before anything is
sent; messages name the header, never its value (values may be credentials).

Receiving: the status line, every field line and every chunk-size line must match the grammar exactly
(``Content-Length`` is ASCII decimal digits, a chunk size hex digits optionally followed by ``;extensions``);
the header section is bounded in lines and bytes; a claimed length is compared with the caller's limit before
anything of that size is read. Anything else raises ProtocolError.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mqwire.common.errors import ConfigurationError, ProtocolError

__all__ = [
    "MAX_FIELDS",
    "MAX_LINE",
    "MAX_SECTION",
    "FieldSection",
    "body_length",
    "check_target",
    "chunk_size",
    "is_chunked",
    "request_head",
    "status_code",
]

#: The longest status, field or chunk-size line accepted, in bytes.
MAX_LINE = 8 * 1024
#: The most field lines in a header or trailer section.
MAX_FIELDS = 100
#: The most bytes in a header or trailer section (all its lines together).
MAX_SECTION = 64 * 1024

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TARGET = re.compile(r"[\x21-\x7e]+")
# Field values: visible characters, space, tab and obs-text; no other control character (CR, LF, NUL...).
_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
_STATUS = re.compile(rb"HTTP/1\.[01] ([0-9]{3})(?: [\t\x20-\x7e\x80-\xff]*)?")
_FIELD = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):([\t\x20-\x7e\x80-\xff]*)")
_CHUNK = re.compile(rb"([0-9A-Fa-f]{1,16})[ \t]*(;[\t\x20-\x7e\x80-\xff]*)?")
_DECIMAL = re.compile(r"[0-9]+")


# ------------------------------------------------------------------------------------------------ sending
def check_target(target: str, what: str = "request path") -> None:
    """Refuse a request target that is empty or holds anything but visible ASCII (``what`` names it)."""
    if not _TARGET.fullmatch(target):
        raise ConfigurationError(
            f"{what} {_shown(target)} must be visible ASCII: no space, line break, NUL or other control character"
            " (percent-encode it)"
        )


def request_head(method: str, target: str, fields: Iterable[tuple[str, str]]) -> bytes:
    """The request line and header section, ending with the empty line; ConfigurationError when any is malformed."""
    if not _TOKEN.fullmatch(method):
        raise ConfigurationError(f"HTTP method {_shown(method)} is not a token")
    check_target(target)
    lines = [f"{method} {target} HTTP/1.1"]
    for name, value in fields:
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise ConfigurationError(f"header name {_shown(str(name))} is not a token")
        if not isinstance(value, str) or not _VALUE.fullmatch(value):
            # Not the value itself: it may be a credential.
            raise ConfigurationError(
                f"header {name!r} has a value with a line break, NUL, other control character or a character"
                " beyond Latin-1"
            )
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _shown(text: str) -> str:
    return repr(text[:80])


# ---------------------------------------------------------------------------------------------- receiving
def status_code(line: bytes) -> int:
    """The status code of an HTTP/1.0 or 1.1 status line (without its line ending)."""
    match = _STATUS.fullmatch(line)
    if match is None:
        raise ProtocolError(f"not an HTTP/1.x status line: {line[:100]!r}")
    return int(match.group(1))


class FieldSection:
    """The field lines of one header or trailer section, checked and counted as they arrive.

    ``values(name)`` gives every value received under a (case-insensitive) name, in order.
    """

    def __init__(self, what: str = "header") -> None:
        self.what = what
        self._fields: dict[str, list[str]] = {}
        self._lines = 0
        self._bytes = 0

    def add(self, line: bytes) -> None:
        """One field line (without its line ending); ProtocolError when malformed or over a bound."""
        self._lines += 1
        self._bytes += len(line) + 2
        if self._lines > MAX_FIELDS:
            raise ProtocolError(f"more than {MAX_FIELDS} HTTP {self.what} lines")
        if self._bytes > MAX_SECTION:
            raise ProtocolError(f"HTTP {self.what} section longer than {MAX_SECTION} bytes")
        # No folded lines (obs-fold), no space before the colon, no control characters in the value.
        match = _FIELD.fullmatch(line)
        if match is None:
            raise ProtocolError(f"malformed HTTP {self.what} line: {line[:100]!r}")
        name = match.group(1).decode("ascii").lower()
        self._fields.setdefault(name, []).append(match.group(2).strip(b" \t").decode("latin-1"))

    def values(self, name: str) -> list[str]:
        """Every value received under ``name``, in order (empty when there is none)."""
        return self._fields.get(name.lower(), [])


def _list_items(values: list[str]) -> list[str]:
    return [item.strip(" \t") for value in values for item in value.split(",")]


def is_chunked(fields: FieldSection) -> bool:
    """Whether the body is chunked; ProtocolError for any other transfer coding or one combined with a length."""
    values = fields.values("transfer-encoding")
    if not values:
        return False
    codings = [item.lower() for item in _list_items(values)]
    if codings != ["chunked"]:
        raise ProtocolError(f"unsupported Transfer-Encoding {', '.join(values)[:80]!r} (only chunked is read)")
    if fields.values("content-length"):
        # RFC 9112 section 6.3: a message with both may be an attempt at response splitting.
        raise ProtocolError("HTTP response with both Transfer-Encoding and Content-Length")
    return True


def body_length(fields: FieldSection, max_body: int) -> int | None:
    """The ``Content-Length`` of the body (None when absent), checked against ``max_body`` before any read.

    Repeated or comma-separated values are accepted only when all are the same (RFC 9112 section 6.3).
    """
    values = fields.values("content-length")
    if not values:
        return None
    items = set(_list_items(values))
    if len(items) != 1:
        raise ProtocolError(f"differing or empty Content-Length values: {', '.join(values)[:80]!r}")
    (text,) = items
    if not _DECIMAL.fullmatch(text):
        raise ProtocolError(f"invalid Content-Length {text[:40]!r}: not decimal digits")
    digits = text.lstrip("0") or "0"
    # Compared as text first: a length of thousands of digits is refused without converting it.
    if len(digits) > len(str(max_body)) or int(digits) > max_body:
        raise ProtocolError(f"response body of {digits[:40]} bytes exceeds the limit of {max_body}")
    return int(digits)


def chunk_size(line: bytes) -> tuple[int, int]:
    """The size of the next chunk and the length of its extensions, from a chunk-size line (hex digits only)."""
    match = _CHUNK.fullmatch(line)
    if match is None:
        raise ProtocolError(f"invalid chunk size line {line[:40]!r}")
    extensions = match.group(2)
    return int(match.group(1), 16), 0 if extensions is None else len(extensions)
