"""Reader and writer options in the style of Spark's own Kafka source."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from mqwire.common.errors import ConfigurationError
from mqwire.connect_options import ConnectOptions, prefixed
from mqwire.connect_options import kafka_url as _secured_kafka_url

__all__ = ["ConnectOptions"]


def get(options: Mapping[str, str], name: str) -> str | None:
    """Option ``name``; Spark hands option names over lower-cased, so the match ignores case."""
    wanted = name.lower()
    for key, value in options.items():
        if key.lower() == wanted:
            return value
    return None


def kafka_url(options: Mapping[str, str]) -> str:
    """The connect() URL: ``url`` or ``kafka.bootstrap.servers``, with TLS when ``kafka.security.protocol``
    is SSL or SASL_SSL (a ``kafka+ssl://`` url with PLAINTEXT or SASL_PLAINTEXT is an error naming both)."""
    url = get(options, "url")
    if not url:
        servers = get(options, "kafka.bootstrap.servers")
        if not servers:
            raise ConfigurationError("option url (or kafka.bootstrap.servers) is required")
        url = f"kafka://{servers}"
    return _secured_kafka_url(url, prefixed(options, "kafka."), "kafka.")


def pattern(options: Mapping[str, str]) -> re.Pattern[str] | None:
    """The ``subscribePattern`` regular expression (matched against whole topic names), or None; exactly one
    of ``subscribe`` and ``subscribePattern`` is required."""
    raw = get(options, "subscribePattern")
    if raw is None:
        if not get(options, "subscribe"):
            raise ValueError("option subscribe (or subscribePattern) is required")
        return None
    if get(options, "subscribe"):
        raise ValueError("options subscribe and subscribePattern exclude each other: give one")
    try:
        return re.compile(raw)
    except re.error as exc:
        raise ValueError(f"option subscribePattern is not a regular expression: {exc}") from exc


def matching(found: list[str], wanted: re.Pattern[str]) -> list[str]:
    """The topic names of ``found`` that ``wanted`` matches whole, sorted."""
    return sorted(name for name in found if wanted.fullmatch(name))


def topics(options: Mapping[str, str]) -> list[str]:
    """The topics named by ``subscribe`` (comma separated)."""
    raw = get(options, "subscribe")
    if not raw:
        if get(options, "subscribePattern"):
            raise ValueError("option subscribePattern is not supported by this source: name topics with subscribe")
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
