"""Input records for ``produce`` and the output template of ``consume``."""

from __future__ import annotations

import base64
import json
import string
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from mqwire.cli.systems import Row, UsageError

INPUT_FORMATS = ("lines", "jsonl", "raw")
DEFAULT_TEMPLATE = "{value}"
TEMPLATE_FIELDS = ("topic", "partition", "offset", "key", "value", "headers", "timestamp")


@dataclass(frozen=True)
class InputRecord:
    value: bytes
    key: bytes | None = None
    headers: dict[str, bytes] = field(default_factory=dict)


def parse_header(text: str) -> tuple[str, bytes]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise UsageError(f"header {text!r}: write it as name=value")
    return name, value.encode()


def read_records(stream: IO[bytes], fmt: str, key: bytes | None, headers: Mapping[str, bytes]) -> Iterator[InputRecord]:
    """Records from ``stream``: one per line, one per JSON line, or the whole input as one record."""
    if fmt == "raw":
        yield InputRecord(stream.read(), key, dict(headers))
        return
    for number, line in enumerate(stream, 1):
        line = line.rstrip(b"\r\n")
        if fmt == "lines":
            yield InputRecord(line, key, dict(headers))
            continue
        if not line.strip():
            continue
        yield _json_record(line, number, key, headers)


def _json_record(line: bytes, number: int, key: bytes | None, headers: Mapping[str, bytes]) -> InputRecord:
    try:
        item = json.loads(line)
    except ValueError as exc:
        raise UsageError(f"line {number}: not JSON ({exc})") from None
    if not isinstance(item, dict) or "value" not in item:
        raise UsageError(f'line {number}: expected an object with "value" (and optional "key", "headers")')
    merged = dict(headers)
    extra = item.get("headers") or {}
    if not isinstance(extra, dict):
        raise UsageError(f'line {number}: "headers" must be an object')
    merged.update({str(k): _as_bytes(v) for k, v in extra.items()})
    record_key = _as_bytes(item["key"]) if item.get("key") is not None else key
    return InputRecord(_as_bytes(item["value"]), record_key, merged)


def _as_bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value, separators=(",", ":")).encode()


class Template:
    """``str.format`` over a message's fields; bytes are shown as UTF-8 (or base64 when they are not)."""

    def __init__(self, text: str) -> None:
        self.text = text.encode().decode("unicode_escape")
        for _, name, _, _ in string.Formatter().parse(self.text):
            if name is not None and name.split(".")[0].split("[")[0] not in TEMPLATE_FIELDS:
                raise UsageError(f"unknown field {{{name}}} in --format; use {', '.join(TEMPLATE_FIELDS)}")

    def render(self, row: Row) -> str:
        return self.text.format(
            topic=row.topic,
            partition=row.partition,
            offset=row.offset,
            key=_show(row.key),
            value=_show(row.value),
            headers=json.dumps({k: _show(v) for k, v in row.headers.items()}, ensure_ascii=False),
            timestamp=row.timestamp,
        )


def _show(data: bytes | None) -> str:
    if data is None:
        return ""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode()
