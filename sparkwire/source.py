"""What the three Spark data sources share: a short name, the schema of the rows they read, a batch and a
stream reader, and where and how their writers send rows. Each source is a subclass that names its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from sparkwire.writing import ConnectOf, RowsStreamWriter, RowsWriter, UrlOf, WriteRows


@dataclass(frozen=True)
class Sink:
    """Where a source's writers send rows: the URL option's reader, the rows' sender, the connect options."""

    url_of: UrlOf
    write: WriteRows
    connect_of: ConnectOf


class WireDataSource(DataSource):
    """A source of one system; a subclass sets the class attributes below."""

    short_name: ClassVar[str]
    row_schema: ClassVar[str]  # Spark's DDL string of the rows a read gives
    batch_reader: ClassVar[Any]  # made with the options: a DataSourceReader
    stream_reader: ClassVar[Any]  # made with the options: a DataSourceStreamReader
    sink: ClassVar[Sink]
    batch_writer: ClassVar[type[RowsWriter]] = RowsWriter

    @classmethod
    def name(cls) -> str:
        """The format's name: ``spark.read.format(name)``."""
        return cls.short_name

    def schema(self) -> str:
        """The rows a read gives."""
        return self.row_schema

    def reader(self, schema: StructType) -> DataSourceReader:
        """The batch reader of these options."""
        reader: DataSourceReader = self.batch_reader(dict(self.options))
        return reader

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """The batch writer of these options."""
        sink = self.sink
        return self.batch_writer(dict(self.options), sink.url_of, sink.write, sink.connect_of)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The stream reader of these options."""
        reader: DataSourceStreamReader = self.stream_reader(dict(self.options))
        return reader

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """The stream writer of these options."""
        sink = self.sink
        return RowsStreamWriter(dict(self.options), sink.url_of, sink.write, sink.connect_of)
