"""Which APIs are declared, at which versions, and version negotiation with a broker."""

from __future__ import annotations

from kafkawire.protocol.messages import APIS
from kafkawire.protocol.schema import Request, Response
from mqwire.common.errors import UnsupportedVersionError

_REQUESTS: dict[int, type[Request]] = {request.API_KEY: request for request, _ in APIS}
_RESPONSES: dict[int, type[Response]] = {response.API_KEY: response for _, response in APIS}

# API key -> Kafka's name of the API ("Metadata", "ApiVersions", ...).
API_KEYS: dict[int, str] = {
    request.API_KEY: request.__name__.removesuffix("Request") for request, _ in sorted(APIS, key=lambda a: a[0].API_KEY)
}


def _unknown(api_key: int) -> UnsupportedVersionError:
    return UnsupportedVersionError(f"API key {api_key} is not declared by this client")


def request_type(api_key: int) -> type[Request]:
    try:
        return _REQUESTS[api_key]
    except KeyError:
        raise _unknown(api_key) from None


def response_type(api_key: int) -> type[Response]:
    try:
        return _RESPONSES[api_key]
    except KeyError:
        raise _unknown(api_key) from None


def supported_versions(api_key: int) -> tuple[int, int]:
    """The (lowest, highest) version of ``api_key`` that this client can encode and decode."""
    request = request_type(api_key)
    return request.MIN_VERSION, request.MAX_VERSION


def negotiate(api_key: int, broker_min: int, broker_max: int) -> int:
    """The highest version both sides support; UnsupportedVersionError naming both ranges when none."""
    ours_min, ours_max = supported_versions(api_key)
    version = min(ours_max, broker_max)
    if version < max(ours_min, broker_min):
        raise UnsupportedVersionError(
            f"{API_KEYS[api_key]} (key {api_key}): this client supports versions {ours_min}-{ours_max}, "
            f"the broker {broker_min}-{broker_max}"
        )
    return version
