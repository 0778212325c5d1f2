"""Work on every node of a cluster at once: one thread per node, the first failure raised after all ended."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

__all__ = ["each_in_parallel"]


def each_in_parallel(work: Callable[[T], object], items: Iterable[T]) -> None:
    """Run ``work(item)`` for every item in a thread of its own; raise the first failure after all ended."""
    errors: list[BaseException] = []

    def run(item: T) -> None:
        try:
            work(item)
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=run, args=(item,)) for item in items]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
