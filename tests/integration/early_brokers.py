"""Brokers of the tests' own, started in the background once the session knows a test of it will want them.

A TubeMQ takes about 40 s to start, most of it the master's fixed waits while the broker goes online (constants of
the server, not settings), not work. Started when the first integration test sets up, such a broker is ready by
the time the test that wants it comes, instead of holding the run up for those 40 s. A broker no collected test
wants is never started; one that fails to start fails the test that wants it, with the launcher's error.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from pathlib import Path

from tests.integration.crash import START_TIMEOUT, OwnBroker

Factory = Callable[[Path], OwnBroker]


class EarlyBroker:
    """One ``OwnBroker``, its ``start`` run in a thread of its own from ``begin`` on."""

    def __init__(self, broker: OwnBroker) -> None:
        self.broker = broker
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, name=f"early-{broker.name}", daemon=True)

    @property
    def begun(self) -> bool:
        """Whether its start was begun."""
        return self._thread.ident is not None

    def begin(self) -> None:
        """Start the broker in the background."""
        self._thread.start()

    def _start(self) -> None:
        try:
            self.broker.start()
        except BaseException as error:  # told to the test that wants the broker, in its thread
            self._error = error

    def ready(self) -> OwnBroker:
        """The broker, once started: waits for the start (bounded as the launcher's own), raises its failure."""
        if not self.begun:
            self.begin()  # not begun (the session did not know of its test): started now, as before
        self._thread.join(START_TIMEOUT + 30)
        if self._thread.is_alive():
            raise AssertionError(f"{self.broker.name} in {self.broker.state_dir} not started in {START_TIMEOUT} s")
        if self._error is not None:
            raise self._error
        return self.broker


class EarlyBrokers:
    """The session's early brokers by the name of the fixture that hands each out."""

    def __init__(self, factories: dict[str, Factory], folder: Path) -> None:
        self._factories = factories
        self._folder = folder
        self._made: dict[str, EarlyBroker] = {}

    def begin(self, wanted: set[str]) -> None:
        """Start, in the background, the brokers whose fixture names are in ``wanted``."""
        for name in sorted(wanted & self._factories.keys()):
            self._get(name).begin()

    def ready(self, name: str) -> OwnBroker:
        """The broker of fixture ``name``, started (or being started) once per session."""
        return self._get(name).ready()

    def _get(self, name: str) -> EarlyBroker:
        if name not in self._made:
            self._made[name] = EarlyBroker(self._factories[name](self._folder / name / "state"))
        return self._made[name]

    def stop_all(self) -> None:
        """Stop every broker begun (a start under way is waited for first, so that nothing is left running)."""
        for early in self._made.values():
            if early.begun:
                with contextlib.suppress(BaseException):
                    early.ready()
                early.broker.stop()
