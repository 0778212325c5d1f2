"""The interface of a SASL mechanism's client side, sans-IO: the messages it gives and the server's it takes."""

from __future__ import annotations


class Mechanism:
    """One authentication: ``first()`` gives the first message, ``answer(challenge)`` the next ones
    (None when done); ``finish(final)`` checks the server's last word where the mechanism has one."""

    def first(self) -> bytes:
        raise NotImplementedError

    def answer(self, challenge: bytes) -> bytes | None:
        return None

    def heavy(self, challenge: bytes) -> bool:
        """Whether ``answer(challenge)`` is CPU work long enough to run off the event loop."""
        return False

    def finish(self, final: bytes) -> None:
        return None

    @property
    def said_last(self) -> bool:
        """Whether the message last given was the client's last one, the server's reply only to be checked
        by ``finish`` (true of every mechanism that answers at most once)."""
        return True
