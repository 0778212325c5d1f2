"""``mqwire``: one command-line tool for Kafka, Pulsar and TubeMQ, on top of kafkawire, pulsarwire and tubemqwire."""

__all__ = ["main"]

from mqwire.cli import main
