"""asyncio-native Kafka client speaking the Kafka protocol directly.

``async with kafkawire.connect("kafka://host:9092") as client`` gives a Client; from it come producers,
consumers and an admin client. Every broker error code is a named exception in this namespace.
"""

from kafkawire.admin import (
    Admin,
    ClusterDescription,
    ConfigEntry,
    GroupDescription,
    GroupListing,
    GroupMember,
    NewTopic,
    PartitionDescription,
    TopicDescription,
)
from kafkawire.bulk import BulkMetadata
from kafkawire.client import (
    AdminOptions,
    Client,
    ClientOptions,
    ConsumerOptions,
    ProducerOptions,
    ShareConsumerOptions,
    UnknownOptionError,
    connect,
)
from kafkawire.consumer import Consumer
from kafkawire.delivery import RecordFuture
from kafkawire.errors import *  # noqa: F403 - the named error of every Kafka error code
from kafkawire.errors import __all__ as _error_names
from kafkawire.group.metadata import GroupMetadata
from kafkawire.message import Message, RecordMetadata, TimestampType
from kafkawire.metadata import BrokerNode, TopicPartition
from kafkawire.offsets import OffsetAndMetadata, OffsetAndTimestamp
from kafkawire.partitioner import murmur2, partition_for_key
from kafkawire.producer import Producer
from kafkawire.rebalance_listener import ConsumerRebalanceListener
from kafkawire.share import AcknowledgeType, ShareConsumer, ShareMessage
from kafkawire.transaction import GroupMetadataLike
from mqwire.common.errors import (
    DeserializationError,
    OptionTypeError,
    ReceiveTimeoutError,
    SerializationError,
    UnsupportedRuntimeError,
)

__all__ = [
    "AcknowledgeType",
    "ShareConsumer",
    "ShareConsumerOptions",
    "ShareMessage",
    "Admin",
    "AdminOptions",
    "BrokerNode",
    "BulkMetadata",
    "Client",
    "ClientOptions",
    "ClusterDescription",
    "ConfigEntry",
    "Consumer",
    "ConsumerOptions",
    "ConsumerRebalanceListener",
    "DeserializationError",
    "GroupDescription",
    "GroupListing",
    "GroupMember",
    "GroupMetadata",
    "GroupMetadataLike",
    "Message",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "OptionTypeError",
    "PartitionDescription",
    "Producer",
    "ProducerOptions",
    "ReceiveTimeoutError",
    "RecordFuture",
    "RecordMetadata",
    "SerializationError",
    "TimestampType",
    "TopicDescription",
    "TopicPartition",
    "UnknownOptionError",
    "UnsupportedRuntimeError",
    "connect",
    "murmur2",
    "partition_for_key",
    *_error_names,
]
