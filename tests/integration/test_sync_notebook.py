"""The blocking API in a Jupyter notebook, run by a real kernel (ipykernel, through nbclient): a notebook's own
event loop already runs in the main thread, which is where ``asyncio.run`` refuses to work and where the blocking
clients must. One notebook produces and consumes with each of the three systems against the real brokers."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from mqwire.testing.endpoints import KafkaBroker, PulsarBroker, TubeMQBroker
from mqwire.testing.tubemq_spares import FreshTopics

pytestmark = pytest.mark.integration

FIRST_CELL = """
import asyncio
# The kernel's loop runs in this thread while the cell runs: asyncio.run() would refuse here.
print("loop running:", asyncio.get_event_loop().is_running())
"""

SYSTEM_CELL = """
import {module}.sync

with {module}.sync.connect({url!r}{connect_options}) as client:
    with client.consumer({topic!r}, group={group!r}, start="earliest") as consumer:
        with client.producer({topic!r}) as producer:
            receipt = producer.send(b"from the notebook", key=b"k", headers={{"h": b"v"}})
            futures = [producer.enqueue(b"enqueued %d" % i) for i in range(3)]
            producer.flush(timeout=30)
        messages = [consumer.receive(timeout={first_wait}) for _ in range(4)]
        for message in messages:
            consumer.ack(message)
        values = sorted(message.value for message in messages)
print("{name} read:", values)
"""


# nbformat and nbclient declare no types: their calls are made through these typed names.
new_notebook: Callable[[], Any] = nbformat.v4.new_notebook
new_code_cell: Callable[[str], Any] = nbformat.v4.new_code_cell


def _output(cell: Any) -> str:
    return "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")


def test_a_notebook_produces_and_consumes_with_each_system(
    kafka_broker: KafkaBroker,
    pulsar_broker: PulsarBroker,
    tubemq_broker: TubeMQBroker,
    tubemq_fresh_topics: FreshTopics,
    tmp_path: Path,
) -> None:
    tubemq_topic = tubemq_fresh_topics.take({"notebook": 1})["notebook"]
    systems = [
        ("kafka", "kafkawire", kafka_broker.url, f"notebook-{secrets.token_hex(4)}", "", 30),
        ("pulsar", "pulsarwire", pulsar_broker.url, f"notebook-{secrets.token_hex(4)}", "", 30),
        ("tubemq", "tubemqwire", tubemq_broker.url, tubemq_topic, ", heartbeat_interval_ms=1000", 60),
    ]
    notebook = new_notebook()
    notebook.cells.append(new_code_cell(FIRST_CELL))
    for name, module, url, topic, options, wait in systems:
        source = SYSTEM_CELL.format(
            module=module, url=url, topic=topic, group=f"notebook_{secrets.token_hex(4)}",
            connect_options=options, first_wait=wait, name=name,
        )
        notebook.cells.append(new_code_cell(source))
    runner = NotebookClient(
        notebook, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    runner.execute()  # a cell that raises fails here, with the cell and its traceback
    assert _output(notebook.cells[0]).strip() == "loop running: True"
    expected = sorted([b"from the notebook", b"enqueued 0", b"enqueued 1", b"enqueued 2"])
    for cell, (name, *_) in zip(notebook.cells[1:], systems, strict=True):
        assert _output(cell).strip() == f"{name} read: {expected!r}", _output(cell)
