"""``async with`` opens with ``start`` and closes with ``close``, the same way for every client object."""

from __future__ import annotations

import pytest

import kafkawire
import pulsarwire
import tubemqwire
from mqwire.common.affinity import Affinity
from mqwire.common.lifecycle import AsyncResource, SessionClient


class _Counted(AsyncResource):
    """Records what ``async with`` called."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def start(self) -> None:
        self.calls.append("start")

    async def close(self) -> None:
        self.calls.append("close")


async def test_async_with_starts_then_closes() -> None:
    async with _Counted() as resource:
        assert resource.calls == ["start"]
    assert resource.calls == ["start", "close"]


async def test_a_failing_block_still_closes_and_its_error_passes() -> None:
    resource = _Counted()
    with pytest.raises(LookupError):
        async with resource:
            raise LookupError("from the block")
    assert resource.calls == ["start", "close"]


def test_a_subclass_without_start_or_close_cannot_be_made() -> None:
    class Half(AsyncResource):
        async def start(self) -> None:
            pass

    with pytest.raises(TypeError):
        Half()  # type: ignore[abstract]


@pytest.mark.parametrize(
    "cls",
    [
        kafkawire.Client,
        kafkawire.Consumer,
        kafkawire.ShareConsumer,
        pulsarwire.Client,
        pulsarwire.Consumer,
        pulsarwire.Producer,
        pulsarwire.Reader,
        pulsarwire.TableView,
        tubemqwire.Client,
        tubemqwire.Consumer,
        tubemqwire.Producer,
    ],
)
def test_the_client_objects_open_and_close_as_one(cls: type) -> None:
    assert issubclass(cls, AsyncResource)


class _Session:
    """A session that records what its client asked of it."""

    def __init__(self) -> None:
        self.affinity = Affinity("test client")
        self.calls: list[str] = []

    @property
    def closed(self) -> bool:
        return "close" in self.calls

    async def start(self) -> None:
        self.calls.append("start")

    async def close(self) -> None:
        self.calls.append("close")


class _Client(SessionClient[_Session]):
    def __init__(self) -> None:
        self._session = _Session()


async def test_a_session_client_starts_and_closes_its_session() -> None:
    client = _Client()
    async with client:
        assert client._session.calls == ["start"]
        assert not client.closed
    assert client._session.calls == ["start", "close"]
    assert client.closed


@pytest.mark.parametrize("cls", [kafkawire.Client, pulsarwire.Client, tubemqwire.Client])
def test_the_three_clients_are_session_clients(cls: type) -> None:
    assert issubclass(cls, SessionClient)
