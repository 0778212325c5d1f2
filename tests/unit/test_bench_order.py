"""The benchmark suite's running order: every client in every place and after every other client."""

from __future__ import annotations

import itertools
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from suite import round_order


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 7, 8])
def test_over_a_full_square_each_place_and_each_predecessor_comes_equally_often(count: int) -> None:
    clients = [f"client{i}" for i in range(count)]
    rounds = 2 * count if count % 2 else count
    places: Counter[tuple[str, int]] = Counter()
    follows: Counter[tuple[str, str]] = Counter()
    for turn in range(rounds):
        order = round_order(clients, turn)
        assert sorted(order) == clients
        places.update((client, place) for place, client in enumerate(order))
        follows.update(itertools.pairwise(order))
    assert set(places.values()) == {rounds // count}
    assert len(places) == count * count
    if count > 1:
        assert len(follows) == count * (count - 1)
        assert len(set(follows.values())) == 1


def test_a_few_rounds_already_vary_each_clients_predecessor() -> None:
    # Five clients over five rounds (a plain rotation would put the same one before each client every time).
    clients = list("abcde")
    before_a = {order[order.index("a") - 1] for order in (round_order(clients, t) for t in range(5)) if order[0] != "a"}
    assert len(before_a) >= 3
