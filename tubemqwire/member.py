"""Who a producer or consumer is to the master, and how it reaches it: what every membership needs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from tubemqwire.auth import Credentials


@dataclass(frozen=True, slots=True)
class Member:
    """A producer's or consumer's identity and the session's settings its registration uses.

    ``topics`` are sorted and without duplicates; ``filters`` maps a topic to its sorted message types
    (consumers only, as ``group``)."""

    client_id: str
    host: str
    topics: tuple[str, ...]
    credentials: Credentials
    interval: float
    request_timeout: float
    default_broker_port: int
    group: str = ""
    filters: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        *,
        client_id: str,
        host: str,
        topics: Iterable[str],
        credentials: Credentials,
        interval: float,
        request_timeout: float,
        default_broker_port: int,
        group: str = "",
        filters: Mapping[str, Iterable[str]] | None = None,
    ) -> Member:
        """A member with ``topics`` and each filter's types sorted and without duplicates."""
        return cls(
            client_id=client_id,
            host=host,
            topics=tuple(sorted(set(topics))),
            credentials=credentials,
            interval=interval,
            request_timeout=request_timeout,
            default_broker_port=default_broker_port,
            group=group,
            filters={topic: tuple(sorted(types)) for topic, types in (filters or {}).items()},
        )
