"""kafkawire with SASL GSSAPI against a real MIT KDC (Debian's krb5-kdc, a realm made for the run) and a
Kafka broker whose SASL_PLAINTEXT and SASL_SSL listeners take GSSAPI as kafka/localhost."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import kafkawire
from mqwire.testing.endpoints import KafkaBroker
from mqwire.testing.kdc import Kdc, available, kafka_gssapi_config, start_kdc
from mqwire.testing.launcher import Launcher
from tests.integration.faultproxy import FaultProxy

# The broker's timers play no part here, and one loop is enough for a dedicated broker's worth of tests.
pytestmark = [pytest.mark.integration, pytest.mark.asyncio_loop_only]

CLIENT = "mqwire-client"
# A refused login or a stopped KDC is seen in well under a second; the request timeout is long so that a
# client retrying until it ran out would stand out (the liveness bound below, generous for a loaded machine).
REQUEST_TIMEOUT_MS = 60_000


@dataclass
class Realm:
    kdc: Kdc
    broker: KafkaBroker
    keytab: Path
    folder: Path

    def options(self, **overrides: Any) -> dict[str, Any]:
        return {
            "sasl_mechanism": "GSSAPI",
            "sasl_kerberos_principal": f"{CLIENT}@{self.kdc.realm}",
            "sasl_kerberos_keytab": str(self.keytab),
            # The broker is reached at 127.0.0.1; its principal is kafka/localhost.
            "sasl_kerberos_domain_name": "localhost",
            "request_timeout_ms": REQUEST_TIMEOUT_MS,
            **overrides,
        }


@pytest.fixture(scope="module")
def realm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Realm]:
    import importlib.util

    if not available() or importlib.util.find_spec("gssapi") is None:
        pytest.fail("GSSAPI needs MIT Kerberos's KDC (make kerberos) and the gssapi package (mqwire[kerberos])")
    folder = tmp_path_factory.mktemp("gssapi")
    kdc = start_kdc(folder / "kdc")
    launcher: Launcher | None = None
    try:
        keytab = kdc.add_principal(CLIENT)
        properties, flags = kafka_gssapi_config(kdc, kdc.add_principal("kafka/localhost"))
        launcher = Launcher(state_dir=folder / "state", work_root=folder / "work", owned=True)
        status = launcher.start("kafka", kafka_properties=properties, kafka_jvm_flags=flags)
        assert isinstance(status.endpoint, KafkaBroker)
        with pytest.MonkeyPatch.context() as patch:
            # The client's Kerberos library finds the realm through KRB5_CONFIG.
            patch.setenv("KRB5_CONFIG", str(kdc.krb5_conf))
            yield Realm(kdc, status.endpoint, keytab, folder)
    finally:
        if launcher is not None:
            launcher.stop("kafka")
        kdc.stop()


def plain_url(broker: KafkaBroker) -> str:
    assert broker.sasl_port is not None
    return f"kafka://{broker.host}:{broker.sasl_port}"


async def round_trip(url: str, topic: str, value: bytes, **options: Any) -> bytes:
    async with kafkawire.connect(url, **options) as client:
        async with client.producer(topic) as producer:
            await producer.send(value)
        async with client.consumer(topic, start="earliest") as consumer:
            async with asyncio.timeout(30):
                message = await consumer.getone()
    assert message.value is not None
    return bytes(message.value)


async def test_produce_and_consume_with_a_keytab_over_plain_and_tls(realm: Realm) -> None:
    topic = f"kw-gssapi-{uuid.uuid4().hex[:8]}"
    assert await round_trip(plain_url(realm.broker), topic, b"kerberos", **realm.options()) == b"kerberos"
    broker = realm.broker
    assert broker.sasl_ssl_port is not None and broker.ssl_cafile is not None
    tls = f"kafka+ssl://{broker.host}:{broker.sasl_ssl_port}"
    got = await round_trip(tls, topic + "-tls", b"kerberos over tls", ssl_cafile=broker.ssl_cafile,
                           ssl_check_hostname=False, **realm.options())
    assert got == b"kerberos over tls"


async def test_an_outdated_keytab_fails_once_naming_the_principal(realm: Realm) -> None:
    # New keys for a second principal: the keytab written first holds keys the KDC no longer has.
    stale = realm.kdc.add_principal("rotated", realm.folder / "rotated-old.keytab")
    realm.kdc.write_keytab("rotated", realm.folder / "rotated-new.keytab")
    async with FaultProxy(realm.broker.host, realm.broker.sasl_port or 0) as proxy:
        with pytest.raises(kafkawire.AuthenticationError, match=rf"rotated@{realm.kdc.realm}") as caught:
            async with asyncio.timeout(REQUEST_TIMEOUT_MS / 2000):
                async with kafkawire.connect(
                    f"kafka://127.0.0.1:{proxy.port}",
                    **realm.options(sasl_kerberos_principal=f"rotated@{realm.kdc.realm}",
                                    sasl_kerberos_keytab=str(stale)),
                ) as client:
                    await client.refresh_metadata([])
        await asyncio.sleep(0.5)  # anything still retrying in the background would show up here
    assert proxy.accepted <= 1, f"{proxy.accepted} connections for one refused login"
    assert "GSSAPI" in str(caught.value)


async def test_a_keytab_of_another_principal_is_refused_naming_the_principal(realm: Realm) -> None:
    with pytest.raises(kafkawire.AuthenticationError, match=rf"someone-else@{realm.kdc.realm}"):
        async with kafkawire.connect(
            plain_url(realm.broker), **realm.options(sasl_kerberos_principal=f"someone-else@{realm.kdc.realm}")
        ) as client:
            await client.refresh_metadata([])


async def test_an_expired_ticket_in_the_credential_cache_fails_once_naming_the_principal(
    realm: Realm, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A principal of its own, logged in only by this kinit.
    principal = "expiring"
    keytab = realm.kdc.add_principal(principal)
    cache = realm.folder / "expired.ccache"
    realm.kdc.kinit(principal, keytab, cache, lifetime="1s")
    monkeypatch.setenv("KRB5CCNAME", f"FILE:{cache}")
    # Kerberos times are whole seconds: two of them are past the ticket's end whenever kinit ran.
    await asyncio.sleep(2.1)
    async with FaultProxy(realm.broker.host, realm.broker.sasl_port or 0) as proxy:
        # No keytab: the ticket comes from the cache, as after a user's kinit.
        with pytest.raises(kafkawire.AuthenticationError, match=rf"{principal}@{realm.kdc.realm}.*expired"):
            async with asyncio.timeout(REQUEST_TIMEOUT_MS / 2000):
                async with kafkawire.connect(
                    f"kafka://127.0.0.1:{proxy.port}",
                    **realm.options(
                        sasl_kerberos_principal=f"{principal}@{realm.kdc.realm}", sasl_kerberos_keytab=None
                    ),
                ) as client:
                    await client.refresh_metadata([])
        await asyncio.sleep(0.5)  # anything still retrying in the background would show up here
    assert proxy.accepted <= 1, f"{proxy.accepted} connections for one expired ticket"


async def test_a_stopped_kdc_is_an_error_within_the_request_timeout(realm: Realm) -> None:
    realm.kdc.stop()
    try:
        # A fresh client: its in-memory credential cache is empty, so it must ask the KDC.
        with pytest.raises(kafkawire.AuthenticationError, match=rf"{CLIENT}@{realm.kdc.realm}.*KDC") as caught:
            async with asyncio.timeout(REQUEST_TIMEOUT_MS / 2000):
                async with kafkawire.connect(plain_url(realm.broker), **realm.options()) as client:
                    await client.refresh_metadata([])
        assert "kafka@localhost" in str(caught.value)
    finally:
        realm.kdc.start()
