"""The benchmark suite's event loops: each asyncio-based client runs under asyncio's loop and under uvloop as
clients of their own, the ratio table says what uvloop gives each, and the docs' table labels settings and loops."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import uvloop

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import clients
from measure import Clock, Latencies, Pace
from suite import Plan, Row, Setting, clients_of, readme_table, report


def _plan(loops: tuple[str, ...], only: set[str] | None = None) -> Plan:
    return Plan(["kafka"], only, 0.01, (100,), 1, 0.3, loops)


def test_each_asyncio_based_client_runs_under_each_loop_and_the_others_once() -> None:
    every = clients_of("kafka", _plan(("asyncio", "uvloop")))
    for client in ("kafkawire", "kafkawire-bulk", "kafkawire-group", "kafkawire-share", "aiokafka"):
        assert every.count(client) == 1 and every.count(f"{client}@uvloop") == 1
    for client in ("confluent-kafka", "kafka-python", "kafkawire-sync", "kafka-java-perf"):
        assert every.count(client) == 1 and f"{client}@uvloop" not in every
    assert clients_of("kafka", _plan(("asyncio",))) == [c for c in every if "@" not in c]
    assert clients_of("pulsar", Plan(["pulsar"], None, 0.01, (100,), 1, 0.3, ("uvloop",))) == [
        "pulsarwire@uvloop", "pulsarwire-sync", "pulsar-client", "pulsar-client-asyncio@uvloop"]


def test_a_client_named_without_a_loop_is_run_under_each_and_with_one_under_that_one() -> None:
    assert clients_of("kafka", _plan(("asyncio", "uvloop"), {"kafkawire", "confluent-kafka"})) == [
        "kafkawire", "kafkawire@uvloop", "confluent-kafka"]
    assert clients_of("kafka", _plan(("asyncio", "uvloop"), {"aiokafka@uvloop"})) == ["aiokafka@uvloop"]


def test_names_with_a_loop_make_valid_groups_and_subscriptions() -> None:
    assert "@" not in Setting.subscription("pulsarwire@uvloop", 2)
    assert Setting.subscription("pulsarwire@uvloop", 2) != Setting.subscription("pulsarwire", 2)


def test_the_worker_runs_a_client_on_the_loop_its_name_gives(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[asyncio.AbstractEventLoop] = []

    async def produce(url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies,
                      pace: Pace) -> None:
        seen.append(asyncio.get_running_loop())
        clock.start()

    async def consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
        raise AssertionError("not a consume run")

    monkeypatch.setitem(clients.CLIENTS["kafka"], "probe", (produce, consume))
    for name in ("probe", "probe@uvloop"):
        assert clients.run("kafka", name, "produce", "kafka://x", "t", 5, 10)["records"] == 5
    plain, uv = seen
    assert not isinstance(plain, uvloop.Loop)
    assert isinstance(uv, uvloop.Loop)


def test_a_paced_sender_under_uvloop_sleeps_rather_than_spins(monkeypatch: pytest.MonkeyPatch) -> None:
    wakeups: list[int] = []

    async def produce(url: str, topic: str, count: int, value: bytes, clock: Clock, lat: Latencies,
                      pace: Pace) -> None:
        # The pacing loop's idle wait for 50 ms: about 50 wake-ups at uvloop's 1 ms timer step; a sleep under
        # that step is a timer of 0 ms, which wakes thousands of times (a busy core).
        loop = asyncio.get_running_loop()
        end = loop.time() + 0.05
        count = 0
        while loop.time() < end:
            await asyncio.sleep(pace.idle)
            count += 1
        wakeups.append(count)

    async def consume(url: str, topic: str, count: int, clock: Clock, group: str) -> None:
        raise AssertionError("not a consume run")

    monkeypatch.setitem(clients.CLIENTS["kafka"], "probe", (produce, consume))
    clients.run("kafka", "probe@uvloop", "produce", "kafka://x", "t", 5, 10, rate=1000.0)
    (count,) = wakeups
    assert count <= 200


def test_an_unknown_loop_is_a_clear_failure() -> None:
    with pytest.raises(RuntimeError, match="unknown event loop"):
        clients.run("kafka", "kafkawire@trio", "produce", "kafka://x", "t", 5, 10)


def _row(client: str, rate: float, settings: str = "tuned") -> Row:
    # rate records/s and 1 CPU µs per 1,000 records/s of rate, to tell the ratios apart
    return Row("kafka", 100, 1, client, "produce", 1000, 1000 / rate, rate * 1e-6, 50.0, settings=settings)


ROWS = [_row("kafkawire", 400_000), _row("kafkawire@uvloop", 600_000), _row("aiokafka", 50_000),
        _row("aiokafka@uvloop", 100_000), _row("confluent-kafka", 300_000)]


def test_the_ratio_table_says_what_uvloop_gives_each_client_and_ours_against_each_peer() -> None:
    text = report(ROWS)
    lines = [" ".join(line.split()) for line in text.splitlines()]

    def ratio(mine: str, peer: str) -> str:
        (line,) = [x for x in lines if f" {mine} / {peer} " in x]
        return line.split(f" {peer} ")[1].split()[0]

    assert ratio("kafkawire@uvloop", "kafkawire") == "1.50x"
    assert ratio("aiokafka@uvloop", "aiokafka") == "2.00x"
    assert ratio("kafkawire", "confluent-kafka") == "1.33x"
    assert ratio("kafkawire@uvloop", "confluent-kafka") == "2.00x"
    assert ratio("kafkawire", "aiokafka") == "8.00x"
    assert ratio("kafkawire@uvloop", "aiokafka@uvloop") == "6.00x"
    # An asyncio-based peer is compared with ours on its own loop only.
    assert not [x for x in lines if " kafkawire@uvloop / aiokafka " in x or " kafkawire / aiokafka@uvloop " in x]


def test_the_docs_table_labels_settings_and_loops_and_compares_like_with_like() -> None:
    rows = [*ROWS, _row("kafkawire", 500_000, "defaults"), _row("confluent-kafka", 250_000, "defaults")]
    table = readme_table(rows).splitlines()
    assert table[0].startswith("| settings | system | size | parts | phase | client | loop |")
    cells = {tuple(c.strip() for c in line.strip("|").split("|")[:7]): line.rsplit("|", 2)[1].strip()
             for line in table[2:]}
    base = ("kafka", "100 B", "1", "produce")
    assert cells[("tuned", *base, "confluent-kafka", "own threads")] == "asyncio 1.33x, uvloop 2.00x"
    assert cells[("tuned", *base, "aiokafka", "uvloop")] == "6.00x"
    assert cells[("tuned", *base, "aiokafka", "asyncio")] == "8.00x"
    assert cells[("defaults", *base, "confluent-kafka", "own threads")] == "asyncio 2.00x"
    assert cells[("tuned", *base, "kafkawire", "uvloop")] == ""


def test_rows_of_one_kind_keep_the_docs_table_in_its_first_form() -> None:
    table = readme_table([_row("kafkawire", 400_000), _row("confluent-kafka", 200_000)]).splitlines()
    assert table[0] == "| system | size | parts | phase | client | records/s | CPU µs/rec | p99 ms | vs ours |"
    assert table[2] == "| kafka | 100 B | 1 | produce | confluent-kafka | 200,000 | 200.00 | - | 2.00x |"
