"""Numbers and tokens of the TubeMQ protocol, as the servers define them."""

from __future__ import annotations

from enum import IntEnum

# ---------------------------------------------------------------------------------------------- framing
RPC_PROTOCOL_BEGIN_TOKEN = 0xFF7FF4FE
# Frames carry their byte stream cut into blocks of at most this size.
BLOCK_SIZE = 8192
# The servers refuse frames of more blocks: (20 MiB largest message + 8 MiB slack) / BLOCK_SIZE.
MAX_LIST_SIZE = (20 * 1024 * 1024 + 8 * 1024 * 1024) // BLOCK_SIZE
MAX_FRAME_BYTES = MAX_LIST_SIZE * BLOCK_SIZE

# ------------------------------------------------------------------------------------------------- RPC
# 3 is the version of the org.apache.inlong servers and the Java client (Go and C++ send 2). It also picks
# the package prefix of exception class names in error answers.
RPC_PROTOCOL_VERSION = 3
FLAG_REQUEST = 0
FLAG_RESPONSE = 1
# The Java client's request timeout; the server drops a request that waited longer than it says.
DEFAULT_RPC_TIMEOUT_MS = 10_000


class ServiceType(IntEnum):
    MASTER = 1
    BROKER_READ = 2
    BROKER_WRITE = 3
    BROKER_ADMIN = 4
    MASTER_ADMIN = 5


class Method(IntEnum):
    MASTER_PRODUCER_REGISTER = 1
    MASTER_PRODUCER_HEARTBEAT = 2
    MASTER_PRODUCER_CLOSE = 3
    MASTER_CONSUMER_REGISTER = 4
    MASTER_CONSUMER_HEARTBEAT = 5
    MASTER_CONSUMER_CLOSE = 6
    MASTER_BROKER_REGISTER = 7
    MASTER_BROKER_HEARTBEAT = 8
    MASTER_BROKER_CLOSE = 9
    BROKER_PRODUCER_REGISTER = 11
    BROKER_PRODUCER_HEARTBEAT = 12
    BROKER_PRODUCER_SEND_MESSAGE = 13
    BROKER_PRODUCER_CLOSE = 14
    BROKER_CONSUMER_REGISTER = 15
    BROKER_CONSUMER_HEARTBEAT = 16
    BROKER_CONSUMER_GET_MESSAGE = 17
    BROKER_CONSUMER_COMMIT = 18
    BROKER_CONSUMER_CLOSE = 19
    MASTER_CONSUMER_REGISTER_V2 = 20
    MASTER_CONSUMER_HEARTBEAT_V2 = 21
    MASTER_CONSUMER_GET_PART_META = 22


class OpType(IntEnum):
    """RegisterRequestC2B.opType: one message both claims and releases a partition."""

    REGISTER = 31
    UNREGISTER = 32


class ResponseStatus(IntEnum):
    """ResponseHeader.status."""

    SUCCESS = 0
    ERROR = 1
    FATAL = 2


# -------------------------------------------------------------------------------------------- err codes
class ErrorCode(IntEnum):
    """errCode of the response messages."""

    SUCCESS = 200
    NOT_READY = 201
    MOVED = 301
    BAD_REQUEST = 400
    UNAUTHORIZED = 401
    CONNECT_RETURN_NULL = 402
    FORBIDDEN = 403
    NOT_FOUND = 404
    ALL_PARTITION_FROZEN = 405
    NO_PARTITION_ASSIGNED = 406
    ALL_PARTITION_WAITING = 407
    ALL_PARTITION_INUSE = 408
    PARTITION_OCCUPIED = 410
    HB_NO_NODE = 411
    DUPLICATE_PARTITION = 412
    CERTIFICATE_FAILURE = 415
    SERVER_RECEIVE_OVERFLOW = 419
    CLIENT_SHUTDOWN = 420
    CLIENT_HIGH_FREQUENCY_REQUEST = 421
    PARTITION_UNSUBSCRIBABLE = 422
    PARTITION_UNPUBLISHABLE = 423
    CLIENT_INCONSISTENT_CONSUMETYPE = 424
    CLIENT_INCONSISTENT_TOPICSET = 425
    CLIENT_INCONSISTENT_FILTERSET = 426
    CLIENT_INCONSISTENT_SESSIONKEY = 427
    CLIENT_INCONSISTENT_SELECTBIG = 428
    CLIENT_INCONSISTENT_SOURCECOUNT = 429
    CLIENT_DUPLICATE_INDEXID = 430
    TOPIC_NOT_DEPLOYED = 431
    PARAMETER_MSG_NULL = 440
    PARAMETER_MSG_TOPIC_BLANK = 441
    PARAMETER_MSG_BODY_EMPTY = 442
    PARAMETER_MSG_TOPIC_UNPUBLISHED = 443
    PARAMETER_MSG_TOPIC_NO_PARTITION = 444
    PARAMETER_MSG_OVER_MAX_LENGTH = 445
    CONSUME_GROUP_FORBIDDEN = 450
    SERVER_CONSUME_SPEED_LIMIT = 452
    CONSUME_CONTENT_FORBIDDEN = 455
    INTERNAL_SERVER_ERROR = 500
    SERVICE_UNAVAILABLE = 503
    INTERNAL_SERVER_ERROR_MSGSET_NULL = 510
    UNSPECIFIED_ABNORMAL = 599


# ------------------------------------------------------------------------------------------- rebalance
class EventType(IntEnum):
    """EventProto.opType of a rebalance instruction."""

    UNKNOWN = -1
    CONNECT = 1
    DISCONNECT = 2
    REPORT = 3
    REFRESH = 4
    STOPREBALANCE = 5
    ONLY_CONNECT = 10
    ONLY_DISCONNECT = 20


class EventStatus(IntEnum):
    """EventProto.status: the master sends TODO/PROCESSING, the consumer reports DONE or FAILED."""

    FAILED = -2
    UNKNOWN = -1
    TODO = 0
    PROCESSING = 1
    DONE = 2


# -------------------------------------------------------------------------------------------- messages
# Flag bit 0: the payload starts with int32 attribute length and the UTF-8 attribute text.
FLAG_HAS_ATTRIBUTE = 0x1
# SendMessageRequestP2B.checkSum value that tells the broker not to compare.
CHECKSUM_NOT_SET = -1
TOKEN_MSG_TYPE = "$msgType$"
TOKEN_MSG_TIME = "$msgTime$"
# Java pattern yyyyMMddHHmm.
MSG_TIME_FORMAT = "%Y%m%d%H%M"
MSG_TIME_LENGTH = 12
MAX_MSG_TYPE_LENGTH = 255
# Largest message data by default, until the master says otherwise (1 MiB), and the ceiling (20 MiB).
DEFAULT_MAX_MESSAGE_SIZE = 1024 * 1024
MAX_MESSAGE_SIZE_UPPER_LIMIT = 20 * 1024 * 1024

# Separators of the metadata strings.
SEGMENT_SEP = "#"
ATTR_SEP = ":"
ARRAY_SEP = ","
GROUP_SEP = "@"
EQ = "="

# ---------------------------------------------------------------------------------------- cluster facts
DEFAULT_MASTER_PORT = 8715
DEFAULT_MASTER_TLS_PORT = 8716
DEFAULT_BROKER_PORT = 8123
DEFAULT_BROKER_TLS_PORT = 8124
# Partition ids of a topic with several stores: store * 10000 + partition.
PARTITION_STORE_BASE = 10_000
# The value of "nothing yet" in checksums and config ids the client reports.
BROKER_CHECKSUM_UNKNOWN = -1
CONFIG_ID_UNDEFINED = -2
# Server-side limits on what a client may send.
MAX_CLIENT_ID_LENGTH = 1024
MAX_HOST_NAME_LENGTH = 256
MAX_TOPIC_NAME_LENGTH = 64
MAX_BOOKED_TOPIC_COUNT = 1024
# Defaults of the reference clients.
HEARTBEAT_INTERVAL_MS = 13_000
