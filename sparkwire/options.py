"""Reader and writer options in the style of Spark's own Kafka source."""

from __future__ import annotations

import json
from collections.abc import Mapping


def get(options: Mapping[str, str], name: str) -> str | None:
    """Option ``name``; Spark hands option names over lower-cased, so the match ignores case."""
    wanted = name.lower()
    for key, value in options.items():
        if key.lower() == wanted:
            return value
    return None


def kafka_url(options: Mapping[str, str]) -> str:
    """The connect() URL: ``url`` or ``kafka.bootstrap.servers``."""
    url = get(options, "url")
    if url:
        return url
    servers = get(options, "kafka.bootstrap.servers")
    if servers:
        return "kafka://" + servers
    raise ValueError("option url (or kafka.bootstrap.servers) is required")


def topics(options: Mapping[str, str]) -> list[str]:
    """The topics named by ``subscribe`` (comma separated)."""
    raw = get(options, "subscribe")
    if not raw:
        raise ValueError("option subscribe is required")
    names = [name.strip() for name in raw.split(",") if name.strip()]
    if not names:
        raise ValueError("option subscribe names no topic")
    return names


def offset_spec(options: Mapping[str, str], name: str, default: str) -> str | dict[str, dict[str, int]]:
    """``earliest``, ``latest`` or a JSON ``{"topic": {"partition": offset}}`` map."""
    raw = (get(options, name) or default).strip()
    if raw in ("earliest", "latest"):
        return raw
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"option {name} must be earliest, latest or JSON, got {raw!r}") from exc
    if not isinstance(parsed, dict):
        raise ValueError(f"option {name} JSON must be an object")
    return {str(t): {str(p): int(o) for p, o in parts.items()} for t, parts in parsed.items()}


def positive_int(options: Mapping[str, str], name: str) -> int | None:
    """An optional positive integer option."""
    raw = get(options, name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(f"option {name} must be an integer, got {raw!r}") from exc
    if value <= 0:
        raise ValueError(f"option {name} must be positive, got {value}")
    return value
