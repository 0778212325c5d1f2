"""TableView: the latest value of each key of a topic, kept current by a reader in the background."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypedDict

from mqwire.common.contract import Deserializer
from mqwire.common.errors import MqwireError
from mqwire.common.lifecycle import AsyncResource, Lifecycle
from mqwire.common.options import build_config, check_positive, defaults, option, options_of
from pulsarwire.message import Message
from pulsarwire.options import ReaderConfig
from pulsarwire.reader import Reader
from pulsarwire.schema import Schema
from pulsarwire.session import Session

__all__ = ["TableView", "TableViewOptions"]

log = logging.getLogger(__name__)

Listener = Callable[[str, Any], object]


class TableViewOptions(TypedDict, total=False):
    """The options of ``client.table_view`` (see :class:`pulsarwire.TableView`), all optional.

    - ``value_deserializer`` — a callable applied to each value, as for readers; default None: bytes.
    - ``schema`` — a :class:`pulsarwire.schema.Schema` the view reads with (replaces ``value_deserializer``);
      default None (Java ``newTableView(Schema)``).
    - ``receiver_queue_size`` — messages each partition may deliver ahead; default 1000.
    - ``subscription_role_prefix`` — the start of the name of the reader's non-durable subscription; default
      ``"tableview"`` (Java ``subscriptionName``).
    - ``refresh_poll_interval`` — seconds between checks while ``refresh()`` waits to have read what the topic
      held when it was called; default 0.05.
    """

    value_deserializer: Deserializer | None
    schema: Schema[Any] | None
    receiver_queue_size: int
    subscription_role_prefix: str
    refresh_poll_interval: float


@options_of(TableViewOptions)
@dataclass(frozen=True)
class TableViewConfig:
    """The checked options of ``client.table_view``: the poll interval (seconds), and ``reader``, the
    config of the reader the view reads with, which checks the options the view passes on to it."""

    value_deserializer: Deserializer | None = option(None)
    schema: Schema[Any] | None = option(None)
    # The reader's own default, not a second one.
    receiver_queue_size: int = option(defaults(ReaderConfig)["receiver_queue_size"])
    subscription_role_prefix: str = option("tableview")
    refresh_poll_interval: float = option(0.05, check_positive)
    reader: ReaderConfig = field(init=False)

    def __post_init__(self) -> None:
        # The view reads every message the compacted topic keeps, from the earliest.
        passed = {
            "start": "earliest",
            "read_compacted": True,
            "value_deserializer": self.value_deserializer,
            "schema": self.schema,
            "receiver_queue_size": self.receiver_queue_size,
            "subscription_role_prefix": self.subscription_role_prefix,
        }
        object.__setattr__(self, "reader", build_config(ReaderConfig, "table_view", passed))


class TableView(AsyncResource):
    """The latest value of each key of ``topic``: ``async with client.table_view(topic) as table``.

    A reader of every partition from the earliest message (of the compacted topic where it is compacted)
    fills a dict keyed by each message's key (its ``partition_key``, a str, as in the Java client); a message
    with a null or empty value removes its key, and messages without a key are ignored. ``start`` (done by
    ``async with``) returns once the messages stored at that time are read; afterwards a task keeps reading,
    and listeners (``listen``, ``for_each_and_listen``) are called with ``(key, value)`` for every update.
    ``refresh()`` waits until the view holds everything published before the call.
    """

    def __init__(self, session: Session, topic: str, config: TableViewConfig) -> None:
        self._poll = config.refresh_poll_interval
        self._reader = Reader(session, topic, config.reader)
        self.topic = self._reader.topic
        self._data: dict[str, Any] = {}
        self._listeners: list[Listener] = []
        self._life = Lifecycle(f"table view of {self.topic}")
        self._affinity = session.affinity

    # ---------------------------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Read what the topic holds now, then keep reading in the background."""
        self._affinity.check()
        await self._life.start(self._begin)

    async def _begin(self) -> None:
        await self._reader.start()
        try:
            await self._catch_up()
        except BaseException:
            await self._reader.close()
            raise
        self._life.tasks.spawn(self._follow(), name=f"table view of {self.topic}")

    async def close(self) -> None:
        """Stop reading and close the reader; the view keeps the values it had (in a process forked after the
        client was made it does nothing: the reader is the parent's)."""
        if not self._affinity.may_close():
            return
        await self._life.close(self._close)

    async def _close(self) -> None:
        await self._life.tasks.cancel_all()
        await self._reader.close()

    async def _catch_up(self) -> None:
        reader = self._reader
        while await reader.has_message_available():
            for message in await reader.getmany(timeout=self._poll):
                self._apply(message)

    async def _follow(self) -> None:
        reader = self._reader
        while True:
            try:
                messages = await reader.getmany(timeout=1.0)
            except MqwireError as exc:
                if reader.closed:
                    return
                log.error("table view of %s: reading failed (%s); the view stops following", self.topic, exc)
                raise
            for message in messages:
                self._apply(message)

    def _apply(self, message: Message) -> None:
        key = message.partition_key
        if key is None:
            return
        value = None if message.null_value or not message.payload else message.value
        if value is None:
            self._data.pop(key, None)
        else:
            self._data[key] = value
        for listener in list(self._listeners):
            try:
                listener(key, value)
            except Exception:
                log.exception("table view of %s: a listener failed on key %r", self.topic, key)

    async def refresh(self) -> None:
        """Wait until every message published before this call is in the view (Java ``refreshAsync``)."""
        self._affinity.check()
        self._life.check_open()
        if not self._life.started:
            await self.start()
        while await self._reader.has_message_available():
            await asyncio.sleep(self._poll)

    # ---------------------------------------------------------------------------------- listeners
    def listen(self, action: Listener) -> None:
        """Call ``action(key, value)`` for every later update (``value`` None: the key was removed)."""
        if not callable(action):
            raise TypeError(f"a listener must be callable, not {type(action).__name__}")
        self._listeners.append(action)

    def for_each_and_listen(self, action: Listener) -> None:
        """Call ``action(key, value)`` for every entry now, then for every later update."""
        for key, value in list(self._data.items()):
            action(key, value)
        self.listen(action)

    # ---------------------------------------------------------------------------------- the mapping
    def get(self, key: str, default: Any = None) -> Any:
        """The latest value of ``key``, or ``default``."""
        return self._data.get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._data))

    def keys(self) -> list[str]:
        """The keys, as of now."""
        return list(self._data)

    def values(self) -> list[Any]:
        """The values, as of now."""
        return list(self._data.values())

    def items(self) -> list[tuple[str, Any]]:
        """The (key, value) pairs, as of now."""
        return list(self._data.items())

    def __repr__(self) -> str:
        return f"TableView(topic={self.topic!r}, keys={len(self._data)})"
