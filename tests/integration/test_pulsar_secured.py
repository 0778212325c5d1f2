"""Token authentication and TLS against a standalone of its own, started with both (certificates made here)."""

from __future__ import annotations

import asyncio
import base64
import datetime
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import secrets
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import pulsarwire
from mqwire.common.errors import AuthenticationError, ConnectError, ConnectionLostError
from mqwire.testing.pulsar import SecuredPulsar, Security, start_secured
from tests.integration.faultproxy import FaultProxy
from tests.secret_scan import remember_secret, secret_input

pytestmark = pytest.mark.integration

SUPERUSER = "admin"
MTLS_ROLE = "mtls-user"


def token_for(secret: bytes, subject: str, expires_in: float | None = None) -> str:
    """An HS256 JSON web token with ``subject``, as ``pulsar tokens create`` makes them."""

    def part(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

    claims: dict[str, object] = {"sub": subject}
    if expires_in is not None:
        claims["exp"] = int(time.time() + expires_in)
    signed = f"{part(json.dumps({'alg': 'HS256'}).encode())}.{part(json.dumps(claims).encode())}"
    signature = hmac.new(secret, signed.encode(), hashlib.sha256).digest()
    return f"{signed}.{part(signature)}"


def client_token(secret: bytes, subject: str, expires_in: float | None = None) -> str:
    """:func:`token_for`, for a client: registered with the run's secret scan."""
    return str(remember_secret(token_for(secret, subject, expires_in)))


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_certificates(folder: Path, *, alt_ip: str = "127.0.0.1") -> tuple[Path, Path, Path]:
    """A CA, and a server certificate for ``alt_ip`` signed by it: (ca.pem, server.pem, server-key.pem).

    A client certificate for the role ``mtls-user`` signed by the same CA goes to client.pem and
    client-key.pem."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("mqwire test CA"))
        .issuer_name(_name("mqwire test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    server = (
        x509.CertificateBuilder()
        .subject_name(_name("pulsar broker"))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(alt_ip))]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    ca_file, cert_file, key_file = folder / "ca.pem", folder / "server.pem", folder / "server-key.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_file.write_bytes(server.public_bytes(serialization.Encoding.PEM))
    # PKCS#8: the form the broker's TLS stack reads.
    key_file.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ))
    client_key = ec.generate_private_key(ec.SECP256R1())
    client = (
        x509.CertificateBuilder()
        .subject_name(_name(MTLS_ROLE))
        .issuer_name(ca.subject)
        .public_key(client_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    (folder / "client.pem").write_bytes(client.public_bytes(serialization.Encoding.PEM))
    (folder / "client-key.pem").write_bytes(client_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ))
    return ca_file, cert_file, key_file


class Secured:
    def __init__(self, broker: SecuredPulsar, secret: bytes, ca_file: Path, tmp: Path) -> None:
        self.broker = broker
        self.secret = secret
        self.ca_file = str(ca_file)
        self.tmp = tmp

    def token(self, subject: str = "app") -> str:
        """A client's token: registered with the secret scan (the broker's own token is the server's business,
        and Pulsar prints it with its configuration)."""
        return client_token(self.secret, subject)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    tmp = tmp_path_factory.mktemp("secured-pulsar")
    ca_file, cert_file, key_file = make_certificates(tmp / "tls")
    secret = os.urandom(32)
    security = Security(
        token_secret=secret,
        superuser_role=SUPERUSER,
        superuser_token=token_for(secret, SUPERUSER),
        cert_file=str(cert_file),
        key_file=str(key_file),
        ca_file=str(ca_file),
        tls_authentication=True,
    )
    broker = start_secured(tmp / "broker", security)
    try:
        yield Secured(broker, secret, ca_file, tmp)
    finally:
        broker.stop()


async def round_trip(client: pulsarwire.Client, topic: str) -> bytes:
    async with (
        client.consumer(topic, group="g", start="earliest") as consumer,
        client.producer(topic) as producer,
    ):
        await producer.send(b"secret payload", key=b"k")
        message = await consumer.receive(timeout=20)
        await consumer.ack(message)
        return message.value


async def test_token_as_a_string_and_as_an_async_callback(secured: Secured) -> None:
    url = secured.broker.url
    async with pulsarwire.connect(url, auth_token=secured.token()) as client:
        assert await round_trip(client, "token-string") == b"secret payload"
    asked = []

    async def fresh_token() -> str:
        asked.append(1)
        return secured.token("callback-user")

    async with pulsarwire.connect(url, auth_token=fresh_token) as client:
        assert await round_trip(client, "token-callback") == b"secret payload"
    assert asked  # the callback gave the credentials of each connection


async def test_an_expiring_token_is_refreshed_through_the_callback_without_reconnecting(secured: Secured) -> None:
    issued = []

    async def short_lived_token() -> str:
        issued.append(time.monotonic())
        return client_token(secured.secret, "app", expires_in=2)

    async with (
        pulsarwire.connect(secured.broker.url, auth_token=short_lived_token) as client,
        client.producer("persistent://public/default/refreshed", batching_enabled=False) as producer,
    ):
        first = len(issued)
        # Sending for longer than a token lives: the broker challenges and the callback answers.
        async with asyncio.timeout(30):
            while len(issued) < first + 2:
                await producer.send(b"still here")
                await asyncio.sleep(0.25)
        await producer.send(b"after the refreshes")
        assert [p._epoch for p in producer._producers] == [1]  # created once: the connection never dropped


@pytest.mark.parametrize("token", [None, "not-a-token", "signed-by-another-key"])
async def test_missing_or_bad_token_is_refused(secured: Secured, token: str | None) -> None:
    if token == "signed-by-another-key":
        token = client_token(os.urandom(32), SUPERUSER)
    client = pulsarwire.Client(secured.broker.url, auth_token=token, operation_timeout=5)
    with pytest.raises(AuthenticationError):
        await client.start()
    await client.close()


async def test_tls_with_the_ca_and_hostname_check(secured: Secured) -> None:
    options = {"auth_token": secured.token(), "tls_ca_file": secured.ca_file}
    async with pulsarwire.connect(secured.broker.tls_url, **options) as client:
        assert await round_trip(client, "over-tls") == b"secret payload"


async def test_tls_refuses_an_unknown_ca_and_a_wrong_host_name(secured: Secured) -> None:
    other_ca, _, _ = make_certificates(secured.tmp / "other-ca")
    client = pulsarwire.Client(secured.broker.tls_url, auth_token=secured.token(), tls_ca_file=str(other_ca),
                               operation_timeout=5)
    with pytest.raises(ConnectError, match=r"(?i)certificate_verify_failed"):
        await client.start()
    await client.close()
    # The certificate names 127.0.0.1 only; "localhost" is another name.
    port = secured.broker.tls_url.rsplit(":", 1)[1]
    named = f"pulsar+ssl://localhost:{port}"
    client = pulsarwire.Client(named, auth_token=secured.token(), tls_ca_file=secured.ca_file, operation_timeout=5)
    with pytest.raises(ConnectError, match=r"(?i)certificate_verify_failed"):
        await client.start()
    await client.close()
    # Without the hostname check the same name is accepted (the CA still is).
    async with pulsarwire.connect(named, auth_token=secured.token(), tls_ca_file=secured.ca_file,
                                  tls_validate_hostname=False) as client:
        await client.start()


async def test_pulsar_client_and_ours_over_tls_with_tokens(secured: Secured) -> None:
    topic = "persistent://public/default/tls-interop"
    theirs = pulsar.Client(
        secured.broker.tls_url,
        authentication=pulsar.AuthenticationToken(secured.token("theirs")),
        tls_trust_certs_file_path=secured.ca_file,
    )
    try:
        their_consumer = theirs.subscribe(topic, "theirs", initial_position=pulsar.InitialPosition.Earliest)
        their_producer = theirs.create_producer(topic)
        async with (
            pulsarwire.connect(secured.broker.tls_url, auth_token=secured.token(), tls_ca_file=secured.ca_file) as c,
            c.consumer(topic, group="ours", start="earliest") as ours,
            c.producer(topic) as producer,
        ):
            await producer.send(b"from ours", headers={"p": b"1"})
            their_producer.send(b"from theirs", properties={"p": "2"})
            got = {(await ours.receive(timeout=20)).value for _ in range(2)}
            assert got == {b"from ours", b"from theirs"}
            seen = set()
            for _ in range(2):
                message = their_consumer.receive(timeout_millis=20_000)
                seen.add((message.data(), message.properties()["p"]))
                their_consumer.acknowledge(message)
            assert seen == {(b"from ours", "1"), (b"from theirs", "2")}
    finally:
        theirs.close()


async def test_no_token_in_logs_reprs_or_errors(secured: Secured, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    token = secured.token()
    async with pulsarwire.connect(secured.broker.url, auth_token=token) as client:
        assert await round_trip(client, "no-secret-in-logs") == b"secret payload"
        shown = [repr(client), str(client)]
    bad = client_token(os.urandom(32), SUPERUSER)
    refused = pulsarwire.Client(secured.broker.url, auth_token=bad, operation_timeout=5)
    with pytest.raises(AuthenticationError) as caught:
        await refused.start()
    shown += [repr(refused), str(caught.value), repr(caught.value)]
    await refused.close()
    logged = "\n".join(f"{record.getMessage()} {record.args!r}" for record in caplog.records)
    assert logged, "the run logged nothing at DEBUG: the check would be empty"
    for secret in (token, bad):
        # The signature part is what would let someone act as the user.
        signature = secret.rsplit(".", 1)[-1]
        assert signature not in logged
        assert not any(signature in text for text in shown)


async def test_a_token_callback_returning_bytes_is_refused_without_showing_the_token(
    secured: Secured, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    token = secured.token()

    async def as_bytes() -> Any:
        return token.encode()

    client = pulsarwire.Client(secured.broker.url, auth_token=as_bytes, operation_timeout=5)
    with pytest.raises(AuthenticationError, match="bytes") as caught:
        await client.start()
    await client.close()
    shown = [repr(client), str(caught.value), repr(caught.value)]
    logged = "\n".join(f"{record.getMessage()} {record.args!r} {record.exc_text or ''}" for record in caplog.records)
    signature = token.rsplit(".", 1)[-1]
    assert signature not in logged
    assert not any(signature in text for text in shown)


async def test_a_refused_token_fails_fast_without_a_reconnect_storm(secured: Secured) -> None:
    host, port = secured.broker.url.removeprefix("pulsar://").rsplit(":", 1)
    bad = client_token(os.urandom(32), SUPERUSER)
    async with FaultProxy(host, int(port)) as proxy:
        started = time.monotonic()
        client = pulsarwire.Client(f"pulsar://127.0.0.1:{proxy.port}", auth_token=bad, operation_timeout=120)
        with pytest.raises(AuthenticationError):
            await client.start()
        await client.close()
        elapsed = time.monotonic() - started
    # Refused once, reported at once: no retry loop until the operation timeout (120 s; the bound is
    # liveness only, far under it), no burst of connections.
    assert elapsed < 30, f"the refusal took {elapsed:.1f} s to surface"
    assert proxy.accepted <= 2, f"{proxy.accepted} connections for one refused token"


# ------------------------------------------------------------------------ OAuth2 and TLS authentication
class TokenEndpoint:
    """A local OAuth2 provider: OpenID metadata, and client-credentials grants answered with JWTs signed
    with the broker's key, living ``lifetime`` seconds."""

    def __init__(self, secret: bytes, client_id: str, client_secret: str, lifetime: float) -> None:
        self.secret, self.client_id, self.client_secret, self.lifetime = secret, client_id, client_secret, lifetime
        self.grants: list[dict[str, str]] = []
        self.issued: list[tuple[float, float]] = []  # (when, expiry) in time.time()
        self.server: asyncio.Server | None = None

    @property
    def issuer_url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/issuer"

    async def __aenter__(self) -> TokenEndpoint:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        method, path, _ = (await reader.readline()).decode().split(" ", 2)
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        body = await reader.readexactly(length)
        status, answer = self._answer(method, path, body)
        data = json.dumps(answer).encode()
        writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + data)
        await writer.drain()
        writer.close()

    def _answer(self, method: str, path: str, body: bytes) -> tuple[int, dict[str, object]]:
        if method == "GET" and path == "/issuer/.well-known/openid-configuration":
            return 200, {"issuer": self.issuer_url, "token_endpoint": self.issuer_url + "/token"}
        if method != "POST" or path != "/issuer/token":
            return 404, {"error": "not_found"}
        form = dict(urllib.parse.parse_qsl(body.decode()))
        self.grants.append(form)
        if form.get("grant_type") != "client_credentials" or (form.get("client_id"), form.get("client_secret")) != (
            self.client_id, self.client_secret
        ):
            return 401, {"error": "invalid_client", "error_description": "unknown client"}
        now = time.time()
        self.issued.append((now, now + self.lifetime))
        token = client_token(self.secret, form["client_id"], expires_in=self.lifetime)
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": self.lifetime}


# Its time is the broker's timers; the same client paths run on uvloop in the quicker tests.
@pytest.mark.asyncio_loop_only
async def test_oauth2_client_credentials_refreshed_before_expiry(secured: Secured) -> None:
    credentials = secret_input(secured.tmp / "oauth2-credentials.json")
    client_secret = str(remember_secret("oauth-" + secrets.token_hex(8)))
    credentials.write_text(json.dumps({"type": "client_credentials", "client_id": "svc-orders",
                                       "client_secret": client_secret, "issuer_url": "unused"}))
    async with TokenEndpoint(secured.secret, "svc-orders", client_secret, lifetime=3) as endpoint:
        oauth2 = pulsarwire.OAuth2ClientCredentials(
            endpoint.issuer_url, private_key=f"file://{credentials}", audience="urn:pulsar", scope="produce",
            early_token_refresh_percent=0.5, allow_insecure_http=True,
        )
        try:
            async with (
                pulsarwire.connect(secured.broker.url, auth_token=oauth2) as client,
                client.producer("persistent://public/default/oauth2", batching_enabled=False) as producer,
            ):
                # Sending for three token lifetimes: the broker challenges at each expiry and gets the new token.
                until = time.monotonic() + 9
                while time.monotonic() < until:
                    await producer.send(b"still here")
                    await asyncio.sleep(0.25)
                assert [p._epoch for p in producer._producers] == [1]  # the connection never dropped
                assert await round_trip(client, "oauth2-round-trip") == b"secret payload"
        finally:
            await oauth2.aclose()
    assert endpoint.grants[0] == {"grant_type": "client_credentials", "client_id": "svc-orders",
                                  "client_secret": client_secret, "audience": "urn:pulsar", "scope": "produce"}
    assert len(endpoint.issued) >= 4, endpoint.issued
    # Each token was fetched while the one before was still valid.
    for (_, expiry), (issued_at, _) in zip(endpoint.issued, endpoint.issued[1:], strict=False):
        assert issued_at < expiry, endpoint.issued


async def test_oauth2_refused_client_secret(secured: Secured) -> None:
    async with TokenEndpoint(secured.secret, "svc-orders", "s3cret", lifetime=60) as endpoint:
        oauth2 = pulsarwire.OAuth2ClientCredentials(endpoint.issuer_url, client_id="svc-orders",
                                                    client_secret="wrong", allow_insecure_http=True)
        client = pulsarwire.Client(secured.broker.url, auth_token=oauth2, operation_timeout=5)
        with pytest.raises(AuthenticationError, match="invalid_client") as caught:
            await client.start()
        await client.close()
    assert "wrong" not in str(caught.value)
    assert endpoint.issued == []


async def test_tls_authentication_by_client_certificate(secured: Secured) -> None:
    folder = Path(secured.ca_file).parent
    options: dict[str, Any] = {
        "tls_ca_file": secured.ca_file,
        "tls_cert_file": str(folder / "client.pem"),
        "tls_key_file": str(folder / "client-key.pem"),
    }
    async with pulsarwire.connect(secured.broker.tls_url, tls_authentication=True, **options) as client:
        assert await round_trip(client, "mtls") == b"secret payload"
    # The same certificate without naming the method: the broker has no credentials and refuses.
    client = pulsarwire.Client(secured.broker.tls_url, operation_timeout=5, **options)
    with pytest.raises(AuthenticationError):
        await client.start()
    await client.close()
    # A certificate from another CA is not trusted: the broker ends the TLS session with an alert (under TLS 1.3
    # the client learns it at its first read, the CONNECT).
    other = secured.tmp / "other-client-ca"
    make_certificates(other)
    client = pulsarwire.Client(secured.broker.tls_url, tls_authentication=True, operation_timeout=5,
                               tls_ca_file=secured.ca_file, tls_cert_file=str(other / "client.pem"),
                               tls_key_file=str(other / "client-key.pem"))
    with pytest.raises((ConnectError, ConnectionLostError), match=r"(?i)alert"):
        await client.start()
    await client.close()
