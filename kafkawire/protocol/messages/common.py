"""Structs that several APIs share. Their fields exist whenever the field holding them does."""

from __future__ import annotations

from kafkawire.protocol.schema import INT32, STRING, Struct, field


class LeaderIdAndEpoch(Struct):
    """The new leader, sent with NOT_LEADER_OR_FOLLOWER errors so the client can skip a Metadata round."""

    leader_id: int = field(INT32, default=-1)
    leader_epoch: int = field(INT32, default=-1)


class NodeEndpoint(Struct):
    """Address of a broker named in ``LeaderIdAndEpoch``."""

    node_id: int = field(INT32)
    host: str = field(STRING)
    port: int = field(INT32)
    rack: str | None = field(STRING, nullable="0+", default=None)
