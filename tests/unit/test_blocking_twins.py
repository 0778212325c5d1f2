"""The blocking API keeps up with the async one: every public coroutine method of an async admin has a blocking
twin taking the same arguments and returning the same type, and every one of an async producer, consumer,
reader or client has a twin or is named below as not offered. Then the blocking admin's behaviour (closed,
errors, Ctrl-C, the loop thread), over a fake async admin; the real admins run against brokers in
tests/integration/test_sync_clients.py.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import typing
from collections.abc import Iterator, Set

import pytest

import kafkawire.admin
import kafkawire.client
import kafkawire.consumer
import kafkawire.producer
import kafkawire.sync
import pulsarwire.admin
import pulsarwire.client
import pulsarwire.consumer
import pulsarwire.producer
import pulsarwire.reader
import pulsarwire.sync
import tubemqwire.client
import tubemqwire.client_balance
import tubemqwire.consumer
import tubemqwire.producer
import tubemqwire.sync
from mqwire.common.blocking_clients import BlockingAdmin, BlockingClient, same_arguments
from mqwire.common.errors import BrokerError, ClosedError, ProtocolError, WrongLoopError
from tests.interrupts import ctrl_c_after

LIVENESS = 30.0  # a liveness bound only: every wait below ends long before it unless hung

# Coroutine methods run by the blocking objects themselves rather than offered as twins: ``start`` is done by
# ``connect`` and the factories, ``close`` is the blocking ``close`` (a plain method), ``stop`` is aiokafka's
# name for it.
LIFECYCLE = {"start", "stop", "close"}

# Async coroutine methods the blocking wrappers do not offer yet. An entry that gets a twin, or whose async
# method goes away, fails ``test_every_async_coroutine_method_has_a_blocking_twin_or_is_listed``: the list
# stays exact, and a new async method is never missing silently.
NOT_OFFERED: dict[tuple[type, type], set[str]] = {
    (kafkawire.producer.Producer, kafkawire.sync.Producer): {
        "send_and_wait",  # aiokafka's name: the blocking ``send`` waits
    },
    (kafkawire.consumer.Consumer, kafkawire.sync.Consumer): {
        "committed", "offsets_for_times", "seek_to_committed", "seek_to_timestamp",
    },
    (kafkawire.client.Client, kafkawire.sync.Client): {"partitions_for", "refresh_metadata"},
    (pulsarwire.producer.Producer, pulsarwire.sync.Producer): set(),
    (pulsarwire.consumer.Consumer, pulsarwire.sync.Consumer): {
        "batch_receive",  # ``getmany`` is the blocking batch receive
        "flush_acks", "reconsume_later", "redeliver_unacknowledged_messages", "refresh_lag", "unsubscribe",
    },
    (pulsarwire.reader.Reader, pulsarwire.sync.Reader): {"batch_receive"},
    (pulsarwire.client.Client, pulsarwire.sync.Client): {"get_schema", "get_topic_partitions"},
    (tubemqwire.producer.Producer, tubemqwire.sync.Producer): set(),
    (tubemqwire.consumer.Consumer, tubemqwire.sync.Consumer): {"getone", "seek"},
    (tubemqwire.client_balance.ClientBalanceConsumer, tubemqwire.sync.ClientBalanceConsumer): {"getone", "seek"},
    (tubemqwire.client.Client, tubemqwire.sync.Client): set(),
}

ADMINS = [
    pytest.param(kafkawire.admin.Admin, kafkawire.sync.Admin, id="kafkawire"),
    pytest.param(pulsarwire.admin.Admin, pulsarwire.sync.Admin, id="pulsarwire"),
]


def coroutine_methods(cls: type) -> set[str]:
    """The public coroutine methods of ``cls`` (its own and inherited)."""
    return {name for name, value in inspect.getmembers(cls) if not name.startswith("_")
            and inspect.iscoroutinefunction(value)}


def blocking_methods(cls: type) -> set[str]:
    """The public methods of a blocking class that are not coroutines (a twin must block, not be awaited)."""
    return {name for name, value in inspect.getmembers(cls) if not name.startswith("_") and callable(value)
            and not inspect.iscoroutinefunction(value)}


def twin_mismatches(async_cls: type, blocking_cls: type, not_offered: Set[str] = frozenset()) -> list[str]:
    """What keeps ``blocking_cls`` from being the twin of ``async_cls``: its missing methods, and twins whose
    parameters or return type differ from the async method's. Empty when it is the twin."""
    problems = []
    blocking = blocking_methods(blocking_cls)
    for name in sorted(coroutine_methods(async_cls) - LIFECYCLE - set(not_offered)):
        if name not in blocking:
            problems.append(f"{blocking_cls.__name__}.{name} is missing")
            continue
        wanted = inspect.signature(getattr(async_cls, name))
        got = inspect.signature(getattr(blocking_cls, name))
        if list(got.parameters.values()) != list(wanted.parameters.values()):
            problems.append(f"{blocking_cls.__name__}.{name}{got} takes other arguments than {wanted}")
    return problems


def return_mismatches(async_cls: type, blocking_cls: type) -> list[str]:
    """Twins whose return type (resolved, not as spelled) is not the async method's result type."""
    problems = []
    for name in sorted(coroutine_methods(async_cls) - LIFECYCLE):
        wanted = typing.get_type_hints(getattr(async_cls, name))["return"]
        got = typing.get_type_hints(getattr(blocking_cls, name))["return"]
        if got != wanted:
            problems.append(f"{blocking_cls.__name__}.{name} returns {got}, the async one {wanted}")
    return problems


@pytest.mark.parametrize(("async_admin", "blocking_admin"), ADMINS)
def test_every_async_admin_method_has_a_blocking_twin_with_its_arguments_and_result(
    async_admin: type, blocking_admin: type
) -> None:
    assert twin_mismatches(async_admin, blocking_admin) == []
    assert return_mismatches(async_admin, blocking_admin) == []
    for name in coroutine_methods(async_admin) - LIFECYCLE:
        assert getattr(blocking_admin, name).__doc__, f"{name} has no docstring"


@pytest.mark.parametrize(
    ("async_cls", "blocking_cls", "not_offered"),
    [pytest.param(a, b, names, id=f"{a.__module__}.{a.__qualname__}") for (a, b), names in NOT_OFFERED.items()],
)
def test_every_async_coroutine_method_has_a_blocking_twin_or_is_listed(
    async_cls: type, blocking_cls: type, not_offered: set[str]
) -> None:
    missing = [problem for problem in twin_mismatches(async_cls, blocking_cls, not_offered) if "is missing" in problem]
    assert missing == []
    assert not_offered <= coroutine_methods(async_cls), "listed but no longer an async method"
    assert not not_offered & blocking_methods(blocking_cls), "listed as not offered but offered: drop it from the list"


def test_the_twin_check_finds_a_missing_method_other_arguments_and_another_result() -> None:
    class AsyncThing:
        async def create(self, name: str, *, count: int = 1) -> str:
            return name

        async def drop(self, name: str) -> None:
            pass

        async def size(self) -> int:
            return 0

    class Thing(BlockingAdmin[AsyncThing]):
        @same_arguments(AsyncThing.create)
        def create(self, *args: object, **kwargs: object) -> str:
            return ""

        def size(self, exact: bool = False) -> str:  # other arguments, another result
            return ""

    class Twin(BlockingAdmin[AsyncThing]):
        @same_arguments(AsyncThing.create)
        def create(self, *args: object, **kwargs: object) -> str:
            return ""

        @same_arguments(AsyncThing.drop)
        def drop(self, *args: object, **kwargs: object) -> None:
            pass

        @same_arguments(AsyncThing.size)
        def size(self, *args: object, **kwargs: object) -> str:  # the arguments, but another result
            return ""

    assert twin_mismatches(AsyncThing, Thing) == [
        "Thing.drop is missing",
        "Thing.size(self, exact: 'bool' = False) -> 'str' takes other arguments than (self) -> 'int'",
    ]
    assert twin_mismatches(AsyncThing, Thing, {"drop", "size"}) == []
    assert twin_mismatches(AsyncThing, Twin) == []
    assert return_mismatches(AsyncThing, Twin) == [
        "Twin.size returns <class 'str'>, the async one <class 'int'>"
    ]


def test_tubemqwire_has_no_admin_async_or_blocking() -> None:
    assert not hasattr(tubemqwire.client.Client, "admin")
    assert not hasattr(tubemqwire.sync.Client, "admin")
    assert "no ``admin()``" in (tubemqwire.sync.__doc__ or "")


# ---------------------------------------------------------------------------------------------- behaviour


class AdminRefusal(BrokerError):
    """What the fake admin raises: a broker's answer, caused by a protocol error."""


class FakeAdmin:
    """An async admin whose calls answer, fail with a chained cause, or wait until cancelled."""

    def __init__(self) -> None:
        self.closed = 0
        self.started = threading.Event()
        self.cancelled = threading.Event()

    async def __aenter__(self) -> FakeAdmin:
        return self

    async def close(self) -> None:
        self.closed += 1

    async def count(self, names: list[str]) -> int:
        return len(names)  # answers without looking whether it is closed, as some async admin calls do

    async def refuse(self) -> None:
        try:
            raise ProtocolError("frame cut short")
        except ProtocolError as error:
            raise AdminRefusal("topic 'x' refused") from error

    async def waits(self) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


class Admin(BlockingAdmin[FakeAdmin]):
    @same_arguments(FakeAdmin.count)
    def count(self, *args: object, **kwargs: object) -> int:
        return self._call(self._async.count, *args, **kwargs)

    def refuse(self) -> None:
        return self._call(self._async.refuse)

    def waits(self) -> None:
        return self._call(self._async.waits)


class FakeClient:
    def __init__(self) -> None:
        self.admins: list[FakeAdmin] = []

    async def __aenter__(self) -> FakeClient:
        return self

    async def close(self) -> None:
        pass

    def admin(self) -> FakeAdmin:
        self.admins.append(FakeAdmin())
        return self.admins[-1]


class Client(BlockingClient[FakeClient]):
    def admin(self) -> Admin:
        made = self._start(lambda client: client.admin())
        return self._adopt(Admin(self.bridge, made, "fake admin"))


@pytest.fixture
def client() -> Iterator[Client]:
    with Client(FakeClient, what="fake") as made:
        yield made


def test_a_closed_admin_raises_closed_even_where_the_async_call_would_not_look(client: Client) -> None:
    with client.admin() as admin:
        assert admin.count(["a", "b"]) == 2
    assert admin.closed
    with pytest.raises(ClosedError, match="fake admin is closed"):
        admin.count([])
    admin.close()  # idempotent
    assert client._async.admins[0].closed == 1


def test_closing_the_client_closes_its_admins_once(client: Client) -> None:
    first, second = client.admin(), client.admin()
    second.close()
    client.close()
    assert first.closed and second.closed
    assert [made.closed for made in client._async.admins] == [1, 1]
    with pytest.raises(ClosedError):
        first.count(["a"])


def test_the_async_error_is_raised_here_with_its_cause(client: Client) -> None:
    with client.admin() as admin:
        with pytest.raises(AdminRefusal, match="refused") as raised:
            admin.refuse()
        assert isinstance(raised.value.__cause__, ProtocolError)
        assert admin.count(["a"]) == 1  # the admin goes on


def test_a_call_from_the_loop_thread_raises_instead_of_waiting_on_itself(client: Client) -> None:
    with client.admin() as admin, pytest.raises(WrongLoopError):
        client.bridge.run_sync(admin.count, ["a"])


def test_ctrl_c_cancels_an_admin_call_and_the_admin_goes_on(client: Client) -> None:
    with client.admin() as admin:
        fake = client._async.admins[0]
        with ctrl_c_after(fake.started) as ctrl_c, pytest.raises(KeyboardInterrupt), ctrl_c.armed():
            admin.waits()
        assert fake.cancelled.wait(LIVENESS)
        assert admin.count(["a"]) == 1
