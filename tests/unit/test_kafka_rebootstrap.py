"""Rebootstrap (KIP-899 / KIP-1102): when the client goes back to its bootstrap servers, and what it does there.

The decision is ``RebootstrapTrigger``'s (sans-IO, times given); the session's part runs over fake connections
and a fake resolver, so that every lookup and every metadata request is counted.
"""

from __future__ import annotations

import asyncio
import socket
from types import SimpleNamespace
from typing import Any

import pytest

from kafkawire import errors
from kafkawire.metadata import RebootstrapTrigger
from kafkawire.options import ClientConfig
from kafkawire.session import REBOOTSTRAP_REQUIRED, Session
from mqwire.common.errors import ConfigurationError, ConnectError, ConnectionLostError, RequestTimeoutError
from mqwire.common.options import build_config
from mqwire.common.pool import ConnectionPool

OLD = ("10.0.0.1", 9092)
NEW = ("10.0.0.2", 9192)
BOOTSTRAP = ("kafka.example", 9092)


# ------------------------------------------------------------------------------------- the decision
def test_a_cluster_that_answers_never_triggers_a_rebootstrap() -> None:
    trigger = RebootstrapTrigger("rebootstrap", 0.001)
    for now in range(100):
        trigger.attempting(float(now))
        trigger.answered()
        assert not trigger.due(float(now) + 50)


def test_unanswered_metadata_triggers_after_the_trigger_time_counted_from_the_first_failed_attempt() -> None:
    trigger = RebootstrapTrigger("rebootstrap", 300.0)
    trigger.attempting(1000.0)
    trigger.attempting(1200.0)  # a later attempt does not restart the clock
    assert trigger.unanswered_since == 1000.0
    assert not trigger.due(1299.0)
    assert trigger.due(1300.0)
    trigger.rebootstrapped(1300.0)
    assert not trigger.due(1599.0)
    assert trigger.due(1600.0)


def test_no_reachable_broker_or_rebootstrap_required_trigger_at_once() -> None:
    trigger = RebootstrapTrigger("rebootstrap", 300.0)
    assert trigger.due(0.0, none_reachable=True)
    trigger.require()
    assert trigger.due(0.0)
    trigger.rebootstrapped(0.0)
    assert not trigger.due(1.0)


def test_strategy_none_never_rebootstraps() -> None:
    trigger = RebootstrapTrigger("none", 1.0)
    trigger.attempting(0.0)
    trigger.require()
    assert not trigger.due(10_000.0, none_reachable=True)


def test_the_options_default_to_rebootstrap_after_five_minutes_and_are_checked() -> None:
    config = build_config(ClientConfig, "connect", {})
    assert config.metadata_recovery_strategy == "rebootstrap"
    assert config.metadata_recovery_rebootstrap_trigger == 300.0
    given = build_config(ClientConfig, "connect", {"metadata_recovery_rebootstrap_trigger_ms": 2_000})
    assert given.metadata_recovery_rebootstrap_trigger == 2.0
    with pytest.raises(ConfigurationError, match="metadata_recovery_strategy"):
        build_config(ClientConfig, "connect", {"metadata_recovery_strategy": "rebootstrap_now"})
    with pytest.raises(ConfigurationError, match="metadata_recovery_rebootstrap_trigger_ms"):
        build_config(ClientConfig, "connect", {"metadata_recovery_rebootstrap_trigger_ms": 0})


# ------------------------------------------------------------------------------- the session's part
def metadata_answer(*nodes: tuple[int, tuple[str, int]], error_code: int = 0) -> Any:
    return SimpleNamespace(
        cluster_id="c",
        controller_id=nodes[0][0] if nodes else -1,
        brokers=[SimpleNamespace(node_id=i, host=h, port=p, rack=None) for i, (h, p) in nodes],
        topics=[],
        error_code=error_code,
    )


class FakeConnection:
    def __init__(self, address: tuple[str, int], world: World) -> None:
        self.address = address
        self.world = world
        self.closed = False
        self.in_flight = 0

    def close(self, error: BaseException | None = None) -> None:
        self.closed = True

    async def request(self, body: Any, *, timeout: float | None = None, version: int | None = None) -> Any:
        self.world.requests.append(self.address)
        answer = self.world.answers[self.address]
        if isinstance(answer, Exception):
            raise answer
        return answer


class World:
    """Which addresses accept connections, what each answers, and what the bootstrap name resolves to."""

    def __init__(self) -> None:
        self.answers: dict[tuple[str, int], Any] = {}
        self.lookups: list[str] = []
        self.requests: list[tuple[str, int]] = []
        self.opens: list[tuple[str, int]] = []
        self.resolves = True
        self.resolver_hangs = False

    async def getaddrinfo(self, host: str, port: int, **_: Any) -> list[Any]:
        self.lookups.append(host)
        if self.resolver_hangs:
            await asyncio.get_running_loop().create_future()
        if not self.resolves:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.9", port))]


async def fake_open(session: Session, world: World, address: tuple[str, int]) -> Any:
    world.opens.append(address)
    if address not in world.answers:
        raise ConnectError(f"{address[0]}:{address[1]}: connection refused")
    connection = FakeConnection(address, world)
    session._opened[address] = connection  # type: ignore[assignment]
    return connection


def make_session(world: World, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Session:
    options.setdefault("retry_backoff_ms", 1)
    options.setdefault("retry_backoff_max_ms", 1)
    options.setdefault("enable_metrics_push", False)
    session = Session(f"kafka://{BOOTSTRAP[0]}:{BOOTSTRAP[1]}", build_config(ClientConfig, "connect", options))

    session._pool = ConnectionPool(lambda address: fake_open(session, world, address))  # type: ignore[arg-type]
    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", world.getaddrinfo)
    return session


async def started(world: World, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Session:
    """A session that bootstrapped and knows broker 1 at OLD (the bootstrap name resolved once)."""
    world.answers[BOOTSTRAP] = metadata_answer((1, OLD))
    world.answers[OLD] = metadata_answer((1, OLD))
    session = make_session(world, monkeypatch, **options)
    await session.refresh_metadata([])
    assert world.lookups == [BOOTSTRAP[0]]
    assert session.metadata.brokers[1].address == OLD
    return session


async def test_every_known_broker_gone_goes_back_to_the_bootstrap_name_looked_up_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    session = await started(world, monkeypatch)
    del world.answers[OLD]  # the old cluster is gone; the bootstrap name now leads to the new one
    world.answers[BOOTSTRAP] = metadata_answer((1, NEW))
    await session.refresh_metadata([])
    assert world.lookups == [BOOTSTRAP[0], BOOTSTRAP[0]]
    assert session.metadata.brokers[1].address == NEW
    assert session.rebootstraps == 1
    # Back on the brokers metadata names: the next refresh asks NEW, not the bootstrap name.
    world.answers[NEW] = metadata_answer((1, NEW))
    world.requests.clear()
    await session.refresh_metadata([])
    assert world.requests == [NEW]
    assert world.lookups == [BOOTSTRAP[0], BOOTSTRAP[0]]


async def test_strategy_none_keeps_to_the_known_brokers_and_fails_with_a_typed_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    session = await started(world, monkeypatch, metadata_recovery_strategy="none")
    del world.answers[OLD]
    world.answers[BOOTSTRAP] = metadata_answer((1, NEW))
    with pytest.raises(ConnectError, match=r"10\.0\.0\.1:9092"):
        await session.refresh_metadata([])
    assert world.lookups == [BOOTSTRAP[0]]
    assert session.metadata.brokers[1].address == OLD
    assert session.rebootstraps == 0


async def test_a_healthy_cluster_is_never_rebootstrapped_however_short_the_trigger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    session = await started(world, monkeypatch, metadata_recovery_rebootstrap_trigger_ms=1)
    for _ in range(20):
        await session.refresh_metadata([])
        await asyncio.sleep(0.002)
    assert session.rebootstraps == 0
    assert world.lookups == [BOOTSTRAP[0]]
    assert BOOTSTRAP not in world.requests[1:]


async def test_known_brokers_that_connect_but_never_answer_trigger_a_rebootstrap_after_the_trigger_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    session = await started(world, monkeypatch, metadata_recovery_rebootstrap_trigger_ms=30)
    world.answers[OLD] = RequestTimeoutError("no answer")
    world.answers[BOOTSTRAP] = metadata_answer((1, NEW))
    world.requests.clear()
    async with asyncio.timeout(10):  # a guard against a hang, not a measure of speed
        await session.refresh_metadata([])
    assert session.rebootstraps == 1
    assert session.metadata.brokers[1].address == NEW
    # It kept asking the known broker until the trigger time, then asked the bootstrap name once.
    assert world.requests[-1] == BOOTSTRAP
    assert set(world.requests[:-1]) == {OLD}


async def test_rebootstrap_required_goes_to_the_bootstrap_name_without_forgetting_the_brokers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    session = await started(world, monkeypatch)
    world.answers[OLD] = metadata_answer(error_code=REBOOTSTRAP_REQUIRED)
    world.answers[BOOTSTRAP] = metadata_answer((1, NEW))
    world.requests.clear()
    await session.refresh_metadata([])
    assert world.requests == [OLD, BOOTSTRAP]
    assert session.rebootstraps == 1
    assert session.metadata.brokers[1].address == NEW


async def test_rebootstrap_required_with_strategy_none_is_a_typed_error_and_keeps_the_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    session = await started(world, monkeypatch, metadata_recovery_strategy="none")
    world.answers[OLD] = metadata_answer(error_code=REBOOTSTRAP_REQUIRED)
    with pytest.raises(errors.RebootstrapRequiredError):
        await session.refresh_metadata([])
    assert session.metadata.brokers[1].address == OLD


async def test_a_bootstrap_name_that_no_longer_resolves_is_a_typed_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    session = await started(world, monkeypatch)
    del world.answers[OLD]
    world.resolves = False
    with pytest.raises(ConnectError, match=r"does not resolve: kafka\.example:9092 \(Name or service not known\)"):
        await session.refresh_metadata([])
    assert world.lookups == [BOOTSTRAP[0], BOOTSTRAP[0]]


async def test_a_resolver_that_never_answers_fails_within_the_request_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    session = await started(world, monkeypatch, request_timeout_ms=50)
    del world.answers[OLD]
    world.resolver_hangs = True
    async with asyncio.timeout(10):  # a guard against a hang, not a measure of speed
        with pytest.raises(ConnectError, match=r"kafka\.example:9092 \(name lookup timed out after 0\.05 s\)"):
            await session.refresh_metadata([])


async def test_a_lost_connection_to_the_new_cluster_is_retried_there(monkeypatch: pytest.MonkeyPatch) -> None:
    world = World()
    session = await started(world, monkeypatch)
    del world.answers[OLD]
    world.answers[BOOTSTRAP] = ConnectionLostError("reset")
    with pytest.raises(ConnectionLostError):
        async with asyncio.timeout(10):
            await make_short(session).refresh_metadata([])
    # Still bootstrapping: the next attempt goes to the bootstrap name, not back to the dead broker.
    world.answers[BOOTSTRAP] = metadata_answer((1, NEW))
    world.requests.clear()
    await session.refresh_metadata([])
    assert world.requests == [BOOTSTRAP]
    assert session.metadata.brokers[1].address == NEW


async def test_concurrent_refreshes_that_find_every_broker_gone_rebootstrap_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    session = await started(world, monkeypatch)
    del world.answers[OLD]
    world.answers[BOOTSTRAP] = metadata_answer((1, NEW))
    await asyncio.gather(*(session.refresh_metadata([topic]) for topic in ("a", "b", "c")))
    assert session.rebootstraps == 1
    assert session.metadata.brokers[1].address == NEW


async def test_every_bootstrap_name_is_looked_up_and_those_that_resolve_are_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    world.answers[("good.example", 9092)] = metadata_answer((1, NEW))

    async def getaddrinfo(host: str, port: int, **_: Any) -> list[Any]:
        world.lookups.append(host)
        if host == BOOTSTRAP[0]:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.0.0.9", port))]

    config = build_config(ClientConfig, "connect", {"enable_metrics_push": False})
    session = Session(f"kafka://{BOOTSTRAP[0]}:9092,good.example:9092", config)
    session._pool = ConnectionPool(lambda address: fake_open(session, world, address))  # type: ignore[arg-type]
    monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", getaddrinfo)
    await session.refresh_metadata([])
    assert sorted(world.lookups) == ["good.example", BOOTSTRAP[0]]
    assert session.metadata.brokers[1].address == NEW


async def test_a_broker_that_is_also_the_bootstrap_address_is_tried_once_per_attempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    world = World()
    world.answers[BOOTSTRAP] = metadata_answer((1, BOOTSTRAP))
    session = make_session(world, monkeypatch)
    await session.refresh_metadata([])
    del world.answers[BOOTSTRAP]  # the only broker, at the bootstrap address, is down
    session._opened[BOOTSTRAP].close()
    world.opens.clear()
    with pytest.raises(ConnectError, match=r"kafka\.example:9092"):
        await session.refresh_metadata([])
    assert world.opens == [BOOTSTRAP]
    assert session.rebootstraps == 1


def make_short(session: Session) -> Session:
    session.request_timeout = 0.02
    return session
