"""The first exchange with a Kafka cluster: ApiVersions, then Metadata. Used by the demo and the tests."""

from __future__ import annotations

from typing import Any

from kafkawire.connection import KafkaConnection
from kafkawire.protocol.messages import MetadataRequest
from mqwire.common.urls import parse_service_url

SCHEMES = {"kafka": 9092, "kafka+ssl": 9093}
METADATA_KEY = 3


async def kafka_handshake(url: str, *, timeout: float = 10.0) -> dict[str, Any]:
    """Connect to the first bootstrap address and describe what the broker said."""
    address = parse_service_url(url, schemes=SCHEMES).addresses[0]
    connection = await KafkaConnection.open(address, connect_timeout=timeout, request_timeout=timeout)
    try:
        metadata = await connection.request(MetadataRequest(topics=None))
        return {
            "api_versions_version": connection.api_versions_version,
            "apis_offered": len(connection.broker_versions),
            "metadata_version": connection.version_for(METADATA_KEY),
            # Cluster-wide levels such as "transaction.version" (2: KIP-890 transactions).
            "finalized_features": dict(connection.finalized_features),
            "cluster_id": metadata.cluster_id,
            "controller_id": metadata.controller_id,
            "brokers": [f"{b.node_id}@{b.host}:{b.port}" for b in metadata.brokers],
            "topics": sorted(t.name for t in metadata.topics if t.name),
        }
    finally:
        connection.close()
        await connection.wait_closed()
