from __future__ import annotations

import pytest

from mqwire.common.errors import ConfigurationError
from mqwire.common.urls import parse_service_url

SCHEMES = {"kafka": 9092, "kafka+ssl": 9093}


def test_multiple_hosts_and_defaults() -> None:
    url = parse_service_url("kafka://a:1,b,[::1]:3?client_id=x", schemes=SCHEMES)
    assert url.addresses == (("a", 1), ("b", 9092), ("::1", 3))
    assert url.params == {"client_id": "x"}
    assert not url.tls
    assert parse_service_url("kafka+ssl://h", schemes=SCHEMES).tls


@pytest.mark.parametrize("bad", ["http://a:1", "kafka://", "kafka://a:0", "kafka://a:x", "a:1"])
def test_bad_urls(bad: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_service_url(bad, schemes=SCHEMES)
