"""Client options named as the reference clients name them, for the Spark sources and the mqwire command."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from mqwire.cli import client_options_of
from mqwire.connect_options import client_options, jaas_credentials, read_config
from mqwire.systems import UsageError

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
