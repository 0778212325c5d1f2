"""Building BaseCommand envelopes and taking them apart.

Every sub-command of BaseCommand sits in the field whose number equals its ``Type`` value; the tables
below are derived from the descriptor, so a command added to the .proto file needs no code here.
"""

from __future__ import annotations

from typing import Any, TypeVar

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from common.errors import ProtocolError
from pulsarwire.protocol.pulsar_api_pb2 import (
    AuthData,
    BaseCommand,
    CommandAuthResponse,
    CommandConnect,
    FeatureFlags,
    ProtocolVersion,
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


# ----------------------------------------------------------------------------------------------- builders
def default_feature_flags() -> FeatureFlags:
    """What this client handles: auth refresh challenges and broker entry metadata in MESSAGE frames.

    Partial producers (a second PRODUCER_SUCCESS) and topic-list watchers are left to be opted into.
    """
    return FeatureFlags(supports_auth_refresh=True, supports_broker_entry_metadata=True)


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
