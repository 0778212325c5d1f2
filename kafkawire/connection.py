"""One connection to a Kafka broker: ApiVersions on connect, then requests at the negotiated versions."""

from __future__ import annotations

import logging
import ssl as _ssl
from typing import Any

from kafkawire import errors
from kafkawire.protocol import (
    API_KEYS,
    decode_response,
    encode_request_pieces,
    negotiate,
    response_correlation_id,
    supported_versions,
)
from kafkawire.protocol.messages import ApiVersionsRequest, SaslAuthenticateRequest, SaslHandshakeRequest
from kafkawire.sasl import SaslSettings, answer_challenge, mechanism_for
from mqwire.common.channel import Channel
from mqwire.common.errors import AuthenticationError, MqwireError, ProtocolError, UnsupportedVersionError
from mqwire.common.framing import LengthPrefixedSplitter
from mqwire.common.transport import Address
from mqwire.common.version import __version__

log = logging.getLogger(__name__)

API_VERSIONS_KEY = 18
UNSUPPORTED_VERSION = 35
# Responses can be large (fetch), but a claimed size beyond this is a broken or hostile peer.
DEFAULT_MAX_FRAME_SIZE = 256 * 1024 * 1024


class KafkaConnection:
    """Requests to one broker at the highest version both sides support."""

    def __init__(
        self, address: Address, channel: Channel[bytearray], client_id: str | None, request_timeout: float
    ) -> None:
        self.address = address
        self.channel = channel
        self.client_id = client_id
        self.request_timeout = request_timeout
        self.broker_versions: dict[int, tuple[int, int]] = {}
        self._chosen: dict[int, int] = {}
        self.api_versions_version = 0
        # The cluster-wide feature levels the broker reports as finalized (ApiVersions v3+), e.g.
        # "transaction.version"; empty from older brokers.
        self.finalized_features: dict[str, int] = {}

    @classmethod
    async def open(
        cls,
        address: Address,
        *,
        client_id: str | None = "mqwire",
        ssl: _ssl.SSLContext | None = None,
        connect_timeout: float = 10.0,
        request_timeout: float = 30.0,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        software_version: str = __version__,
        sasl: SaslSettings | None = None,
    ) -> KafkaConnection:
        channel: Channel[bytearray] = await Channel.open(
            address,
            splitter=LengthPrefixedSplitter(max_frame_size, min_frame_size=4),
            correlation_id_of=response_correlation_id,
            ssl=ssl,
            connect_timeout=connect_timeout,
            name=f"kafka {address[0]}:{address[1]}",
        )
        connection = cls(address, channel, client_id, request_timeout)
        try:
            await connection._negotiate(software_version)
            if sasl is not None:
                await connection._authenticate(sasl)
        except BaseException:
            channel.abort()
            raise
        return connection

    @property
    def closed(self) -> bool:
        return self.channel.closed

    def close(self, error: MqwireError | None = None) -> None:
        """Close after the bytes already written; pending requests fail with ``error`` (ClosedError by default)."""
        self.channel.close(error)

    async def wait_closed(self) -> None:
        await self.channel.wait_closed()

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered."""
        return self.channel.pending

    def offers(self, api_key: int) -> bool:
        return api_key in self.broker_versions

    def version_for(self, api_key: int, *, at_most: int | None = None) -> int:
        """The version used for ``api_key``: the highest one both we and the broker support.

        ``at_most`` caps it, e.g. below the versions that name topics by id when an id is not known.
        """
        if at_most is not None:
            broker_range = self.broker_versions.get(api_key)
            highest = self.version_for(api_key)
            if highest <= at_most:
                return highest
            if broker_range is None or at_most < max(broker_range[0], supported_versions(api_key)[0]):
                raise UnsupportedVersionError(
                    f"{API_KEYS.get(api_key, api_key)} (key {api_key}): no shared version at or below {at_most}"
                )
            return at_most
        version = self._chosen.get(api_key)
        if version is None:
            broker_range = self.broker_versions.get(api_key)
            if broker_range is None:
                ours = supported_versions(api_key)
                raise UnsupportedVersionError(
                    f"{API_KEYS.get(api_key, api_key)} (key {api_key}): the broker does not offer this API; "
                    f"we support versions {ours[0]}-{ours[1]}"
                )
            version = negotiate(api_key, *broker_range)
            self._chosen[api_key] = version
        return version

    async def request(self, body: Any, *, timeout: float | None = None, version: int | None = None) -> Any:
        """Send ``body`` and return the decoded response (broker error codes are left to the caller)."""
        api_key: int = body.API_KEY
        if version is None:
            version = self.version_for(api_key)
        reply = await self._exchange(body, version, timeout)
        try:
            return decode_response(api_key, version, reply)
        except ProtocolError as err:
            # A body we cannot read means the stream can no longer be trusted: drop this connection only.
            self.channel.abort(err)
            raise

    async def send(self, body: Any, *, version: int | None = None) -> None:
        """Send a request the broker does not answer (Produce with acks=0); returns once it is written."""
        if version is None:
            version = self.version_for(body.API_KEY)
        pieces = encode_request_pieces(
            body, version=version, correlation_id=self.channel.next_id(), client_id=self.client_id
        )
        error = self.channel.error
        if error is not None:
            raise error
        self.channel.send(pieces)
        await self.channel.drain()

    async def _exchange(self, body: Any, version: int, timeout: float | None) -> bytearray:
        correlation_id = self.channel.next_id()
        # In pieces: a Produce request's large record sets are written as they are, not copied into it.
        pieces = encode_request_pieces(body, version=version, correlation_id=correlation_id, client_id=self.client_id)
        return await self.channel.request(
            correlation_id, pieces, self.request_timeout if timeout is None else timeout
        )

    async def _negotiate(self, software_version: str) -> None:
        body = ApiVersionsRequest(client_software_name="mqwire", client_software_version=software_version)
        version = supported_versions(API_VERSIONS_KEY)[1]
        reply = await self._exchange(body, version, None)
        try:
            response = decode_response(API_VERSIONS_KEY, version, reply)
        except ProtocolError:
            response = None
        if response is None or response.error_code == UNSUPPORTED_VERSION:
            # A broker that does not know our version answers with a v0 body listing its own range.
            fallback = decode_response(API_VERSIONS_KEY, 0, reply)
            version = negotiate(API_VERSIONS_KEY, 0, _api_versions_max(fallback))
            response = await self.request(body, version=version)
        if response.error_code:
            raise errors.error_for(response.error_code, "ApiVersions failed")
        self.broker_versions = {key.api_key: (key.min_version, key.max_version) for key in response.api_keys}
        self.api_versions_version = version
        self.finalized_features = {f.name: f.max_version_level for f in response.finalized_features or ()}
        log.debug("%s: broker versions %s", self.channel.name, self.broker_versions)


    async def _authenticate(self, settings: SaslSettings) -> None:
        """SaslHandshake, then the mechanism's exchange in SaslAuthenticate requests (KIP-152)."""
        handshake = await self.request(SaslHandshakeRequest(mechanism=settings.mechanism), version=1)
        if handshake.error_code:
            offered = ", ".join(handshake.mechanisms) or "none"
            raise AuthenticationError(
                f"{self.channel.name}: SASL {settings.mechanism} is not enabled there (offered: {offered})"
            )
        mechanism = await mechanism_for(settings, host=self.address[0], timeout=self.request_timeout)
        reply = await self._sasl_round(settings, mechanism.first())
        answer = await answer_challenge(mechanism, reply)
        while answer is not None:
            reply = await self._sasl_round(settings, answer)
            answer = None if mechanism.said_last else await answer_challenge(mechanism, reply)
        mechanism.finish(reply)
        log.debug("%s: authenticated with SASL %s", self.channel.name, settings.mechanism)

    async def _sasl_round(self, settings: SaslSettings, message: bytes) -> bytes:
        response = await self.request(SaslAuthenticateRequest(auth_bytes=message))
        if response.error_code:
            reason = response.error_message or errors.error_for(response.error_code).__class__.__name__
            raise AuthenticationError(f"{self.channel.name}: SASL {settings.mechanism} refused: {reason}")
        auth_bytes: bytes = response.auth_bytes
        return auth_bytes


def _api_versions_max(response: Any) -> int:
    if response is not None:
        for key in response.api_keys:
            if key.api_key == API_VERSIONS_KEY:
                return int(key.max_version)
    return 0
