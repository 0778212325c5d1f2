"""connect() keywords from string options named as the reference clients name them.

Kafka options keep the Java client's and librdkafka's names (``security.protocol``, ``sasl.mechanism``,
``sasl.jaas.config``, ``sasl.username``, ``ssl.truststore.location``, ``ssl.ca.location``...), Pulsar options
those of the Java client's configuration (``authPluginClassName``, ``authParams``, ``tlsTrustCertsFilePath``...),
and TubeMQ options name the ``tubemqwire.connect`` keywords (``username``, ``tls.ca.file``...). The Spark data
sources take them prefixed (``kafka.sasl.mechanism``), the ``mqwire`` command as ``-X name=value`` or in a
config file (as kcat does). An unknown option is an error naming it. Values are never put into messages:
an error names the option only, as values may be secrets.
"""

from __future__ import annotations

import logging
import re
import ssl
from collections.abc import Callable, Mapping
from typing import Any

from mqwire.common.errors import ConfigurationError

ConnectOptions = dict[str, Any]

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")

log = logging.getLogger(__name__)


def prefixed(options: Mapping[str, str], prefix: str) -> dict[str, str]:
    """The options that start with ``prefix``, by their lower-cased rest (Spark lower-cases option names)."""
    return {k.lower()[len(prefix) :]: v for k, v in options.items() if k.lower().startswith(prefix)}


def lowered(options: Mapping[str, str]) -> dict[str, str]:
    """``options`` by lower-cased names."""
    return {k.strip().lower(): v for k, v in options.items()}


def read_config(path: str) -> dict[str, str]:
    """``name=value`` lines of a config file (``#`` starts a comment line), as kcat's ``-F`` reads them."""
    found: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            name, sep, value = text.partition("=")
            if not sep or not name.strip():
                raise ConfigurationError(f"{path}:{number}: expected name=value")
            found[name.strip()] = value.strip()
    return found


def client_options(system: str, options: Mapping[str, str], prefix: str = "") -> ConnectOptions:
    """The connect() keywords of ``system`` (kafka, pulsar, tubemq) from unprefixed ``options``; ``prefix``
    is put before option names in errors."""
    convert = {"kafka": kafka_options, "pulsar": pulsar_options, "tubemq": tubemq_options}[system]
    return convert(lowered(options), prefix)


def _bool(name: str, value: str) -> bool:
    if value.strip().lower() in ("true", "1", "yes"):
        return True
    if value.strip().lower() in ("false", "0", "no"):
        return False
    raise ConfigurationError(f"option {name} must be true or false")


def _int(name: str, value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ConfigurationError(f"option {name} must be an integer") from None


def _seconds(name: str, value: str) -> float:
    return _int(name, value) / 1000


_JAAS = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')


def jaas_credentials(value: str) -> tuple[str | None, str | None]:
    """``username`` and ``password`` of a ``sasl.jaas.config`` line (PlainLoginModule, ScramLoginModule)."""
    found = {key.lower(): raw.replace('\\"', '"') for key, raw in _JAAS.findall(value)}
    return found.get("username"), found.get("password")


def kafka_security_protocol(given: Mapping[str, str], prefix: str = "") -> str:
    """``security.protocol``, upper-cased; PLAINTEXT when not given."""
    raw = given.get("security.protocol", "PLAINTEXT").strip().upper()
    if raw not in SECURITY_PROTOCOLS:
        raise ConfigurationError(f"option {prefix}security.protocol must be one of {', '.join(SECURITY_PROTOCOLS)}")
    return raw


def kafka_url(url: str, options: Mapping[str, str], prefix: str = "") -> str:
    """``url`` with TLS on or off as ``security.protocol`` in ``options`` (unprefixed names, any case) asks.

    As in the Java client and librdkafka, SSL and SASL_SSL turn TLS on: a plain ``kafka://`` URL becomes
    ``kafka+ssl://``. Without the option the URL's scheme decides. A ``kafka+ssl://`` URL with PLAINTEXT or
    SASL_PLAINTEXT contradicts itself: a ConfigurationError names both.
    """
    given = lowered(options)
    if "security.protocol" not in given:
        return url
    protocol = kafka_security_protocol(given, prefix)
    scheme, sep, rest = url.partition("://")
    wants_tls = protocol in TLS_PROTOCOLS
    if sep and scheme.lower() == "kafka":
        return f"kafka+ssl://{rest}" if wants_tls else url
    if not sep or scheme.lower() != "kafka+ssl" or wants_tls:
        return url  # a scheme that is not Kafka's is reported by kafkawire.connect
    raise ConfigurationError(
        f"option {prefix}security.protocol={protocol} contradicts the URL scheme {scheme}:// "
        f"({protocol} is without TLS): use a kafka:// URL, or "
        f"{prefix}security.protocol={'SASL_SSL' if protocol in SASL_PROTOCOLS else 'SSL'}"
    )


def _pem_store(given: dict[str, str], kind: str, prefix: str) -> str | None:
    location = given.get(f"ssl.{kind}.location")
    if location is None:
        return None
    store_type = given.get(f"ssl.{kind}.type", "PEM").strip().upper()
    if store_type != "PEM":
        raise ConfigurationError(
            f"option {prefix}ssl.{kind}.type: only PEM files are read (convert a JKS or PKCS12 store to PEM)"
        )
    return location


# kafka.<Java name> -> kafkawire.connect keyword, for the options that map one to one
_KAFKA_PLAIN: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "client.id": ("client_id", lambda _n, v: v),
    "request.timeout.ms": ("request_timeout_ms", _int),
    "socket.connection.setup.timeout.ms": ("connect_timeout_ms", _int),
    "metadata.max.age.ms": ("metadata_max_age_ms", _int),
    "retry.backoff.ms": ("retry_backoff_ms", _int),
    "retry.backoff.max.ms": ("retry_backoff_max_ms", _int),
    "sasl.mechanism": ("sasl_mechanism", lambda _n, v: v.strip().upper()),
    "sasl.username": ("sasl_plain_username", lambda _n, v: v),
    "sasl.password": ("sasl_plain_password", lambda _n, v: v),
    "ssl.ca.location": ("ssl_cafile", lambda _n, v: v),
    "ssl.certificate.location": ("ssl_certfile", lambda _n, v: v),
    "ssl.key.location": ("ssl_keyfile", lambda _n, v: v),
}
# Read elsewhere, or by the function below rather than the table.
_KAFKA_OTHER = {
    "bootstrap.servers",
    "security.protocol",
    "sasl.jaas.config",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.endpoint.identification.algorithm",
}


def kafka_options(given: dict[str, str], prefix: str = "") -> ConnectOptions:
    """``kafkawire.connect`` keywords from Kafka options (lower-cased names).

    With ``security.protocol`` given, it decides as in the Java client: SASL_PLAINTEXT and SASL_SSL need
    ``sasl.mechanism`` (GSSAPI, the Java default, is not available); PLAINTEXT and SSL leave the ``sasl.*``
    options unused, and PLAINTEXT and SASL_PLAINTEXT the ``ssl.*`` ones (a warning names them). TLS itself is
    turned on by the URL, see ``kafka_url``.
    """
    protocol = kafka_security_protocol(given, prefix)
    if "security.protocol" in given:
        given = _used_by(protocol, given, prefix)
    out: ConnectOptions = {}
    for key, value in given.items():
        if key in _KAFKA_PLAIN:
            keyword, convert = _KAFKA_PLAIN[key]
            out[keyword] = convert(f"{prefix}{key}", value)
        elif key not in _KAFKA_OTHER:
            raise ConfigurationError(f"option {prefix}{key} is not a known Kafka client option")
    if "sasl.jaas.config" in given:
        username, password = jaas_credentials(given["sasl.jaas.config"])
        if username is None or password is None:
            raise ConfigurationError(f'option {prefix}sasl.jaas.config must give username="..." and password="..."')
        out.setdefault("sasl_plain_username", username)
        out.setdefault("sasl_plain_password", password)
    truststore = _pem_store(given, "truststore", prefix)
    if truststore is not None:
        out.setdefault("ssl_cafile", truststore)
    keystore = _pem_store(given, "keystore", prefix)
    if keystore is not None:
        out.setdefault("ssl_certfile", keystore)
    if "ssl.endpoint.identification.algorithm" in given:
        out["ssl_check_hostname"] = given["ssl.endpoint.identification.algorithm"].strip().lower() == "https"
    return out


def _used_by(protocol: str, given: dict[str, str], prefix: str) -> dict[str, str]:
    """The options that ``protocol`` uses; it names the others in a warning (names only: values may be secrets)."""
    if protocol in SASL_PROTOCOLS and "sasl.mechanism" not in given:
        raise ConfigurationError(
            f"option {prefix}security.protocol={protocol} needs {prefix}sasl.mechanism (PLAIN, SCRAM-SHA-256,"
            " SCRAM-SHA-512 or OAUTHBEARER; GSSAPI, the Java client's default, is not supported)"
        )
    # Unknown names stay, to be reported as unknown.
    known = [key for key in given if key in _KAFKA_PLAIN or key in _KAFKA_OTHER]
    unused = [
        key
        for key in known
        if (key.startswith("sasl.") and protocol not in SASL_PROTOCOLS)
        or (key.startswith("ssl.") and protocol not in TLS_PROTOCOLS)
    ]
    if unused:
        log.warning(
            "security.protocol=%s does not use the options %s",
            protocol,
            ", ".join(prefix + key for key in sorted(unused)),
        )
    return {key: value for key, value in given.items() if key not in unused}


# pulsar.<Java client configuration name, lower-cased> -> pulsarwire.connect keyword
_PULSAR: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "authtoken": ("auth_token", lambda _n, v: v),
    "auth.token": ("auth_token", lambda _n, v: v),
    "tlstrustcertsfilepath": ("tls_ca_file", lambda _n, v: v),
    "tlscertificatefilepath": ("tls_cert_file", lambda _n, v: v),
    "tlskeyfilepath": ("tls_key_file", lambda _n, v: v),
    "tlshostnameverificationenable": ("tls_validate_hostname", _bool),
    "tlsallowinsecureconnection": ("tls_allow_insecure_connection", _bool),
    "operationtimeoutms": ("operation_timeout", _seconds),
    "connectiontimeoutms": ("connect_timeout", _seconds),
    "listenername": ("listener_name", lambda _n, v: v),
}
TOKEN_PLUGINS = ("org.apache.pulsar.client.impl.auth.AuthenticationToken", "token")


def pulsar_options(given: dict[str, str], prefix: str = "") -> ConnectOptions:
    """``pulsarwire.connect`` keywords from Pulsar options (lower-cased names; ``client.x`` is read as ``x``)."""
    given = {key.removeprefix("client."): value for key, value in given.items()}
    out: ConnectOptions = {}
    for key, value in given.items():
        if key in _PULSAR:
            keyword, convert = _PULSAR[key]
            out[keyword] = convert(f"{prefix}{key}", value)
        elif key not in ("authpluginclassname", "authparams", "service.url"):
            raise ConfigurationError(f"option {prefix}{key} is not a known Pulsar client option")
    plugin = given.get("authpluginclassname")
    if plugin is not None:
        if plugin.strip() not in TOKEN_PLUGINS:
            raise ConfigurationError(
                f"option {prefix}authPluginClassName: only token authentication (AuthenticationToken) is supported"
            )
        params = given.get("authparams")
        if not params:
            raise ConfigurationError(f"option {prefix}authParams is required with {prefix}authPluginClassName")
        out["auth_token"] = params.strip().removeprefix("token:")
    return out


def tubemq_options(given: dict[str, str], prefix: str = "") -> ConnectOptions:
    """``tubemqwire.connect`` keywords from TubeMQ options: ``username``, ``password``, ``request.timeout.ms``,
    ``connect.timeout.ms``, and for TLS ``tls.ca.file`` (PEM authorities to trust), ``tls.cert.file`` /
    ``tls.key.file`` (a client certificate) and ``tls.check.hostname``."""
    out: ConnectOptions = {}
    tls: dict[str, str] = {}
    for key, value in given.items():
        if key in ("username", "password"):
            out[key] = value
        elif key in ("request.timeout.ms", "connect.timeout.ms"):
            out[key.replace(".", "_")] = _int(f"{prefix}{key}", value)
        elif key in ("tls.ca.file", "tls.cert.file", "tls.key.file", "tls.check.hostname"):
            tls[key] = value
        else:
            raise ConfigurationError(f"option {prefix}{key} is not a known TubeMQ client option")
    if tls:
        out["ssl_context"] = _tls_context(tls, prefix)
    return out


def _tls_context(tls: dict[str, str], prefix: str) -> ssl.SSLContext:
    try:
        context = ssl.create_default_context(cafile=tls.get("tls.ca.file"))
        if "tls.cert.file" in tls:
            context.load_cert_chain(tls["tls.cert.file"], tls.get("tls.key.file"))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigurationError(
            f"options {prefix}tls.*: the PEM files could not be read ({type(exc).__name__})"
        ) from None
    if "tls.check.hostname" in tls:
        context.check_hostname = _bool(f"{prefix}tls.check.hostname", tls["tls.check.hostname"])
    return context
