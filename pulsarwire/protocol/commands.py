"""Building BaseCommand envelopes and taking them apart.

Every sub-command of BaseCommand sits in the field whose number equals its ``Type`` value; the tables
below are derived from the descriptor, so a command added to the .proto file needs no code here.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from mqwire.common.errors import ProtocolError
from pulsarwire.protocol.pulsar_api_pb2 import (
    AuthData,
    BaseCommand,
    CommandAck,
    CommandAuthResponse,
    CommandConnect,
    FeatureFlags,
    MessageIdData,
    ProtocolVersion,
    Schema,
)

_M = TypeVar("_M", bound=Message)

T = BaseCommand.Type

# The newest version our messages describe. Brokers answer with the lower of theirs and ours, so a
# newer client never hurts an older broker; the Java and C++ clients also send their newest (21 today).
PROTOCOL_VERSION: int = max(ProtocolVersion.values())

_FIELD_OF_TYPE: dict[int, FieldDescriptor] = {}
_TYPE_OF_MESSAGE: dict[str, tuple[int, str]] = {}
# A command whose message has required fields cannot stand without it; PING and PONG can.
_BODY_REQUIRED: set[int] = set()
for _value in BaseCommand.DESCRIPTOR.enum_types_by_name["Type"].values:
    _field = BaseCommand.DESCRIPTOR.fields_by_number[_value.number]
    _body = _field.message_type
    assert _body is not None, f"BaseCommand field {_field.name} is not a message"
    _FIELD_OF_TYPE[_value.number] = _field
    _TYPE_OF_MESSAGE[_body.full_name] = (_value.number, _field.name)
    if any(f.is_required for f in _body.fields):
        _BODY_REQUIRED.add(_value.number)

# Commands that answer a request and carry its request_id.
RESPONSE_TYPES = frozenset(
    {
        T.SUCCESS,
        T.ERROR,
        T.PRODUCER_SUCCESS,
        T.PARTITIONED_METADATA_RESPONSE,
        T.LOOKUP_RESPONSE,
        T.CONSUMER_STATS_RESPONSE,
        T.GET_LAST_MESSAGE_ID_RESPONSE,
        T.GET_TOPICS_OF_NAMESPACE_RESPONSE,
        T.GET_SCHEMA_RESPONSE,
        T.GET_OR_CREATE_SCHEMA_RESPONSE,
        T.ACK_RESPONSE,
        T.NEW_TXN_RESPONSE,
        T.ADD_PARTITION_TO_TXN_RESPONSE,
        T.ADD_SUBSCRIPTION_TO_TXN_RESPONSE,
        T.END_TXN_RESPONSE,
        T.END_TXN_ON_PARTITION_RESPONSE,
        T.END_TXN_ON_SUBSCRIPTION_RESPONSE,
        T.TC_CLIENT_CONNECT_RESPONSE,
        T.WATCH_TOPIC_LIST_SUCCESS,
    }
)


def wrap(body: Message) -> BaseCommand:
    """Put a sub-command (``CommandFlow(...)``, ``CommandLookupTopic(...)`` ...) into its envelope."""
    entry = _TYPE_OF_MESSAGE.get(body.DESCRIPTOR.full_name)
    if entry is None:
        raise TypeError(f"{type(body).__name__} is not a BaseCommand sub-command")
    number, field = entry
    command = BaseCommand(type=number)  # type: ignore[arg-type]  # the number comes from the Type enum
    getattr(command, field).CopyFrom(body)
    return command


def unwrap(command: BaseCommand) -> tuple[BaseCommand.Type.ValueType, Any]:
    """The command's type and its sub-command message (whose class depends on the type).

    Raises ProtocolError when the sub-command the type names is missing.
    """
    kind = command.type
    field = _FIELD_OF_TYPE.get(kind)
    if field is None:
        raise ProtocolError(f"BaseCommand of unknown type {kind}")
    if kind in _BODY_REQUIRED and not command.HasField(field.name):  # type: ignore[arg-type]
        raise ProtocolError(f"BaseCommand {T.Name(kind)} lacks its {field.name} field")
    return kind, getattr(command, field.name)


def expect(command: BaseCommand, message_type: type[_M]) -> _M:
    """The sub-command, checked to be a ``message_type``; ProtocolError otherwise."""
    kind, body = unwrap(command)
    if not isinstance(body, message_type):
        raise ProtocolError(f"expected {message_type.__name__}, got {T.Name(kind)}")
    return body


def response_request_id(command: BaseCommand) -> int | None:
    """The request_id a response command answers, or None for pushes and requests."""
    if command.type not in RESPONSE_TYPES:
        return None
    _, body = unwrap(command)
    if not body.HasField("request_id"):  # only ACK_RESPONSE may lack it
        return None
    return int(body.request_id)




class SchemaProvider(Protocol):
    """What the open commands take as a schema: something that gives the ``Schema`` message."""

    def to_proto(self) -> Schema: ...

# ----------------------------------------------------------------------------------------------- builders
def default_feature_flags() -> FeatureFlags:
    """What this client handles: auth refresh challenges, broker entry metadata in MESSAGE frames and
    topic-list watchers. Partial producers (a second PRODUCER_SUCCESS) are left to be opted into.
    """
    return FeatureFlags(supports_auth_refresh=True, supports_broker_entry_metadata=True, supports_topic_watchers=True)


def connect(
    client_version: str,
    *,
    protocol_version: int = PROTOCOL_VERSION,
    auth_method_name: str | None = None,
    auth_data: bytes | None = None,
    proxy_to_broker_url: str | None = None,
    feature_flags: FeatureFlags | None = None,
) -> BaseCommand:
    """The first command on every connection."""
    body = CommandConnect(client_version=client_version, protocol_version=protocol_version)
    if auth_method_name is not None:
        body.auth_method_name = auth_method_name
    if auth_data is not None:
        body.auth_data = auth_data
    if proxy_to_broker_url is not None:
        body.proxy_to_broker_url = proxy_to_broker_url
    body.feature_flags.CopyFrom(default_feature_flags() if feature_flags is None else feature_flags)
    return BaseCommand(type=T.CONNECT, connect=body)


def auth_response(
    client_version: str, auth_method_name: str, auth_data: bytes, *, protocol_version: int = PROTOCOL_VERSION
) -> BaseCommand:
    """The answer to an AUTH_CHALLENGE."""
    response = CommandAuthResponse(
        client_version=client_version,
        protocol_version=protocol_version,
        response=AuthData(auth_method_name=auth_method_name, auth_data=auth_data),
    )
    return BaseCommand(type=T.AUTH_RESPONSE, authResponse=response)


def ping() -> BaseCommand:
    command = BaseCommand(type=T.PING)
    command.ping.SetInParent()
    return command


def pong() -> BaseCommand:
    command = BaseCommand(type=T.PONG)
    command.pong.SetInParent()
    return command


def flow(consumer_id: int, permits: int) -> BaseCommand:
    command = BaseCommand(type=T.FLOW)
    command.flow.consumer_id = consumer_id
    command.flow.messagePermits = permits
    return command


def send(
    producer_id: int, sequence_id: int, num_messages: int = 1, *, highest_sequence_id: int | None = None
) -> BaseCommand:
    """The command of a SEND frame; ``num_messages`` above 1 marks a batch."""
    command = BaseCommand(type=T.SEND)
    body = command.send
    body.producer_id = producer_id
    body.sequence_id = sequence_id
    if num_messages != 1:
        body.num_messages = num_messages
    if highest_sequence_id is not None:
        body.highest_sequence_id = highest_sequence_id
    return command


def partitioned_metadata(topic: str, request_id: int) -> BaseCommand:
    command = BaseCommand(type=T.PARTITIONED_METADATA)
    command.partitionMetadata.topic = topic
    command.partitionMetadata.request_id = request_id
    return command


def lookup(
    topic: str, request_id: int, *, authoritative: bool = False, listener_name: str | None = None
) -> BaseCommand:
    """LOOKUP; ``authoritative`` repeats what a Redirect answer said."""
    command = BaseCommand(type=T.LOOKUP)
    body = command.lookupTopic
    body.topic = topic
    body.request_id = request_id
    body.authoritative = authoritative
    if listener_name is not None:
        body.advertised_listener_name = listener_name
    return command


def producer(
    topic: str,
    producer_id: int,
    request_id: int,
    *,
    producer_name: str | None = None,
    user_provided_name: bool = False,
    epoch: int = 0,
    metadata: dict[str, str] | None = None,
    access_mode: int = 0,
    topic_epoch: int | None = None,
    initial_subscription_name: str | None = None,
    schema: SchemaProvider | None = None,
) -> BaseCommand:
    """PRODUCER; leave ``producer_name`` None the first time so the broker picks a unique one."""
    command = BaseCommand(type=T.PRODUCER)
    body = command.producer
    body.topic = topic
    body.producer_id = producer_id
    body.request_id = request_id
    if producer_name is not None:
        body.producer_name = producer_name
    body.user_provided_producer_name = user_provided_name
    body.epoch = epoch
    body.producer_access_mode = access_mode  # type: ignore[assignment]  # a ProducerAccessMode value
    if topic_epoch is not None:
        body.topic_epoch = topic_epoch
    if initial_subscription_name is not None:
        body.initial_subscription_name = initial_subscription_name
    for key, value in (metadata or {}).items():
        body.metadata.add(key=key, value=value)
    if schema is not None:
        body.schema.CopyFrom(schema.to_proto())
    return command


def get_schema(request_id: int, topic: str, schema_version: bytes | None = None) -> BaseCommand:
    """GET_SCHEMA: the topic's latest schema, or the one of ``schema_version``."""
    command = BaseCommand(type=T.GET_SCHEMA)
    body = command.getSchema
    body.request_id = request_id
    body.topic = topic
    if schema_version is not None:
        body.schema_version = schema_version
    return command


def close_producer(producer_id: int, request_id: int) -> BaseCommand:
    command = BaseCommand(type=T.CLOSE_PRODUCER)
    command.close_producer.producer_id = producer_id
    command.close_producer.request_id = request_id
    return command


def subscribe(
    topic: str,
    subscription: str,
    sub_type: int,
    consumer_id: int,
    request_id: int,
    *,
    consumer_name: str | None = None,
    initial_position: int = 0,
    durable: bool = True,
    start_message_id: MessageIdData | None = None,
    read_compacted: bool = False,
    metadata: dict[str, str] | None = None,
    subscription_properties: dict[str, str] | None = None,
    priority_level: int | None = None,
    key_shared_mode: int | None = None,
    allow_out_of_order_delivery: bool = False,
    replicate_subscription_state: bool | None = None,
    consumer_epoch: int | None = None,
    schema: SchemaProvider | None = None,
) -> BaseCommand:
    """SUBSCRIBE; ``sub_type`` and ``initial_position`` are CommandSubscribe enum values."""
    command = BaseCommand(type=T.SUBSCRIBE)
    body = command.subscribe
    body.topic = topic
    body.subscription = subscription
    body.subType = sub_type  # type: ignore[assignment]  # a CommandSubscribe.SubType value
    body.consumer_id = consumer_id
    body.request_id = request_id
    if consumer_name is not None:
        body.consumer_name = consumer_name
    body.initialPosition = initial_position  # type: ignore[assignment]  # an InitialPosition value
    body.durable = durable
    if start_message_id is not None:
        body.start_message_id.CopyFrom(start_message_id)
    if read_compacted:
        body.read_compacted = True
    for key, value in (metadata or {}).items():
        body.metadata.add(key=key, value=value)
    for key, value in (subscription_properties or {}).items():
        body.subscription_properties.add(key=key, value=value)
    if priority_level is not None:
        body.priority_level = priority_level
    if key_shared_mode is not None:
        body.keySharedMeta.keySharedMode = key_shared_mode  # type: ignore[assignment]  # a KeySharedMode value
        body.keySharedMeta.allowOutOfOrderDelivery = allow_out_of_order_delivery
    if replicate_subscription_state is not None:
        body.replicate_subscription_state = replicate_subscription_state
    if consumer_epoch is not None:
        body.consumer_epoch = consumer_epoch
    if schema is not None:
        body.schema.CopyFrom(schema.to_proto())
    return command


def ack(
    consumer_id: int,
    message_ids: list[MessageIdData],
    *,
    cumulative: bool = False,
    validation_error: int | None = None,
    request_id: int | None = None,
) -> BaseCommand:
    """ACK of one or more entries (individual) or of everything up to one id (cumulative)."""
    command = BaseCommand(type=T.ACK)
    body = command.ack
    body.consumer_id = consumer_id
    body.ack_type = CommandAck.Cumulative if cumulative else CommandAck.Individual
    body.message_id.extend(message_ids)
    if validation_error is not None:
        body.validation_error = validation_error  # type: ignore[assignment]  # a ValidationError value
    if request_id is not None:
        body.request_id = request_id
    return command


def redeliver_unacknowledged(
    consumer_id: int, message_ids: list[MessageIdData] | None = None, *, consumer_epoch: int | None = None
) -> BaseCommand:
    """Ask for ``message_ids`` again, or for every unacknowledged message when None."""
    command = BaseCommand(type=T.REDELIVER_UNACKNOWLEDGED_MESSAGES)
    body = command.redeliverUnacknowledgedMessages
    body.consumer_id = consumer_id
    if message_ids:
        body.message_ids.extend(message_ids)
    if consumer_epoch is not None:
        body.consumer_epoch = consumer_epoch
    return command


def close_consumer(consumer_id: int, request_id: int) -> BaseCommand:
    command = BaseCommand(type=T.CLOSE_CONSUMER)
    command.close_consumer.consumer_id = consumer_id
    command.close_consumer.request_id = request_id
    return command


def unsubscribe(consumer_id: int, request_id: int, *, force: bool = False) -> BaseCommand:
    command = BaseCommand(type=T.UNSUBSCRIBE)
    command.unsubscribe.consumer_id = consumer_id
    command.unsubscribe.request_id = request_id
    if force:
        command.unsubscribe.force = True
    return command


def seek(
    consumer_id: int, request_id: int, *, message_id: MessageIdData | None = None, publish_time: int | None = None
) -> BaseCommand:
    """SEEK to a message id or to a publish time (milliseconds)."""
    command = BaseCommand(type=T.SEEK)
    body = command.seek
    body.consumer_id = consumer_id
    body.request_id = request_id
    if message_id is not None:
        body.message_id.CopyFrom(message_id)
    if publish_time is not None:
        body.message_publish_time = publish_time
    return command


def get_last_message_id(consumer_id: int, request_id: int) -> BaseCommand:
    command = BaseCommand(type=T.GET_LAST_MESSAGE_ID)
    command.getLastMessageId.consumer_id = consumer_id
    command.getLastMessageId.request_id = request_id
    return command


def consumer_stats(consumer_id: int, request_id: int) -> BaseCommand:
    """CONSUMER_STATS: the broker's figures for one consumer, its subscription's backlog among them."""
    command = BaseCommand(type=T.CONSUMER_STATS)
    command.consumerStats.consumer_id = consumer_id
    command.consumerStats.request_id = request_id
    return command


def get_topics_of_namespace(
    namespace: str, request_id: int, *, mode: int = 0, topics_pattern: str | None = None
) -> BaseCommand:
    """GET_TOPICS_OF_NAMESPACE: the topics (partitions by their own names) of ``tenant/namespace``."""
    command = BaseCommand(type=T.GET_TOPICS_OF_NAMESPACE)
    body = command.getTopicsOfNamespace
    body.request_id = request_id
    body.namespace = namespace
    body.mode = mode  # type: ignore[assignment]  # a CommandGetTopicsOfNamespace.Mode value
    if topics_pattern is not None:
        body.topics_pattern = topics_pattern
    return command


def watch_topic_list(
    request_id: int, watcher_id: int, namespace: str, topics_pattern: str, topics_hash: str | None = None
) -> BaseCommand:
    """WATCH_TOPIC_LIST: the topics of ``namespace`` matching ``topics_pattern`` now, and pushed changes."""
    command = BaseCommand(type=T.WATCH_TOPIC_LIST)
    body = command.watchTopicList
    body.request_id = request_id
    body.watcher_id = watcher_id
    body.namespace = namespace
    body.topics_pattern = topics_pattern
    if topics_hash is not None:
        body.topics_hash = topics_hash
    return command


def watch_topic_list_close(request_id: int, watcher_id: int) -> BaseCommand:
    command = BaseCommand(type=T.WATCH_TOPIC_LIST_CLOSE)
    command.watchTopicListClose.request_id = request_id
    command.watchTopicListClose.watcher_id = watcher_id
    return command
