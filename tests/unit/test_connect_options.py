"""Client options named as the reference clients name them, for the Spark sources and the mqwire command."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from mqwire.cli import build_parser, client_options_of
from mqwire.cli.systems import UsageError, configure, options_for, url_for
from mqwire.common.errors import ConfigurationError
from mqwire.connect_options import client_options, jaas_credentials, kafka_url, read_config
from sparkwire.options import kafka_url as spark_kafka_url

SECRET = "s3cr3t-value"
JAAS = f'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="{SECRET}";'


def test_kafka_security_options_map_to_connect_keywords(tmp_path: Path) -> None:
    got = client_options(
        "kafka",
        {
            "security.protocol": "sasl_ssl",
            "sasl.mechanism": "scram-sha-512",
            "sasl.jaas.config": JAAS,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": "/ca.pem",
            "ssl.certificate.location": "/cert.pem",
            "ssl.key.location": "/key.pem",
            "ssl.endpoint.identification.algorithm": "",
            "request.timeout.ms": "5000",
            "Client.Id": "app",
        },
    )
    assert got == {
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "u",
        "sasl_plain_password": SECRET,
        "ssl_cafile": "/ca.pem",
        "ssl_certfile": "/cert.pem",
        "ssl_keyfile": "/key.pem",
        "ssl_check_hostname": False,
        "request_timeout_ms": 5000,
        "client_id": "app",
    }


def test_explicit_username_wins_over_the_jaas_line() -> None:
    got = client_options(
        "kafka",
        {"sasl.username": "a", "sasl.password": "b", "sasl.jaas.config": 'x required username="c" password="d";'},
    )
    assert (got["sasl_plain_username"], got["sasl_plain_password"]) == ("a", "b")
    assert jaas_credentials('m required username="q\\"x" password="p";') == ('q"x', "p")


@pytest.mark.parametrize(
    ("system", "options", "named"),
    [
        ("kafka", {"sasl.pasword": SECRET}, "kafka.sasl.pasword"),
        ("kafka", {"security.protocol": "TLS"}, "kafka.security.protocol"),
        ("kafka", {"ssl.truststore.location": "/x.jks", "ssl.truststore.type": "JKS"}, "kafka.ssl.truststore.type"),
        ("kafka", {"sasl.jaas.config": f"x required password={SECRET};"}, "kafka.sasl.jaas.config"),
        ("kafka", {"request.timeout.ms": SECRET}, "kafka.request.timeout.ms"),
        (
            "pulsar",
            {"authPluginClassName": "org.apache.pulsar.client.impl.auth.AuthenticationTls"},
            "authPluginClassName",
        ),
        ("pulsar", {"authToken2": SECRET}, "pulsar.authtoken2"),
        ("tubemq", {"passwd": SECRET}, "tubemq.passwd"),
        ("tubemq", {"tls.ca.file": f"/nonexistent/{SECRET}.pem"}, "tubemq.tls"),
    ],
)
def test_a_wrong_option_is_named_without_its_value(system: str, options: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=named.replace(".", r"\.").replace("*", r"\*")) as caught:
        client_options(system, options, f"{system}.")
    assert SECRET not in str(caught.value)


def test_pulsar_and_tubemq_options() -> None:
    assert client_options(
        "pulsar",
        {
            "client.authPluginClassName": "org.apache.pulsar.client.impl.auth.AuthenticationToken",
            "client.authParams": f"token:{SECRET}",
            "tlsTrustCertsFilePath": "/ca.pem",
            "tlsHostnameVerificationEnable": "false",
            "operationTimeoutMs": "2500",
        },
    ) == {"auth_token": SECRET, "tls_ca_file": "/ca.pem", "tls_validate_hostname": False, "operation_timeout": 2.5}
    got = client_options("tubemq", {"username": "u", "password": SECRET, "tls.check.hostname": "false"})
    assert got["username"] == "u" and got["password"] == SECRET
    assert isinstance(got["ssl_context"], ssl.SSLContext) and got["ssl_context"].check_hostname is False


def test_the_command_line_reads_a_config_file_then_x_options(tmp_path: Path) -> None:
    config = tmp_path / "client.conf"
    config.write_text("# kcat style\nsecurity.protocol=SASL_SSL\nsasl.username = u\n\nsasl.password=old\n")
    assert read_config(str(config))["sasl.username"] == "u"
    got = client_options_of(str(config), ["sasl.password=new=with=equals"])
    assert got == {"security.protocol": "SASL_SSL", "sasl.username": "u", "sasl.password": "new=with=equals"}
    with pytest.raises(UsageError, match="-X takes name=value"):
        client_options_of(None, ["sasl.password"])
    (tmp_path / "bad.conf").write_text("no equals sign\n")
    with pytest.raises(ValueError, match=r"bad\.conf:1"):
        read_config(str(tmp_path / "bad.conf"))


@pytest.mark.parametrize(
    ("url", "protocol", "expected"),
    [
        ("kafka://b:9093", "SSL", "kafka+ssl://b:9093"),
        ("kafka://b:9093,c:9093", "sasl_ssl", "kafka+ssl://b:9093,c:9093"),
        ("kafka+ssl://b:9093", "SASL_SSL", "kafka+ssl://b:9093"),
        ("kafka://b:9092", "SASL_PLAINTEXT", "kafka://b:9092"),
        ("kafka://b:9092", "PLAINTEXT", "kafka://b:9092"),
    ],
)
def test_security_protocol_turns_tls_on_as_the_java_client_does(url: str, protocol: str, expected: str) -> None:
    assert kafka_url(url, {"Security.Protocol": protocol}) == expected


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SASL_PLAINTEXT"])
def test_a_tls_scheme_with_a_protocol_without_tls_is_an_error_naming_both(protocol: str) -> None:
    with pytest.raises(ConfigurationError, match=rf"kafka\.security\.protocol={protocol}.*kafka\+ssl://"):
        kafka_url("kafka+ssl://b:9093", {"security.protocol": protocol}, "kafka.")


def test_spark_kafka_url_follows_security_protocol_for_url_and_bootstrap_servers() -> None:
    assert spark_kafka_url({"url": "kafka://b:9093", "kafka.security.protocol": "SASL_SSL"}) == "kafka+ssl://b:9093"
    assert spark_kafka_url({"kafka.bootstrap.servers": "b:9093", "kafka.security.protocol": "SSL"}) == (
        "kafka+ssl://b:9093"
    )
    with pytest.raises(ConfigurationError, match=r"security\.protocol"):
        spark_kafka_url({"url": "kafka+ssl://b:9093", "kafka.security.protocol": "SASL_PLAINTEXT"})


def test_the_command_line_turns_tls_on_with_security_protocol() -> None:
    configure({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "u"})
    try:
        assert url_for("kafka://b:9093") == "kafka+ssl://b:9093"
        configure({"security.protocol": "PLAINTEXT"})
        with pytest.raises(ConfigurationError, match=r"-X security\.protocol=PLAINTEXT.*kafka\+ssl://"):
            url_for("kafka+ssl://b:9093")
        assert url_for("pulsar://b:6650") == "pulsar://b:6650"
    finally:
        configure({})


def test_a_sasl_protocol_needs_a_mechanism_and_other_protocols_leave_sasl_unused() -> None:
    with pytest.raises(ConfigurationError, match=r"sasl\.mechanism"):
        client_options("kafka", {"security.protocol": "SASL_SSL", "sasl.username": "u", "sasl.password": SECRET})
    # As in the Java client, PLAINTEXT and SSL do not authenticate: the password is not handed to the client.
    got = client_options(
        "kafka",
        {"security.protocol": "SSL", "sasl.mechanism": "PLAIN", "sasl.password": SECRET, "ssl.ca.location": "/c"},
    )
    assert got == {"ssl_cafile": "/c"}
    assert client_options("kafka", {"security.protocol": "PLAINTEXT", "ssl.ca.location": "/c"}) == {}


def test_secrets_come_from_the_environment_and_the_command_line_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MQWIRE_SASL_PASSWORD", SECRET)
    monkeypatch.setenv("MQWIRE_SASL_USERNAME", "env-user")
    monkeypatch.setenv("MQWIRE_PULSAR_TOKEN", "tok-" + SECRET)
    configure({"sasl.mechanism": "PLAIN", "sasl.username": "cli-user"})
    try:
        kafka = options_for("kafka")
        assert (kafka["sasl_plain_username"], kafka["sasl_plain_password"]) == ("cli-user", SECRET)
        # The Kafka variables are not Pulsar options: a Pulsar command is not refused for them.
        configure({})
        assert options_for("pulsar") == {"auth_token": "tok-" + SECRET}
    finally:
        configure({})


def test_help_says_the_command_line_is_visible_and_where_secrets_go() -> None:
    text = " ".join(build_parser().format_help().split())
    assert "Visible to ps" in text and "-F" in text
    assert "MQWIRE_SASL_PASSWORD" in text and "MQWIRE_PULSAR_TOKEN" in text
