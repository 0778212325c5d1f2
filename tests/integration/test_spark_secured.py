"""The Spark sources against secured brokers: kafkawire on the Kafka broker's SASL_SSL (a JAAS line and a PEM
trust store) and SASL_PLAINTEXT listeners, through the prefixed options of Spark's own Kafka source, and what
a wrong option, a wrong password or an unreachable broker reports (the option's name or the address, never a
secret); tubemqwire over TLS with a client certificate and signed registrations, on a TubeMQ of its own;
pulsarwire over TLS with a token, on a Pulsar of its own. For each system the secrets given as options (and
wrong ones) are looked for in everything Spark wrote meanwhile: its log4j2 events from INFO up, the Python
workers' log records, every ``explain`` mode of the plans, the configuration and the errors raised, on the
driver and in tasks (see :class:`SparkOutput`)."""

from __future__ import annotations

import json
import os
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

from mqwire.testing.endpoints import KafkaBroker
from mqwire.testing.kafka import SASL_PASSWORD, SASL_USER
from mqwire.testing.pulsar import SecuredPulsar, Security, start_secured
from tests.integration.crash import OwnBroker
from tests.integration.spark_session import local_session
from tests.integration.test_pulsar_secured import client_token, make_certificates, token_for
from tests.secret_scan import remember_secret

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";'


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    yield from local_session("sparkwire-secured-tests")


class SparkOutput:
    """What the session writes while in use: the driver's and (local mode) the executors' log4j2 events from
    INFO up, into a file of the test's own; the Python workers' log records; the plans of the data frames
    shown to it (every ``explain`` mode); the Spark configuration; the text of the errors shown to it."""

    MODES = ("simple", "extended", "codegen", "cost", "formatted")

    def __init__(self, spark: Any, log_file: Path) -> None:
        self.spark = spark
        self.log_file = log_file
        self.texts: list[str] = []
        self._jvm = spark.sparkContext._jvm
        self._appender: Any = None
        self._level = "WARN"

    def __enter__(self) -> SparkOutput:
        log4j = self._jvm.org.apache.logging.log4j
        context = log4j.LogManager.getContext(False)
        config = context.getConfiguration()
        layout = log4j.core.layout.PatternLayout.newBuilder().withPattern("%d %p %c: %m%n%ex").build()
        builder = log4j.core.appender.FileAppender.newBuilder()
        self._appender = builder.withFileName(str(self.log_file)).setName("secrets-" + uuid.uuid4().hex[:6])
        self._appender = self._appender.setLayout(layout).setConfiguration(config).build()
        self._appender.start()
        config.addAppender(self._appender)
        config.getRootLogger().addAppender(self._appender, None, None)
        self._level = config.getRootLogger().getLevel().toString()
        self.spark.sparkContext.setLogLevel("INFO")
        context.updateLoggers()
        self.spark.conf.set("spark.sql.pyspark.worker.logging.enabled", "true")
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.spark.sparkContext.setLogLevel(self._level)
        self.spark.conf.unset("spark.sql.pyspark.worker.logging.enabled")
        context = self._jvm.org.apache.logging.log4j.LogManager.getContext(False)
        context.getConfiguration().getRootLogger().removeAppender(self._appender.getName())
        self._appender.stop()
        context.updateLoggers()

    def plans(self, df: Any) -> None:
        """Keep the plan of ``df`` as every ``explain`` mode shows it."""
        utils = self._jvm.PythonSQLUtils
        self.texts.extend(utils.explainString(df._jdf.queryExecution(), mode) for mode in self.MODES)

    def error(self, caught: pytest.ExceptionInfo[BaseException]) -> str:
        """Keep the text of an error shown to the session (its chain included) and return it."""
        self.texts.append("".join(traceback.format_exception(caught.value)))
        return str(caught.value)

    def everything(self) -> str:
        """All of it, the log file and the Python workers' records read now."""
        worker_logs = [json.dumps(row.asDict(recursive=True), default=str) for row in self._worker_logs()]
        conf = [f"{key}={value}" for key, value in self.spark.sparkContext.getConf().getAll()]
        conf += [f"{key}={value}" for key, value in self.spark.conf.getAll.items()]
        return "\n".join([self.log_file.read_text(errors="replace"), *worker_logs, *conf, *self.texts])

    def _worker_logs(self) -> list[Any]:
        return list(self.spark.tvf.python_worker_logs().collect())

    def assert_clean(self, *secrets: str) -> None:
        """None of ``secrets`` anywhere in what was kept; the log file did receive the session's events."""
        text = self.everything()
        assert "INFO" in self.log_file.read_text(errors="replace"), "the log file received no INFO event"
        for secret in secrets:
            assert secret and secret not in text, f"a secret appears in Spark's output: {_around(text, secret)}"


def _around(text: str, secret: str) -> str:
    at = text.find(secret)
    return text[max(at - 300, 0) : at + 100].replace(secret, "<SECRET>")


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
    wrong = str(remember_secret(f"not-the-password-{uuid.uuid4().hex[:6]}"))
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


def test_tubemq_over_tls_with_signed_clients(spark: Any, secured_tubemq: OwnBroker, tmp_path: Path) -> None:
    info = secured_tubemq.info
    assert info["tls_url"] and info["ssl_cafile"], "the broker was not started with TLS"
    password = str(remember_secret("tube-" + uuid.uuid4().hex[:10]))
    options = {
        "url": info["tls_url"],
        "tubemq.username": "mqwire",
        "tubemq.password": password,
        "tubemq.tls.ca.file": info["ssl_cafile"],
        "tubemq.tls.cert.file": info["ssl_certfile"],
        "tubemq.tls.key.file": info["ssl_keyfile"],
    }
    with SparkOutput(spark, tmp_path / "spark.log") as output:
        data = [(b"signed-%d" % i,) for i in range(300)]
        writer = spark.createDataFrame(data, "value binary").write.format("tubemqwire").options(**options)
        writer.option("topic", TUBEMQ_TOPIC).mode("append").save()

        df = spark.read.format("tubemqwire").options(**options).option("subscribe", TUBEMQ_TOPIC).load()
        output.plans(df)
        assert sorted(bytes(r.value) for r in df.select("value").collect()) == sorted(v for (v,) in data)

        # Without the client certificate the servers refuse the TLS handshake: reads and writes fail (a write
        # in its tasks, which the executor logs) without the secret in what they report.
        bare = {k: v for k, v in options.items() if k not in ("tubemq.tls.cert.file", "tubemq.tls.key.file")}
        # Refused handshakes are retried until the request times out: 3 s, not the default 10 s, is enough here.
        bare |= {"tubemq.request.timeout.ms": "3000", "tubemq.connect.timeout.ms": "3000"}
        with pytest.raises(Exception) as caught:
            spark.read.format("tubemqwire").options(**bare).option("subscribe", TUBEMQ_TOPIC).load().collect()
        output.error(caught)
        refused = spark.createDataFrame(data[:10], "value binary").write.format("tubemqwire").options(**bare)
        with pytest.raises(Exception) as caught:
            refused.option("topic", TUBEMQ_TOPIC).mode("append").save()
        output.error(caught)
        assert "Exception in task" in (tmp_path / "spark.log").read_text(), "no task failure was logged"
        output.assert_clean(password)


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
    spark: Any, secured_pulsar: tuple[SecuredPulsar, bytes, str], tmp_path: Path
) -> None:
    broker, secret, ca_file = secured_pulsar
    token = client_token(secret, "spark-app")
    topic = f"spark-secured-{uuid.uuid4().hex[:8]}"
    options = {"url": broker.tls_url, "pulsar.authToken": token, "pulsar.tlsTrustCertsFilePath": ca_file}
    # A token signed with another key is refused: reads and writes fail (a write in its tasks, which the
    # executor logs) without the token in what they report.
    forged = client_token(os.urandom(32), "spark-app")
    with SparkOutput(spark, tmp_path / "spark.log") as output:
        data = [(b"token-%d" % i,) for i in range(300)]
        spark.createDataFrame(data, "value binary").write.format("pulsarwire").options(**options).option(
            "topic", topic
        ).mode("append").save()

        df = spark.read.format("pulsarwire").options(**options).option("subscribe", topic).load()
        output.plans(df)
        assert sorted(bytes(r.value) for r in df.select("value").collect()) == sorted(v for (v,) in data)

        with pytest.raises(Exception) as caught:
            spark.read.format("pulsarwire").options(**{**options, "pulsar.authToken": forged}).option(
                "subscribe", topic
            ).load().collect()
        assert "authenticat" in output.error(caught).lower(), str(caught.value)[-2000:]
        refused = spark.createDataFrame(data[:10], "value binary").write.format("pulsarwire")
        refused = refused.options(**{**options, "pulsar.authToken": forged}).option("topic", topic)
        with pytest.raises(Exception) as caught:
            refused.mode("append").save()
        output.error(caught)
        assert "Exception in task" in (tmp_path / "spark.log").read_text(), "no task failure was logged"
        output.assert_clean(token, forged)


def test_kafka_secrets_appear_nowhere_in_what_spark_writes(
    spark: Any, kafka_broker: KafkaBroker, tmp_path: Path
) -> None:
    """The SASL password given in a JAAS line or as ``kafka.sasl.password`` (and a wrong one) appears in none
    of the logs at INFO, plans, configuration, stream progress or error texts of writes, reads and a stream."""
    topic = f"sw-quiet-{uuid.uuid4().hex[:8]}"
    wrong = f"wrong-pw-{uuid.uuid4().hex[:8]}"
    plaintext = {
        "kafka.bootstrap.servers": f"{kafka_broker.host}:{kafka_broker.sasl_port}",
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.username": SASL_USER,
        "kafka.sasl.password": SASL_PASSWORD,
    }
    with SparkOutput(spark, tmp_path / "spark.log") as output:
        data = [(b"quiet-%d" % i,) for i in range(100)]
        writer = spark.createDataFrame(data, "value binary").write.format("kafkawire").options(**sasl_ssl(kafka_broker))
        writer.option("topic", topic).mode("append").save()
        for options in (sasl_ssl(kafka_broker), plaintext):
            df = spark.read.format("kafkawire").options(**options).option("subscribe", topic).load()
            output.plans(df)
            assert df.count() == len(data)

        stream = spark.readStream.format("kafkawire").options(**plaintext).option("subscribe", topic)
        stream = stream.option("startingOffsets", "earliest").load()
        query = stream.writeStream.format("memory").queryName(f"quiet_{uuid.uuid4().hex[:6]}")
        query = query.option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start()
        query.awaitTermination(120)
        output.texts.extend(json.dumps(progress, default=str) for progress in query.recentProgress)
        output.texts.append(query._jsq.toString() + query._jsq.explainInternal(True))
        assert sum(progress["numInputRows"] for progress in query.recentProgress) == len(data)

        for options in (sasl_ssl(kafka_broker, wrong), {**plaintext, "kafka.sasl.password": wrong}):
            failing = spark.read.format("kafkawire").options(**options).option("subscribe", topic).load()
            with pytest.raises(Exception) as caught:
                failing.collect()
            assert "authentic" in output.error(caught).lower() or "sasl" in str(caught.value).lower()
        # A write fails in its tasks, which the executor logs with the Python worker's traceback.
        rejected = spark.createDataFrame(data, "value binary").write.format("kafkawire")
        rejected = rejected.options(**{**plaintext, "kafka.sasl.password": wrong}).option("topic", topic)
        with pytest.raises(Exception) as caught:
            rejected.mode("append").save()
        output.error(caught)
        assert "Exception in task" in (tmp_path / "spark.log").read_text(), "no task failure was logged"
        output.assert_clean(SASL_PASSWORD, wrong)
