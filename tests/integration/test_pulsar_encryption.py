"""End-to-end encryption against the real broker: our producer and consumer, the crypto failure actions, and the
Java client's message crypto both ways."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

import pulsarwire
from mqwire.common.errors import ReceiveTimeoutError
from mqwire.testing import classpath
from mqwire.testing.endpoints import PulsarBroker
from mqwire.testing.java import find_java

pytestmark = pytest.mark.integration

JAVA_SOURCE = Path(__file__).parent / "java" / "PulsarCryptoInterop.java"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """An RSA key pair: the public key as SubjectPublicKeyInfo, the private one as PKCS#1 (as the Java client reads)."""
    folder = tmp_path_factory.mktemp("pulsar-crypto")
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public, private = folder / "public.pem", folder / "private.pem"
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    private.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()))
    return str(public), str(private)


async def receive_values(consumer: pulsarwire.Consumer, count: int) -> list[bytes]:
    values = []
    for _ in range(count):
        message = await consumer.receive(timeout=20)
        values.append(message.value)
        await consumer.ack(message)
    return values


@pytest.mark.parametrize("batching", [False, True], ids=["single", "batched"])
async def test_encrypted_round_trip_and_the_payload_on_the_wire(
    pulsar_broker: PulsarBroker, keys: tuple[str, str], batching: bool
) -> None:
    public, private = keys
    topic = unique("encrypted")
    sent = [b"secret-%d" % i for i in range(5)]
    async with (
        pulsarwire.connect(pulsar_broker.url) as client, client.consumer(topic, group="with-key", start="earliest",
                        crypto_key_reader=pulsarwire.CryptoKeyReader(private_key_path=private)) as decrypting,
        client.consumer(topic, group="raw", start="earliest", crypto_failure_action="CONSUME") as raw,
    ):
        async with client.producer(topic, batching_enabled=batching, compression_type="LZ4",
                                   encryption_keys=["app-key"],
                                   crypto_key_reader=pulsarwire.CryptoKeyReader(public)) as producer:
            for value in sent:
                await producer.enqueue(value, key=b"k")
            await producer.flush()
        assert await receive_values(decrypting, 5) == sent
        # Without the key: delivered as sent, encrypted (a batch as one message).
        first = await raw.receive(timeout=20)
        assert first.encrypted
        assert not any(value in first.payload for value in sent)


@pytest.mark.parametrize("action", ["FAIL", "DISCARD"])
async def test_an_undecryptable_message_follows_the_failure_action(
    pulsar_broker: PulsarBroker, keys: tuple[str, str], action: str
) -> None:
    public, private = keys
    topic = unique(f"encrypted-{action.lower()}")
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with client.producer(topic, encryption_keys=["app-key"],
                                   crypto_key_reader=pulsarwire.CryptoKeyReader(public)) as producer:
            await producer.send(b"sealed")
        # No private key: never delivered, and the consumer goes on working.
        async with client.consumer(topic, group="g", start="earliest", crypto_failure_action=action) as consumer:
            with pytest.raises(ReceiveTimeoutError):
                await consumer.receive(timeout=2)
            async with client.producer(topic) as plain:
                await plain.send(b"clear")
            clear = await consumer.receive(timeout=20)
            assert clear.value == b"clear"
            await consumer.ack(clear)
            await consumer.flush_acks()
        # With the key now: FAIL left the message unacknowledged, so it comes; DISCARD acknowledged it.
        reader = pulsarwire.CryptoKeyReader(private_key_path=private)
        async with client.consumer(topic, group="g", crypto_key_reader=reader) as consumer:
            if action == "FAIL":
                assert (await consumer.receive(timeout=20)).value == b"sealed"
            else:
                with pytest.raises(ReceiveTimeoutError):
                    await consumer.receive(timeout=2)


async def test_a_key_reader_without_the_public_key_fails_the_send(
    pulsar_broker: PulsarBroker, keys: tuple[str, str]
) -> None:
    async with (
        pulsarwire.connect(pulsar_broker.url) as client,
        client.producer(unique("no-key"), encryption_keys=["app-key"], batching_enabled=False,
                        crypto_key_reader=pulsarwire.CryptoKeyReader()) as producer,
    ):
        with pytest.raises(pulsarwire.CryptoError, match="public key"):
            await producer.send(b"x")


# ------------------------------------------------------------------------------------------ the Java client
@pytest.fixture(scope="module")
def java_crypto(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    java = find_java("pulsar").executable
    javac = Path(java).with_name("javac")
    if not javac.is_file():
        javac = Path(shutil.which("javac") or "javac")
    folder = tmp_path_factory.mktemp("pulsar-crypto-java")
    jars = classpath.classpath("pulsar")
    compiled = subprocess.run([str(javac), "-cp", jars, "-d", str(folder), str(JAVA_SOURCE)],
                              capture_output=True, text=True, check=False, timeout=300)
    if compiled.returncode != 0:
        pytest.fail(f"javac failed:\n{compiled.stdout}{compiled.stderr}")
    return java, f"{folder}:{jars}"


async def run_java(java_crypto: tuple[str, str], *args: str) -> list[str]:
    java, class_path = java_crypto
    process = await asyncio.create_subprocess_exec(
        java, "-cp", class_path, "PulsarCryptoInterop", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), 120)
    except TimeoutError:
        process.kill()
        await process.wait()
        pytest.fail(f"the Java client did not finish {args[0]} within 120 s")
    lines = out.decode(errors="replace").splitlines()
    if process.returncode != 0:
        pytest.fail(f"the Java client failed ({process.returncode}):\n" + "\n".join(lines[-40:]))
    return lines


# What the reference client makes of our bytes, and we of its, is the same on either loop.
@pytest.mark.asyncio_loop_only
async def test_java_encrypts_for_us_and_we_for_java(
    pulsar_broker: PulsarBroker, keys: tuple[str, str], java_crypto: tuple[str, str]
) -> None:
    public, private = keys
    from_java, to_java = unique("crypto-from-java"), unique("crypto-to-java")
    await run_java(java_crypto, "produce", pulsar_broker.url, from_java, "app-key", public, "5")
    async with pulsarwire.connect(pulsar_broker.url) as client:
        async with client.consumer(from_java, group="ours", start="earliest",
                                   crypto_key_reader=pulsarwire.CryptoKeyReader(private_key_path=private)) as ours:
            assert sorted(await receive_values(ours, 5)) == [b"java-%d" % i for i in range(5)]
        async with client.producer(to_java, compression_type="ZSTD", encryption_keys=["app-key"],
                                   crypto_key_reader=pulsarwire.CryptoKeyReader(public)) as producer:
            for index in range(5):
                await producer.enqueue(b"ours-%d" % index)
            await producer.flush()
    lines = await run_java(java_crypto, "consume", pulsar_broker.url, to_java, "java", private, "5")
    assert sorted(line for line in lines if line.startswith("MSG ")) == [f"MSG ours-{i}" for i in range(5)]
