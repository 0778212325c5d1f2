"""The Spark sources against secured brokers: kafkawire on the Kafka broker's SASL_SSL (a JAAS line and a PEM
trust store) and SASL_PLAINTEXT listeners, through the prefixed options of Spark's own Kafka source, and what
a wrong option, a wrong password or an unreachable broker reports (the option's name or the address, never a
secret); tubemqwire over TLS with a client certificate and signed registrations, on a TubeMQ of its own;
pulsarwire over TLS with a token, on a Pulsar of its own."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from mqwire.testing.endpoints import KafkaBroker
from mqwire.testing.kafka import SASL_PASSWORD, SASL_USER
from mqwire.testing.pulsar import SecuredPulsar, Security, start_secured
from tests.integration.crash import OwnBroker
from tests.integration.spark_session import local_session
from tests.integration.test_pulsar_secured import make_certificates, token_for

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";'


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from local_session("sparkwire-secured-tests")


def sasl_ssl(broker: KafkaBroker, password: str = SASL_PASSWORD) -> dict[str, str]:
    assert broker.sasl_ssl_port is not None and broker.ssl_cafile, "the launcher did not open a SASL_SSL listener"
    return {
        "kafka.bootstrap.servers": f"{broker.host}:{broker.sasl_ssl_port}",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.jaas.config": JAAS.format(user=SASL_USER, password=password),
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": broker.ssl_cafile,
    }


def test_write_and_read_back_over_sasl_ssl_without_the_secret_in_the_plan(
    spark: Any, kafka_broker: KafkaBroker
) -> None:
    topic = f"sw-secured-{uuid.uuid4().hex[:8]}"
    options = sasl_ssl(kafka_broker)
    data = [(b"k%d" % i, b"secured-%d" % i) for i in range(500)]
    spark.createDataFrame(data, "key binary, value binary").write.format("kafkawire").options(**options).option(
        "topic", topic
    ).mode("append").save()

    df = spark.read.format("kafkawire").options(**options).option("subscribe", topic).load()
    rows = df.select("key", "value").collect()
    assert sorted((bytes(r.key), bytes(r.value)) for r in rows) == sorted(data)

    plan = df._jdf.queryExecution().toString()
    assert topic in plan or "kafkawire" in plan.lower()
    assert SASL_PASSWORD not in plan


def test_sasl_plaintext_with_username_and_password_options(spark: Any, kafka_broker: KafkaBroker) -> None:
    topic = f"sw-sasl-{uuid.uuid4().hex[:8]}"
    options = {
        "kafka.bootstrap.servers": f"{kafka_broker.host}:{kafka_broker.sasl_port}",
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.username": SASL_USER,
        "kafka.sasl.password": SASL_PASSWORD,
    }
    data = [(b"v-%d" % i,) for i in range(200)]
    writer = spark.createDataFrame(data, "value binary").write.format("kafkawire").options(**options)
    writer.option("topic", topic).mode("append").save()
    df = spark.read.format("kafkawire").options(**options).option("subscribe", topic).load()
    assert sorted(bytes(r.value) for r in df.select("value").collect()) == sorted(v for (v,) in data)


def test_an_unknown_option_fails_at_planning_naming_it(spark: Any, kafka_broker: KafkaBroker) -> None:
    with pytest.raises(Exception, match=r"kafka\.sasl\.mechanizm") as caught:
        spark.read.format("kafkawire").options(**sasl_ssl(kafka_broker)).option("kafka.sasl.mechanizm", "PLAIN").option(
            "subscribe", "any"
        ).load().collect()
    assert SASL_PASSWORD not in str(caught.value)
    with pytest.raises(Exception, match="subscribe"):
        spark.read.format("kafkawire").option("url", kafka_broker.url).load().collect()


def test_a_wrong_password_fails_without_the_secret(spark: Any, kafka_broker: KafkaBroker) -> None:
    wrong = f"not-the-password-{uuid.uuid4().hex[:6]}"
    with pytest.raises(Exception) as caught:
        spark.read.format("kafkawire").options(**sasl_ssl(kafka_broker, wrong)).option(
            "subscribe", "any"
        ).load().collect()
    text = str(caught.value)
    assert "authentic" in text.lower() or "sasl" in text.lower(), text[-2000:]
    assert wrong not in text


def test_an_unreachable_broker_fails_with_its_address_and_no_secret(spark: Any) -> None:
    options = {
        "kafka.bootstrap.servers": "127.0.0.1:1",
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.username": "user",
        "kafka.sasl.password": "secret-unreachable-pw",
        "kafka.request.timeout.ms": "3000",
        "kafka.socket.connection.setup.timeout.ms": "1000",
    }
    with pytest.raises(Exception) as caught:
        spark.read.format("kafkawire").options(**options).option("subscribe", "any").load().collect()
    text = str(caught.value)
    assert "127.0.0.1:1" in text, text[-2000:]
    assert "secret-unreachable-pw" not in text


# --- TubeMQ: a master and broker of their own that require signed registrations and listen with TLS
TUBEMQ_TOPIC = "sparksigned"


@pytest.fixture(scope="module")
def secured_tubemq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnBroker]:
    state = tmp_path_factory.mktemp("secured-tubemq") / "state"
    broker = OwnBroker(
        "tubemq", state, "--tubemq-topic", f"{TUBEMQ_TOPIC}:2", "--tubemq-authentication", "--tubemq-tls"
    )
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


def test_tubemq_over_tls_with_signed_clients(spark: Any, secured_tubemq: OwnBroker) -> None:
    info = secured_tubemq.info
    assert info["tls_url"] and info["ssl_cafile"], "the broker was not started with TLS"
    password = "tube-" + uuid.uuid4().hex[:10]
    options = {
        "url": info["tls_url"],
        "tubemq.username": "mqwire",
        "tubemq.password": password,
        "tubemq.tls.ca.file": info["ssl_cafile"],
        "tubemq.tls.cert.file": info["ssl_certfile"],
        "tubemq.tls.key.file": info["ssl_keyfile"],
    }
    data = [(b"signed-%d" % i,) for i in range(300)]
    writer = spark.createDataFrame(data, "value binary").write.format("tubemqwire").options(**options)
    writer.option("topic", TUBEMQ_TOPIC).mode("append").save()

    df = spark.read.format("tubemqwire").options(**options).option("subscribe", TUBEMQ_TOPIC).load()
    assert sorted(bytes(r.value) for r in df.select("value").collect()) == sorted(v for (v,) in data)
    assert password not in df._jdf.queryExecution().toString()

    # Without the client certificate the servers refuse the TLS handshake: the task fails without the secret.
    bare = {k: v for k, v in options.items() if not k.startswith("tubemq.tls.cert") and k != "tubemq.tls.key.file"}
    with pytest.raises(Exception) as caught:
        spark.read.format("tubemqwire").options(**bare).option("subscribe", TUBEMQ_TOPIC).load().collect()
    assert password not in str(caught.value)


# --- Pulsar: a standalone of its own with token authentication and a TLS port (certificates made here)


@pytest.fixture(scope="module")
def secured_pulsar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SecuredPulsar, bytes, str]]:
    tmp = tmp_path_factory.mktemp("secured-pulsar-spark")
    ca_file, cert_file, key_file = make_certificates(tmp / "tls")
    secret = os.urandom(32)
    security = Security(
        token_secret=secret,
        superuser_role="admin",
        superuser_token=token_for(secret, "admin"),
        cert_file=str(cert_file),
        key_file=str(key_file),
        ca_file=str(ca_file),
    )
    broker = start_secured(tmp / "broker", security)
    try:
        yield broker, secret, str(ca_file)
    finally:
        broker.stop()


def test_pulsar_over_tls_with_a_token_without_the_token_in_the_plan(
    spark: Any, secured_pulsar: tuple[SecuredPulsar, bytes, str]
) -> None:
    broker, secret, ca_file = secured_pulsar
    token = token_for(secret, "spark-app")
    topic = f"spark-secured-{uuid.uuid4().hex[:8]}"
    options = {"url": broker.tls_url, "pulsar.authToken": token, "pulsar.tlsTrustCertsFilePath": ca_file}
    data = [(b"token-%d" % i,) for i in range(300)]
    spark.createDataFrame(data, "value binary").write.format("pulsarwire").options(**options).option(
        "topic", topic
    ).mode("append").save()

    df = spark.read.format("pulsarwire").options(**options).option("subscribe", topic).load()
    assert sorted(bytes(r.value) for r in df.select("value").collect()) == sorted(v for (v,) in data)
    assert token not in df._jdf.queryExecution().toString()

    # A token signed with another key is refused: the task fails without the token in what it reports.
    forged = token_for(os.urandom(32), "spark-app")
    with pytest.raises(Exception) as caught:
        spark.read.format("pulsarwire").options(**{**options, "pulsar.authToken": forged}).option(
            "subscribe", topic
        ).load().collect()
    text = str(caught.value)
    assert "authenticat" in text.lower(), text[-2000:]
    assert forged not in text
