"""Pulsar secrets stay off plain HTTP and out of messages: OAuth2 over https:// only unless allowed, the admin
token not sent in clear to a TLS cluster, an ssl_context never dropped silently, a callback's token not echoed."""

from __future__ import annotations

import json
import ssl
from typing import Any

import pytest

import pulsarwire
from mqwire.common.errors import AuthenticationError, ConfigurationError
from mqwire.common.http import HttpEndpoint, Response

SECRET = "s3cr3t-client-secret"
TOKEN = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhcHAifQ.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"


@pytest.mark.parametrize("option", ["issuer_url", "token_endpoint"])
def test_oauth2_refuses_http_unless_allowed(option: str) -> None:
    given: dict[str, Any] = {"issuer_url": "https://idp.example", "client_id": "a", "client_secret": SECRET}
    given[option] = "http://idp.example/x"
    with pytest.raises(ConfigurationError, match=rf"{option}.*allow_insecure_http") as caught:
        pulsarwire.OAuth2ClientCredentials(**given)
    assert SECRET not in str(caught.value)
    assert pulsarwire.OAuth2ClientCredentials(**given, allow_insecure_http=True).allow_insecure_http


async def test_oauth2_refuses_an_http_token_endpoint_named_by_the_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, str, Any]] = []

    async def fake_request(endpoint: HttpEndpoint, method: str, path: str, **options: Any) -> Response:
        sent.append((method, f"{'https' if endpoint.tls else 'http'}://{endpoint.host}{path}", options.get("form")))
        metadata = {"issuer": "https://idp.example", "token_endpoint": "http://idp.example/token"}
        return Response(200, json.dumps(metadata).encode())

    monkeypatch.setattr("pulsarwire.oauth2.request", fake_request)
    oauth2 = pulsarwire.OAuth2ClientCredentials("https://idp.example", client_id="a", client_secret=SECRET)
    with pytest.raises(AuthenticationError, match=r"token_endpoint.*http://") as caught:
        await oauth2()
    assert SECRET not in str(caught.value)
    # The metadata was read over https; nothing, the secret least of all, went to the http:// endpoint.
    assert [(method, url) for method, url, _ in sent] == [
        ("GET", "https://idp.example/.well-known/openid-configuration")
    ]


def test_the_admin_token_is_not_sent_over_http_to_a_tls_cluster() -> None:
    tls = "pulsar+ssl://127.0.0.1:6651"
    with pytest.raises(ConfigurationError, match=r"admin_url.*admin_allow_insecure_http") as caught:
        pulsarwire.Client(tls, auth_token=TOKEN, admin_url="http://127.0.0.1:8080")
    assert TOKEN not in str(caught.value)
    client = pulsarwire.Client(tls, auth_token=TOKEN)
    with pytest.raises(ConfigurationError, match="admin_url"):
        client.admin(admin_url="http://127.0.0.1:8080")
    # Told so, or https, or a cluster without TLS, or no token: accepted.
    client.admin(admin_url="http://127.0.0.1:8080", admin_allow_insecure_http=True)
    client.admin(admin_url="https://127.0.0.1:8443")
    pulsarwire.Client(tls, auth_token=TOKEN, admin_url="http://127.0.0.1:8080", admin_allow_insecure_http=True)
    pulsarwire.Client("pulsar://127.0.0.1:6650", auth_token=TOKEN, admin_url="http://127.0.0.1:8080")
    pulsarwire.Client(tls, admin_url="http://127.0.0.1:8080")


def test_an_ssl_context_with_a_plain_url_is_an_error() -> None:
    with pytest.raises(ConfigurationError, match=r"ssl_context.*pulsar\+ssl://"):
        pulsarwire.Client("pulsar://127.0.0.1:6650", ssl_context=ssl.create_default_context())


@pytest.mark.parametrize("returned", [TOKEN.encode(), bytearray(TOKEN.encode()), [TOKEN], ""])
async def test_a_callback_returning_no_str_is_refused_without_the_token_in_the_message(returned: object) -> None:
    async def callback() -> Any:
        return returned

    client = pulsarwire.Client("pulsar://127.0.0.1:6650", auth_token=callback)
    with pytest.raises(AuthenticationError, match="non-empty str") as caught:
        await client._session.auth_token()
    assert "c2lnbmF0dXJl" not in str(caught.value) and "c2lnbmF0dXJl" not in repr(caught.value)
