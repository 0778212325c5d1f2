"""Ctrl-C for tests that check how blocking calls take it.

A test presses Ctrl-C the way a terminal does: SIGINT to the main thread, from another thread, while the main
thread waits in the call under test. Two things can lose a single SIGINT, and a lost one leaves the call waiting
forever: a process started in the background (``nohup``, ``&``, a pool of workers) has SIGINT ignored; and a
``KeyboardInterrupt`` raised while the main thread happens to run a finalizer (``__del__``, a weakref callback,
which the collector may run at any moment) is printed and dropped. So SIGINT is sent again every fraction of a
second for as long as the call is under way, and the handler raises only then, at most once a second (so that
the call's own handling of the first is not itself interrupted).
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator
from types import FrameType

__all__ = ["CtrlC", "ctrl_c_after"]

REPEAT = 0.2  # seconds between two presses while the call is under way
RETRY = 1.0  # seconds after a raised KeyboardInterrupt before the next press raises one again


class CtrlC:
    """Presses of Ctrl-C that raise ``KeyboardInterrupt`` only inside ``with ctrl_c.armed():``."""

    def __init__(self) -> None:
        self._armed = False
        self._raised_at = -RETRY

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        """The call under test: a press raises here, and is ignored once the call has ended."""
        self._armed = True
        try:
            yield
        finally:
            self._armed = False

    def handle(self, signum: int, frame: FrameType | None) -> None:
        """The SIGINT handler while the test lasts."""
        now = time.monotonic()
        if self._armed and now - self._raised_at >= RETRY:
            self._raised_at = now
            raise KeyboardInterrupt


@contextlib.contextmanager
def ctrl_c_after(started: threading.Event, delay: float = 0.0, limit: float = 60.0) -> Iterator[CtrlC]:
    """Press Ctrl-C in the main thread once ``started`` is set (and ``delay`` seconds more), again every
    ``REPEAT`` seconds while the call under ``armed()`` is under way, until the block ends."""
    main = threading.main_thread().ident
    assert main == threading.get_ident(), "SIGINT is handled in the main thread: the test must run there"
    ctrl_c = CtrlC()
    done = threading.Event()

    def press() -> None:
        if not started.wait(limit) or done.wait(delay):
            return
        while not done.is_set():
            signal.pthread_kill(main, signal.SIGINT)
            done.wait(REPEAT)

    previous = signal.signal(signal.SIGINT, ctrl_c.handle)
    presser = threading.Thread(target=press, name="ctrl-c")
    presser.start()
    try:
        yield ctrl_c
    finally:
        done.set()
        presser.join()
        signal.signal(signal.SIGINT, previous)
