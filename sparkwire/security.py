"""connect() keywords of the data sources from their prefixed options, in the style of Spark's own Kafka
source: ``kafka.*`` (``kafka.security.protocol``, ``kafka.sasl.mechanism``, ``kafka.sasl.jaas.config``,
``kafka.ssl.truststore.location``...), ``pulsar.*`` and ``tubemq.*``; the names are those of
:mod:`mqwire.connect_options`. Spark lower-cases option names, so they match whatever their case."""

from __future__ import annotations

from collections.abc import Mapping

from mqwire.connect_options import ConnectOptions, client_options, prefixed


def kafka_connect(options: Mapping[str, str]) -> ConnectOptions:
    """``kafkawire.connect`` keywords from the ``kafka.*`` options (``kafka.bootstrap.servers`` is the URL)."""
    return client_options("kafka", prefixed(options, "kafka."), "kafka.")


def pulsar_connect(options: Mapping[str, str]) -> ConnectOptions:
    """``pulsarwire.connect`` keywords from the ``pulsar.*`` options (``pulsar.client.*`` is read the same)."""
    return client_options("pulsar", prefixed(options, "pulsar."), "pulsar.")


def tubemq_connect(options: Mapping[str, str]) -> ConnectOptions:
    """``tubemqwire.connect`` keywords from the ``tubemq.*`` options."""
    return client_options("tubemq", prefixed(options, "tubemq."), "tubemq.")
