"""Topic lookup and partitioned-topic metadata over the binary protocol.

A lookup asks the service URL which broker serves a topic. The answer is either that broker (Connect) or
another broker to ask (Redirect, with ``authoritative`` to repeat); redirects are followed up to a limit.
When the answer says ``proxy_through_service_url`` the client keeps connecting to the service URL (a
proxy) and names the broker in CONNECT, so the connection is keyed by both addresses.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mqwire.common.errors import ProtocolError
from mqwire.common.transport import Address
from mqwire.common.urls import parse_service_url
from pulsarwire import errors
from pulsarwire.connection import PulsarConnection
from pulsarwire.errors import LookupFailedError, TooManyRedirectsError
from pulsarwire.protocol import commands
from pulsarwire.protocol.pulsar_api_pb2 import CommandLookupTopicResponse, CommandPartitionedTopicMetadataResponse

SCHEMES = {"pulsar": 6650, "pulsar+ssl": 6651}


@dataclass(frozen=True)
class BrokerAddress:
    """Where to reach the broker that serves a topic.

    ``logical`` is the broker's own ``host:port``; ``physical`` is where the TCP connection goes, which
    differs only when talking through a proxy (the service URL).
    """

    logical: str
    physical: Address

    @property
    def proxied(self) -> bool:
        return _host_port(self.physical) != self.logical


def _host_port(address: Address) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def broker_address(url: str) -> Address:
    """The address in a broker URL from a lookup answer (``pulsar://host:port``)."""
    try:
        return parse_service_url(url, schemes=SCHEMES).addresses[0]
    except ValueError as exc:
        raise ProtocolError(f"lookup answered an unusable broker URL {url!r}: {exc}") from None


GetConnection = Callable[[BrokerAddress], Awaitable[PulsarConnection]]


class Lookup:
    """Lookups and partition counts, asked of the service URL through ``get_connection``."""

    def __init__(
        self,
        get_connection: GetConnection,
        service: Callable[[], BrokerAddress],
        *,
        tls: bool,
        timeout: float,
        max_redirects: int = 20,
        listener_name: str | None = None,
    ) -> None:
        self._get_connection = get_connection
        self._service = service
        self._tls = tls
        self._timeout = timeout
        self._max_redirects = max_redirects
        self._listener_name = listener_name

    async def partitions(self, topic: str) -> int:
        """The partition count of ``topic``; 0 for a topic without partitions."""
        connection = await self._get_connection(self._service())
        request_id = connection.next_request_id()
        frame = await connection.request(commands.partitioned_metadata(topic, request_id), request_id, self._timeout)
        response = frame.command.partitionMetadataResponse
        if not frame.command.HasField("partitionMetadataResponse"):
            raise ProtocolError(f"PARTITIONED_METADATA for {topic} answered by {frame.command.type}")
        if response.response == CommandPartitionedTopicMetadataResponse.Failed:
            raise errors.error_for(response.error, response.message or f"partition metadata of {topic} failed")
        return int(response.partitions)

    async def topics_of_namespace(self, namespace: str, mode: int) -> list[str]:
        """The topics of ``tenant/namespace`` (partitions named one by one) in ``mode`` (persistent, ...)."""
        connection = await self._get_connection(self._service())
        request_id = connection.next_request_id()
        frame = await connection.request(
            commands.get_topics_of_namespace(namespace, request_id, mode=mode), request_id, self._timeout
        )
        if not frame.command.HasField("getTopicsOfNamespaceResponse"):
            raise ProtocolError(f"GET_TOPICS_OF_NAMESPACE for {namespace} answered by {frame.command.type}")
        return list(frame.command.getTopicsOfNamespaceResponse.topics)

    async def find_broker(self, topic: str) -> BrokerAddress:
        """The broker that serves ``topic``, following redirects."""
        service = self._service()
        target = service
        authoritative = False
        for _ in range(self._max_redirects + 1):
            connection = await self._get_connection(target)
            request_id = connection.next_request_id()
            command = commands.lookup(
                topic, request_id, authoritative=authoritative, listener_name=self._listener_name
            )
            frame = await connection.request(command, request_id, self._timeout)
            if not frame.command.HasField("lookupTopicResponse"):
                raise ProtocolError(f"LOOKUP for {topic} answered by {frame.command.type}")
            response = frame.command.lookupTopicResponse
            if response.response == CommandLookupTopicResponse.Failed:
                raise errors.error_for(response.error, response.message or f"lookup of {topic} failed")
            url = response.brokerServiceUrlTls if self._tls else response.brokerServiceUrl
            if not url:
                raise LookupFailedError(f"lookup of {topic} named no {'TLS ' if self._tls else ''}broker URL")
            logical = _host_port(broker_address(url))
            through_proxy = response.proxy_through_service_url
            physical = service.physical if through_proxy else broker_address(url)
            if response.response == CommandLookupTopicResponse.Connect:
                return BrokerAddress(logical, physical)
            if response.response != CommandLookupTopicResponse.Redirect:
                raise LookupFailedError(f"lookup of {topic} answered type {response.response}")
            authoritative = response.authoritative
            # Behind a proxy the next question goes to the proxy again, which forwards it.
            target = service if through_proxy else BrokerAddress(logical, physical)
        raise TooManyRedirectsError(f"lookup of {topic} redirected more than {self._max_redirects} times")
