"""Each protocol package completes its first exchange with a real broker over `common`."""

from __future__ import annotations

import pytest

from kafkawire.handshake import kafka_handshake
from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker
from pulsarwire.handshake import pulsar_handshake
from tubemqwire.handshake import tubemq_handshake

pytestmark = pytest.mark.integration


async def test_kafka_api_versions_then_metadata(kafka_broker: KafkaBroker) -> None:
    result = await kafka_handshake(kafka_broker.url)
    # A 4.x broker offers ApiVersions v3+ (flexible request, yet a v0 response header).
    assert result["api_versions_version"] >= 3
    assert result["apis_offered"] > 20
    assert result["metadata_version"] >= 12
    assert result["cluster_id"]
    assert result["brokers"] == [f"{result['controller_id']}@{kafka_broker.host}:{kafka_broker.port}"]


async def test_pulsar_connect_then_ping(pulsar_broker: PulsarBroker) -> None:
    result = await pulsar_handshake(pulsar_broker.url)
    assert result["protocol_version"] >= 20
    assert result["server_version"].startswith("Pulsar Server")
    assert result["max_message_size"] == 5 * 1024 * 1024
    assert result["ping_round_trip_ms"] >= 0


async def test_tubemq_producer_register_with_master(tubemq_broker: TubeMQBroker) -> None:
    result = await tubemq_handshake(tubemq_broker.url, topic="handshake")
    assert result["success"], result
    assert result["err_code"] == 200
    assert result["closed"]


@pytest.mark.parametrize("line", ["kafka", "kafka3"])
async def test_kafka_negotiates_the_highest_common_version(line: str, request: pytest.FixtureRequest) -> None:
    from kafkawire.connection import KafkaConnection
    from kafkawire.protocol import supported_versions
    from mqwire.common.urls import parse_service_url

    broker: KafkaBroker = request.getfixturevalue(f"{line}_broker")
    address = parse_service_url(broker.url, schemes={"kafka": 9092}).addresses[0]
    connection = await KafkaConnection.open(address)
    try:
        for api_key in (0, 1, 3, 18):  # Produce, Fetch, Metadata, ApiVersions
            broker_min, broker_max = connection.broker_versions[api_key]
            ours_min, ours_max = supported_versions(api_key)
            assert connection.version_for(api_key) == min(broker_max, ours_max)
            assert connection.version_for(api_key) >= max(broker_min, ours_min)
        fetch_max = connection.broker_versions[1][1]
        # 3.9 stops at Fetch v17, 4.3 offers v18: the two lines really differ.
        assert fetch_max == (18 if line == "kafka" else 17)
    finally:
        connection.close()
