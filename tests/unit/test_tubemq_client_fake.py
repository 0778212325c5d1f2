"""The TubeMQ client against an in-process fake cluster speaking the real frames: master failover, the
master forgetting a client, partition retries, and a consumer fetching, acknowledging and releasing.

The fake plays master and broker on one port (their method ids differ); its behaviour is the servers'
as far as these tests need it.

These are fault-injection cases: answers the real servers give only in states that cannot be brought about on
demand against one master and one broker here (a send error on one partition and not on the others, a 400 or
419 from the broker, a 411 on a live link, a 450 heartbeat answer, a partition dropped by its broker while the
master still assigns it). They show how the client reacts to each answer. The reactions that real faults
cause are shown against real servers elsewhere: sends retried on the other broker's partitions and the
producer and group registering again after the active master is killed (tests/cluster/test_tubemq_cluster.py),
a batch given back after ``confirm_timeout_ms`` (tests/integration/test_tubemq_client.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

import tubemqwire
from mqwire.common.errors import ConnectError
from tubemqwire.protocol import broker_service_pb2 as b
from tubemqwire.protocol import master_service_pb2 as m
from tubemqwire.protocol import messages, rpc
from tubemqwire.protocol.constants import EventType, Method, OpType
from tubemqwire.protocol.frames import TubeFrameSplitter

TOPIC = "orders"
GROUP = "billing"


@dataclass
class Stored:
    payload: bytes
    flag: int
    msg_type: str


@dataclass
class FakeCluster:
    """State of the fake master and broker."""

    host: str = "127.0.0.1"
    port: int = 0
    partitions: int = 2
    standby: bool = False
    # errCode to answer the next N master heartbeats with.
    heartbeat_errors: list[int] = field(default_factory=list)
    # partition id -> errCode for sends to it.
    send_errors: dict[int, int] = field(default_factory=dict)
    calls: list[int] = field(default_factory=list)
    producers: set[str] = field(default_factory=set)
    consumers: dict[str, list[str]] = field(default_factory=dict)
    events: dict[str, list[m.EventProto]] = field(default_factory=dict)
    reported: list[m.EventProto] = field(default_factory=list)
    store: dict[int, list[Stored]] = field(default_factory=dict)
    committed: dict[int, int] = field(default_factory=dict)
    pending: dict[int, int] = field(default_factory=dict)
    owners: dict[int, str] = field(default_factory=dict)
    unregistered: list[tuple[int, int]] = field(default_factory=list)
    filters: dict[int, set[str]] = field(default_factory=dict)
    # partition ids the broker reports as no longer ours in its heartbeat answers.
    dropped: set[int] = field(default_factory=set)
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    def disconnect_everyone(self) -> None:
        for writer in self.writers:
            writer.close()
        self.writers.clear()

    @property
    def url(self) -> str:
        return f"tubemq://{self.host}:{self.port}"

    @property
    def broker_info(self) -> str:
        return f"1:{self.host}:{self.port}"

    def answer(self, method: int, data: bytes) -> bytes | tuple[str, str]:
        self.calls.append(method)
        if self.standby and method <= Method.MASTER_CONSUMER_CLOSE:
            return ("org.apache.inlong.tubemq.corerpc.exception.StandbyException", "not the active master")
        handler: Callable[[bytes], bytes] = getattr(self, f"_m{method}")
        return handler(data)

    # ----------------------------------------------------------------------------------- master
    def _m1(self, data: bytes) -> bytes:
        request = rpc.parse_message(m.RegisterRequestP2M, data)
        self.producers.add(request.clientId)
        return m.RegisterResponseM2P(
            success=True, errCode=200, errMsg="OK", brokerCheckSum=7, brokerInfos=[self.broker_info],
            authorizedInfo=m.MasterAuthorizedInfo(visitAuthorizedToken=99),
        ).SerializeToString()

    def _m2(self, data: bytes) -> bytes:
        request = rpc.parse_message(m.HeartRequestP2M, data)
        if self.heartbeat_errors:
            code = self.heartbeat_errors.pop(0)
            return m.HeartResponseM2P(success=False, errCode=code, errMsg="no", brokerCheckSum=-1).SerializeToString()
        if request.clientId not in self.producers:
            answer = m.HeartResponseM2P(success=False, errCode=411, errMsg="unknown", brokerCheckSum=-1)
            return answer.SerializeToString()
        return m.HeartResponseM2P(
            success=True, errCode=200, errMsg="OK", brokerCheckSum=7,
            brokerInfos=[] if request.brokerCheckSum == 7 else [self.broker_info],
            topicInfos=[f"{TOPIC}#1:{self.partitions}:1#"],
            authorizedInfo=m.MasterAuthorizedInfo(visitAuthorizedToken=99),
        ).SerializeToString()

    def _m3(self, data: bytes) -> bytes:
        request = rpc.parse_message(m.CloseRequestP2M, data)
        self.producers.discard(request.clientId)
        return m.CloseResponseM2P(success=True, errCode=200, errMsg="OK").SerializeToString()

    def _m4(self, data: bytes) -> bytes:
        request = rpc.parse_message(m.RegisterRequestC2M, data)
        self.consumers[request.clientId] = list(request.topicCondition)
        owner = f"{request.clientId}@{request.groupName}"
        subscribe = [f"{owner}#{self.broker_info}#{TOPIC}:{p}" for p in range(self.partitions)]
        self.events[request.clientId] = [m.EventProto(rebalanceId=5, opType=EventType.CONNECT, subscribeInfo=subscribe)]
        return m.RegisterResponseM2C(success=True, errCode=200, errMsg="OK").SerializeToString()

    def _m5(self, data: bytes) -> bytes:
        request = rpc.parse_message(m.HeartRequestC2M, data)
        if self.heartbeat_errors:
            code = self.heartbeat_errors.pop(0)
            return m.HeartResponseM2C(success=False, errCode=code, errMsg="no").SerializeToString()
        if request.clientId not in self.consumers:
            return m.HeartResponseM2C(success=False, errCode=411, errMsg="unknown").SerializeToString()
        if request.HasField("event"):
            self.reported.append(request.event)
        answer = m.HeartResponseM2C(success=True, errCode=200, errMsg="OK")
        queue = self.events.get(request.clientId)
        if queue:
            answer.event.CopyFrom(queue.pop(0))
        return answer.SerializeToString()

    def _m6(self, data: bytes) -> bytes:
        request = rpc.parse_message(m.CloseRequestC2M, data)
        self.consumers.pop(request.clientId, None)
        return m.CloseResponseM2C(success=True, errCode=200, errMsg="OK").SerializeToString()

    # ----------------------------------------------------------------------------------- broker
    def _m13(self, data: bytes) -> bytes:
        request = rpc.parse_message(b.SendMessageRequestP2B, data)
        assert request.authInfo.visitAuthorizedToken == 99
        code = self.send_errors.get(request.partitionId)
        if code:
            return b.SendMessageResponseB2P(success=False, errCode=code, errMsg="refused").SerializeToString()
        stored = self.store.setdefault(request.partitionId, [])
        stored.append(Stored(request.data, request.flag, request.msgType))
        return b.SendMessageResponseB2P(
            success=True, errCode=200, errMsg="OK", messageId=1000 * request.partitionId + len(stored),
            appendTime=1, appendOffset=len(stored) - 1,
        ).SerializeToString()

    def _m15(self, data: bytes) -> bytes:
        request = rpc.parse_message(b.RegisterRequestC2B, data)
        pid = request.partitionId
        if request.opType == OpType.REGISTER:
            owner = self.owners.get(pid)
            if owner not in (None, request.clientId):
                return b.RegisterResponseB2C(success=False, errCode=410, errMsg="occupied").SerializeToString()
            self.owners[pid] = request.clientId
            self.filters[pid] = set(request.filterCondStr)
            self.pending.pop(pid, None)
            # As the broker does: a claim with an offset (or "always from the end") sets the group's position.
            end = len(self.store.get(pid, []))
            if request.HasField("currOffset") and request.currOffset >= 0:
                self.committed[pid] = min(request.currOffset, end)
            elif request.readStatus == 2:
                self.committed[pid] = end
            return b.RegisterResponseB2C(success=True, errCode=200, errMsg="OK", currOffset=0).SerializeToString()
        self.unregistered.append((pid, request.readStatus))
        self._commit(pid, request.readStatus == 0)
        self.owners.pop(pid, None)
        return b.RegisterResponseB2C(success=True, errCode=200, errMsg="OK").SerializeToString()

    def _commit(self, pid: int, consumed: bool) -> None:
        tmp = self.pending.pop(pid, 0)
        if consumed:
            self.committed[pid] = self.committed.get(pid, 0) + tmp

    def _m16(self, data: bytes) -> bytes:
        request = rpc.parse_message(b.HeartBeatRequestC2B, data)
        failures = [f"411:{text}" for text in request.partitionInfo if int(text.rsplit(":", 1)[1]) in self.dropped]
        return b.HeartBeatResponseB2C(
            success=True, errCode=200, errMsg="OK", hasPartFailure=bool(failures), failureInfo=failures
        ).SerializeToString()

    def _m17(self, data: bytes) -> bytes:
        request = rpc.parse_message(b.GetMessageRequestC2B, data)
        pid = request.partitionId
        if self.owners.get(pid) != request.clientId:
            return b.GetMessageResponseB2C(success=False, errCode=411, errMsg="not registered").SerializeToString()
        if request.lastPackConsumed:
            self._commit(pid, True)
        else:
            self.pending.pop(pid, None)
        start = self.committed.get(pid, 0)
        stored = self.store.get(pid, [])[start : start + 3]
        if not stored:
            return b.GetMessageResponseB2C(success=False, errCode=404, errMsg="no data").SerializeToString()
        self.pending[pid] = len(stored)
        wanted = self.filters.get(pid)
        return b.GetMessageResponseB2C(
            success=True, errCode=200, errMsg="OK",
            messages=[
                b.TransferedMessage(
                    messageId=start + i, checkSum=messages.checksum(s.payload), payLoadData=s.payload, flag=s.flag
                )
                for i, s in enumerate(stored)
                if not wanted or s.msg_type in wanted
            ],
        ).SerializeToString()

    def _m18(self, data: bytes) -> bytes:
        request = rpc.parse_message(b.CommitOffsetRequestC2B, data)
        self._commit(request.partitionId, request.lastPackConsumed)
        return b.CommitOffsetResponseB2C(success=True, errCode=200, errMsg="OK").SerializeToString()


@contextlib.asynccontextmanager
async def serve(cluster: FakeCluster) -> AsyncIterator[FakeCluster]:
    async def session(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        splitter = TubeFrameSplitter()
        cluster.writers.append(writer)
        try:
            while data := await reader.read(65536):
                for frame in splitter.feed(data):
                    request = rpc.decode_request(frame)
                    answer = cluster.answer(request.method, request.request)
                    if isinstance(answer, tuple):
                        writer.write(rpc.encode_exception(frame.serial, *answer))
                    else:
                        writer.write(rpc.encode_response(frame.serial, request.method, answer))
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(session, cluster.host, 0)
    cluster.port = server.sockets[0].getsockname()[1]
    try:
        yield cluster
    finally:
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 2)


OPTIONS = {"heartbeat_interval_ms": 200, "request_timeout_ms": 2000, "connect_timeout_ms": 2000}


@contextlib.asynccontextmanager
async def connected(cluster: FakeCluster) -> AsyncIterator[tubemqwire.Client]:
    async with serve(cluster), tubemqwire.connect(cluster.url, **OPTIONS) as client:
        yield client


# ------------------------------------------------------------------------------------------------ master
async def test_standby_master_is_skipped() -> None:
    async with serve(FakeCluster(standby=True)) as standby, serve(FakeCluster()) as active:
        url = f"tubemq://{standby.host}:{standby.port},{active.host}:{active.port}"
        async with tubemqwire.connect(url, **OPTIONS) as client, client.producer(TOPIC) as producer:
            receipt = await producer.send(b"v")
            assert receipt.topic == TOPIC and receipt.broker_id == 1
        assert Method.MASTER_PRODUCER_REGISTER in standby.calls
        assert active.producers == set()  # closed again
        assert active.calls.count(Method.MASTER_PRODUCER_CLOSE) == 1


async def test_master_failover_mid_session_registers_again() -> None:
    async with serve(FakeCluster()) as first, serve(FakeCluster(standby=True)) as second:
        url = f"tubemq://{first.host}:{first.port},{second.host}:{second.port}"
        async with tubemqwire.connect(url, **OPTIONS) as client, client.producer(TOPIC) as producer:
            assert len(first.producers) == 1 and not second.producers
            first.standby, second.standby = True, False  # the other master takes over
            for _ in range(250):
                await asyncio.sleep(0.05)
                if second.producers:
                    break
            assert len(second.producers) == 1
            await producer.send(b"after failover")
        assert second.producers == set()


async def test_no_master_reachable() -> None:
    async with serve(FakeCluster()) as cluster:
        url = cluster.url
    client = tubemqwire.connect(url, connect_timeout_ms=500)
    with pytest.raises(ConnectError):
        await client.start()
    await client.close()


async def test_producer_registers_again_when_the_master_forgets_it() -> None:
    cluster = FakeCluster()
    async with connected(cluster) as client, client.producer(TOPIC) as producer:
        cluster.producers.clear()  # the master lost its state
        for _ in range(50):
            await asyncio.sleep(0.05)
            if cluster.producers:
                break
        assert len(cluster.producers) == 1
        assert cluster.calls.count(Method.MASTER_PRODUCER_REGISTER) == 2
        await producer.send(b"still works")


async def test_a_fatal_register_answer_is_raised() -> None:
    cluster = FakeCluster()

    def forbidden(data: bytes) -> bytes:
        return m.RegisterResponseM2C(success=False, errCode=450, errMsg="group forbidden").SerializeToString()

    cluster._m4 = forbidden  # type: ignore[method-assign]
    async with connected(cluster) as client:
        with pytest.raises(tubemqwire.ConsumeGroupForbiddenError):
            await client.consumer(TOPIC, group=GROUP).start()


# ---------------------------------------------------------------------------------------------- producer
async def test_failed_partition_is_retried_elsewhere() -> None:
    cluster = FakeCluster(send_errors={0: 503})
    async with connected(cluster) as client, client.producer(TOPIC, retry_backoff_ms=1) as producer:
        receipts = [await producer.send(b"x%d" % i) for i in range(6)]
    assert {r.partition for r in receipts} == {1}
    assert len(cluster.store[1]) == 6


async def test_fatal_send_error_is_not_retried() -> None:
    cluster = FakeCluster(partitions=1, send_errors={0: 400})
    async with connected(cluster) as client, client.producer(TOPIC) as producer:
        with pytest.raises(tubemqwire.BadRequestError):
            await producer.send(b"x")
    assert cluster.calls.count(Method.BROKER_PRODUCER_SEND_MESSAGE) == 1


async def test_retries_run_out() -> None:
    cluster = FakeCluster(send_errors={0: 419, 1: 419})
    async with connected(cluster) as client, client.producer(TOPIC, retries=2, retry_backoff_ms=1) as producer:
        with pytest.raises(tubemqwire.ServerReceiveOverflowError):
            await producer.send(b"x")
    assert cluster.calls.count(Method.BROKER_PRODUCER_SEND_MESSAGE) == 3


async def test_keyed_messages_stay_on_one_partition_and_enqueue_pipelines() -> None:
    async with connected(FakeCluster(partitions=4)) as client, client.producer(TOPIC, max_in_flight=8) as producer:
        futures = [await producer.enqueue(b"v%d" % i, key=b"customer-1") for i in range(20)]
        await producer.flush()
        assert all(f.done() for f in futures)
        assert len({f.result().partition for f in futures}) == 1
        plain = [await producer.send(b"p") for _ in range(8)]
        assert {r.partition for r in plain} == {0, 1, 2, 3}


async def test_bad_messages_are_refused_before_sending() -> None:
    cluster = FakeCluster()
    async with connected(cluster) as client, client.producer(TOPIC) as producer:
        with pytest.raises(tubemqwire.MessageTooLargeError):
            await producer.send(b"x" * (1024 * 1024 + 1))
        with pytest.raises(ValueError, match="empty"):
            await producer.send(b"")
        with pytest.raises(TypeError):
            await producer.send("text")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="UTF-8"):
            await producer.send(b"x", headers={"h": b"\xff"})
        with pytest.raises(ValueError):
            await producer.send(b"x", headers={"h": "a,b"})
        with pytest.raises(ValueError):
            await producer.send(b"x", msg_time="2024")
        with pytest.raises(ValueError, match="not one this producer publishes"):
            await producer.send(b"x", topic="others")
    assert Method.BROKER_PRODUCER_SEND_MESSAGE not in cluster.calls


# ---------------------------------------------------------------------------------------------- consumer
async def test_consume_ack_and_release() -> None:
    cluster = FakeCluster()
    async with connected(cluster) as client:
        async with client.producer(TOPIC) as producer:
            for i in range(10):
                await producer.send(b"m%d" % i, headers={"n": str(i)}, msg_type="even" if i % 2 == 0 else "odd")
        async with client.consumer(TOPIC, group=GROUP, start="earliest", msg_not_found_wait_ms=20) as consumer:
            got: list[tubemqwire.Message] = []
            while len(got) < 10:
                message = await consumer.getone(timeout=5)
                got.append(message)
                await consumer.ack(message)
            assert sorted(x.value for x in got) == sorted(b"m%d" % i for i in range(10))
            assert {x.headers["n"] for x in got} == {str(i).encode() for i in range(10)}
            assert {x.msg_type for x in got} == {"even", "odd"}
            assert consumer.assignment == {f"1:{TOPIC}:0", f"1:{TOPIC}:1"}
            # Everything was confirmed batch by batch.
            await asyncio.sleep(0.1)
            assert sum(cluster.committed.values()) == 10
        # The CONNECT instruction was reported done, the partitions released and the group left.
        assert [(e.rebalanceId, e.status) for e in cluster.reported] == [(5, 2)]
        assert sorted(pid for pid, _ in cluster.unregistered) == [0, 1]
        assert cluster.consumers == {}


async def test_unacknowledged_batch_is_served_again() -> None:
    cluster = FakeCluster(partitions=1)
    async with connected(cluster) as client:
        async with client.producer(TOPIC) as producer:
            for i in range(3):
                await producer.send(b"m%d" % i)
        async with client.consumer(TOPIC, group=GROUP, start="earliest") as consumer:
            first = await consumer.getone(timeout=5)
            await consumer.ack(first)
            await consumer.ack(first)  # twice does nothing
        # Two of three not acknowledged: released as not consumed.
        assert cluster.unregistered == [(0, 1)]
        assert cluster.committed.get(0, 0) == 0
        async with client.consumer(TOPIC, group=GROUP, start="earliest") as consumer:
            again = [await consumer.getone(timeout=5) for _ in range(3)]
            assert [x.value for x in again] == [b"m0", b"m1", b"m2"]
            with pytest.raises(ValueError):
                await consumer.ack(first)  # from the other consumer


async def test_confirm_timeout_gives_the_batch_back() -> None:
    cluster = FakeCluster(partitions=1)
    async with connected(cluster) as client:
        async with client.producer(TOPIC) as producer:
            await producer.send(b"only")
        async with client.consumer(TOPIC, group=GROUP, start="earliest", confirm_timeout_ms=100) as consumer:
            stale = await consumer.getone(timeout=5)
            again = await consumer.getone(timeout=5)
            assert again.value == stale.value == b"only"
            await consumer.ack(stale)  # its batch was given back: ignored
            await consumer.ack(again)
            await asyncio.sleep(0.1)
            assert cluster.committed[0] == 1


async def test_msg_type_filter_is_sent_and_applied() -> None:
    cluster = FakeCluster(partitions=1)
    async with connected(cluster) as client:
        async with client.producer(TOPIC) as producer:
            for i in range(6):
                await producer.send(b"m%d" % i, msg_type=("a", "b", "c")[i % 3])
        async with client.consumer(TOPIC, group=GROUP, start="earliest", msg_types=["a", "c"]) as consumer:
            got = []
            for _ in range(4):
                # One batch per partition at a time: the next comes once this one is acknowledged.
                got.append(await consumer.getone(timeout=5))
                await consumer.ack(got[-1])
            with pytest.raises(TimeoutError):
                await consumer.getone(timeout=0.3)
        assert [x.msg_type for x in got] == ["a", "c", "a", "c"]
        assert cluster.filters[0] == {"a", "c"}
        assert list(cluster.consumers.values()) == [] and cluster.reported


async def test_consumer_registers_again_after_411() -> None:
    cluster = FakeCluster()
    async with connected(cluster) as client, client.consumer(TOPIC, group=GROUP) as consumer:
        for _ in range(250):
            if consumer.assignment:
                break
            await asyncio.sleep(0.02)
        cluster.consumers.clear()
        for _ in range(250):
            if cluster.consumers:
                break
            await asyncio.sleep(0.02)
        assert cluster.calls.count(Method.MASTER_CONSUMER_REGISTER) == 2


async def test_iteration_ends_when_closed() -> None:
    async with connected(FakeCluster()) as client:
        consumer = client.consumer(TOPIC, group=GROUP)
        await consumer.start()

        async def read_all() -> list[tubemqwire.Message]:
            return [message async for message in consumer]

        reader = asyncio.create_task(read_all())
        await asyncio.sleep(0.1)
        await consumer.close()
        assert await asyncio.wait_for(reader, 2) == []
    with pytest.raises(tubemqwire.ClosedError):
        await consumer.getone()


async def test_a_fatal_heartbeat_answer_ends_reading() -> None:
    cluster = FakeCluster()
    async with connected(cluster) as client, client.consumer(TOPIC, group=GROUP) as consumer:
        cluster.heartbeat_errors.append(450)
        with pytest.raises(tubemqwire.ConsumeGroupForbiddenError):
            await consumer.getone(timeout=5)


async def test_partition_dropped_by_its_broker_is_let_go() -> None:
    cluster = FakeCluster()
    async with connected(cluster) as client, client.consumer(TOPIC, group=GROUP) as consumer:
        for _ in range(250):
            if len(consumer.assignment) == 2:
                break
            await asyncio.sleep(0.02)
        cluster.dropped.add(0)
        for _ in range(250):
            if len(consumer.assignment) == 1:
                break
            await asyncio.sleep(0.02)
        assert consumer.assignment == {f"1:{TOPIC}:1"}
        # The broker already forgot it: it is not released there.
        assert all(pid != 0 for pid, _ in cluster.unregistered)


async def test_sends_go_on_after_the_connections_drop() -> None:
    cluster = FakeCluster()
    async with connected(cluster) as client, client.producer(TOPIC, retry_backoff_ms=10) as producer:
        await producer.send(b"before")
        cluster.disconnect_everyone()
        await asyncio.sleep(0.05)
        receipts = [await producer.send(b"after %d" % i) for i in range(4)]
        assert {r.partition for r in receipts} == {0, 1}
        # The master connection dropped as well: the producer registered again.
        for _ in range(250):
            if cluster.calls.count(Method.MASTER_PRODUCER_REGISTER) == 2:
                break
            await asyncio.sleep(0.02)
        assert cluster.calls.count(Method.MASTER_PRODUCER_REGISTER) == 2
    assert sum(len(v) for v in cluster.store.values()) == 5
