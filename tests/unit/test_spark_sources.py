"""The three Spark sources share one WireDataSource: each names its format, its rows, its readers and where its
writers send rows (Kafka's batch writer takes Arrow batches)."""

from __future__ import annotations

import pytest

from sparkwire.kafka import KafkaBatchReader, KafkaDataSource
from sparkwire.kafka_stream import KafkaStreamReader
from sparkwire.pulsar import PulsarDataSource
from sparkwire.pulsar_read import PulsarBatchReader
from sparkwire.pulsar_stream import PulsarStreamReader
from sparkwire.source import WireDataSource
from sparkwire.tubemq import TubeMQDataSource
from sparkwire.tubemq_read import TubeMQBatchReader
from sparkwire.tubemq_stream import TubeMQStreamReader
from sparkwire.writing import ArrowRowsWriter, RowsStreamWriter, RowsWriter

SOURCES = [
    (KafkaDataSource, "kafkawire", "kafka://localhost:9092", KafkaBatchReader, KafkaStreamReader, ArrowRowsWriter),
    (PulsarDataSource, "pulsarwire", "pulsar://localhost:6650", PulsarBatchReader, PulsarStreamReader, RowsWriter),
    (TubeMQDataSource, "tubemqwire", "tubemq://localhost:8715", TubeMQBatchReader, TubeMQStreamReader, RowsWriter),
]


@pytest.mark.parametrize(("source", "name", "url", "batch", "stream", "writer"), SOURCES)
def test_each_source_names_its_own_parts(
    source: type[WireDataSource], name: str, url: str, batch: type, stream: type, writer: type
) -> None:
    assert issubclass(source, WireDataSource)
    assert source.name() == name
    made = source({"url": url, "topic": "t"})
    assert made.schema().startswith("key binary, value binary, topic string, partition int, ")
    assert (source.batch_reader, source.stream_reader) == (batch, stream)
    batch_writer = made.writer(None, False)  # type: ignore[arg-type]
    assert type(batch_writer) is writer
    assert (batch_writer.url, batch_writer.topic, batch_writer.write_rows) == (url, "t", source.sink.write)
    stream_writer = made.streamWriter(None, False)  # type: ignore[arg-type]
    assert type(stream_writer) is RowsStreamWriter
    assert stream_writer.url == url
