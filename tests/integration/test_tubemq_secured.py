"""A TubeMQ master that requires signed consumer registrations, and a broker that checks the visit tokens
the master hands out: signed consumers (balanced by the master or by the client) consume, producers get
through the visit-token check, and unsigned consumers are refused at once with a typed error. The same
master and broker also listen with TLS: a round trip over TLS with the certificate checked, and a
certificate the client does not trust refused.

The master checks the user name, that a signature is there and that its timestamp is fresh; it has no
password store, so a wrong password cannot be told from a right one by this server. Produce
authentication cannot be switched on usefully: the broker then demands an authorized token that the stock
master never issues (see ``brokers.tubemq.require_authentication``).
"""

from __future__ import annotations

import asyncio
import secrets
import ssl
import time

import pytest

import tubemqwire
from tests.integration.crash import OwnBroker
from tests.listening import is_loopback, listening
from tests.secret_scan import remember_secret

pytestmark = pytest.mark.integration

TOPIC = "signed"
OPTIONS = {"heartbeat_interval_ms": 1000, "request_timeout_ms": 10_000}
CREDENTIALS = {"username": "mqwire", "password": str(remember_secret("tube-" + secrets.token_hex(8)))}


async def test_signed_clients_produce_and_consume(secured_tubemq: OwnBroker) -> None:
    # The topic also holds what the module's other tests (and this test on the other event loop) sent.
    mark = b"signed-%s-" % secrets.token_hex(3).encode()
    values = [mark + b"%d" % i for i in range(40)]
    async with tubemqwire.connect(secured_tubemq.url, **OPTIONS, **CREDENTIALS) as client:
        async with client.producer(TOPIC) as producer:
            for value in values:
                await producer.send(value, headers={"who": "signed"}, msg_type="s")
        got: list[tubemqwire.Message] = []
        async with client.consumer(TOPIC, group=f"signed_{secrets.token_hex(3)}", start="earliest") as consumer:
            async with asyncio.timeout(90):
                while len(got) < len(values):
                    message = await consumer.getone()
                    await consumer.ack(message)
                    if message.value.startswith(mark):
                        got.append(message)
        # The client-balanced consumer registers with the V2 methods: signed the same way.
        async with client.client_balance_consumer(
            TOPIC, group=f"signed_cb_{secrets.token_hex(3)}", start="earliest"
        ) as chooser:
            keys = await chooser.partition_metadata()
            for key in keys:
                await chooser.connect_partition(key, 0)
            again: list[bytes] = []
            async with asyncio.timeout(90):
                while len(again) < len(values):
                    message = await chooser.getone()
                    await chooser.ack(message)
                    if message.value.startswith(mark):
                        again.append(message.value)
    assert sorted(m.value for m in got) == sorted(values)
    assert all(m.headers == {"who": b"signed"} and m.msg_type == "s" for m in got)
    assert sorted(again) == sorted(values)


async def test_unsigned_consumer_is_refused_at_once(secured_tubemq: OwnBroker) -> None:
    started = time.monotonic()
    async with tubemqwire.connect(secured_tubemq.url, **OPTIONS) as client:
        with pytest.raises(tubemqwire.CertificateFailureError):
            async with client.consumer(TOPIC, group=f"unsigned_{secrets.token_hex(3)}"):
                pytest.fail("an unsigned consumer was registered")
        with pytest.raises(tubemqwire.CertificateFailureError):
            async with client.client_balance_consumer(TOPIC, group=f"unsigned_cb_{secrets.token_hex(3)}"):
                pytest.fail("an unsigned client-balanced consumer was registered")
    # Each refusal is one answer from the master (well under a second); the bound is liveness only.
    assert time.monotonic() - started < 20, "a refusal no retry can fix was retried"


async def test_round_trip_over_tls_with_the_certificate_checked(secured_tubemq: OwnBroker) -> None:
    tls_url, ca_file = secured_tubemq.info["tls_url"], secured_tubemq.info["ssl_cafile"]
    assert tls_url and ca_file, "the broker was not started with TLS"
    context = ssl.create_default_context(cafile=ca_file)  # checks the chain and the host name
    # The servers require a client certificate (see brokers.tubemq.enable_tls).
    context.load_cert_chain(secured_tubemq.info["ssl_certfile"], secured_tubemq.info["ssl_keyfile"])
    values = {b"tls-%d" % i for i in range(30)}
    async with tubemqwire.connect(tls_url, ssl_context=context, **OPTIONS, **CREDENTIALS) as client:
        async with client.producer(TOPIC) as producer:
            for value in sorted(values):
                await producer.send(value)
        got: set[bytes] = set()
        group = f"tls_{secrets.token_hex(3)}"
        async with client.consumer(TOPIC, group=group, start="earliest") as consumer, asyncio.timeout(90):
            while not values <= got:
                message = await consumer.getone()
                got.add(message.value)  # the topic also holds the other tests' messages
                await consumer.ack(message)


def test_every_listener_including_tls_is_on_loopback_only(secured_tubemq: OwnBroker) -> None:
    """The TLS ports too: the servers bind them to the wildcard address, the launcher's shim to loopback."""
    sockets = listening(secured_tubemq.pids())
    tls_port = int(secured_tubemq.info["tls_url"].rsplit(":", 1)[1])
    assert tls_port in {port for _, port in sockets}, f"the master's TLS port {tls_port} is not listening: {sockets}"
    exposed = [(address, port) for address, port in sockets if not is_loopback(address)]
    assert not exposed, f"listening beyond loopback: {exposed}"


async def test_an_untrusted_certificate_is_refused(secured_tubemq: OwnBroker) -> None:
    started = time.monotonic()
    # The system's trust store does not hold the broker's self-signed certificate.
    with pytest.raises(tubemqwire.MqwireError) as caught:
        async with (
            tubemqwire.connect(secured_tubemq.info["tls_url"], **OPTIONS, **CREDENTIALS) as client,
            client.producer(TOPIC),
        ):
            pytest.fail("a connection to an untrusted server was made")
    assert "certificate" in str(caught.value).lower() or isinstance(caught.value.__cause__, ssl.SSLError)
    # The handshake fails at once (well under a second); the bound is liveness only.
    assert time.monotonic() - started < 30
