"""The performance page's charts: the ratios they draw (ours over each reference peer, like compared with
like under each loop and setting) and the pictures ``suite.py --readme`` writes and links."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from charts import draw_all
from suite import (
    README_BEGIN,
    README_END,
    SUMMARY_BEGIN,
    SUMMARY_END,
    Row,
    headline_ratios,
    readme_summary,
    update_readme,
)


def _row(client: str, rate: float, settings: str = "tuned", phase: str = "produce") -> Row:
    return Row("kafka", 100, 1, client, phase, int(rate), 1.0, rate / 1e6, 50.0, settings=settings)


ROWS = [
    _row("kafkawire", 400_000), _row("kafkawire@uvloop", 600_000), _row("aiokafka", 50_000),
    _row("aiokafka@uvloop", 100_000), _row("confluent-kafka", 300_000), _row("kafkawire-bulk", 900_000),
    _row("kafkawire", 500_000, "defaults"), _row("confluent-kafka", 250_000, "defaults"),
    _row("kafkawire", 5_000, phase="produce@5000"), _row("confluent-kafka", 5_000, phase="produce@5000"),
]


def test_the_charts_compare_ours_with_each_peer_like_with_like_at_saturation() -> None:
    found = {(r.settings, r.peer, r.loop): round(r.rate, 2) for r in headline_ratios(ROWS)}
    assert found == {
        ("tuned", "confluent-kafka", "asyncio"): 1.33,  # a peer with threads of its own: ours on each loop
        ("tuned", "confluent-kafka", "uvloop"): 2.0,
        ("tuned", "aiokafka", "asyncio"): 8.0,  # a peer on the caller's loop: ours on the same loop
        ("tuned", "aiokafka", "uvloop"): 6.0,
        ("defaults", "confluent-kafka", "asyncio"): 2.0,
    }  # no fixed-rate phase, no kafkawire-bulk, no ratio of ours over ours


def _charting() -> None:
    # matplotlib comes with the benchmark tools (the dev extra), not with the runtime environments of the
    # interpreter matrix, which run the unit tests too.
    pytest.importorskip("matplotlib", reason="the benchmark tools are not installed in this environment")


def test_the_performance_page_links_a_chart_per_system_drawn_from_the_results(tmp_path: Path) -> None:
    _charting()
    results = tmp_path / "bench.json"
    results.write_text(json.dumps([asdict(r) for r in ROWS]), encoding="utf-8")
    page = tmp_path / "performance.md"
    page.write_text(f"# Performance\n\n{README_BEGIN}\nold\n{README_END}\n", encoding="utf-8")
    readme = tmp_path / "README.md"
    readme.write_text(f"# mqwire\n\n{SUMMARY_BEGIN}\nold\n{SUMMARY_END}\n", encoding="utf-8")
    update_readme([results], page, readme)
    assert "| Kafka | 100 B | confluent-kafka | 2.00x | - | - | - |" in readme.read_text(encoding="utf-8")
    text = page.read_text(encoding="utf-8")
    assert "![kafka: ours over each peer](_static/ratios-kafka.png)" in text and "old" not in text
    chart = tmp_path / "_static" / "ratios-kafka.png"
    assert chart.read_bytes().startswith(b"\x89PNG")


def test_a_chart_per_system(tmp_path: Path) -> None:
    _charting()
    pulsar = [Row("pulsar", 100, 1, c, "consume", 1000, 1.0, 0.001, 50.0) for c in ("pulsarwire", "pulsar-client")]
    drawn = draw_all(headline_ratios([*ROWS, *pulsar]), tmp_path)
    assert [p.name for p in drawn] == ["ratios-kafka.png", "ratios-pulsar.png"]


def test_the_readme_summary_shows_the_defaults_on_each_loop_beside_each_other() -> None:
    rows = [*ROWS, _row("kafkawire@uvloop", 750_000, "defaults"), _row("aiokafka", 100_000, "defaults")]
    lines = readme_summary(headline_ratios(rows)).splitlines()
    assert lines[0] == "| system | size | ours over | produce x1 | produce x8 | consume x1 | consume x8 |"
    assert lines[2:] == [
        "| Kafka | 100 B | confluent-kafka | 2.00x / 3.00x | - | - | - |",
        "| Kafka | 100 B | aiokafka | 5.00x | - | - | - |",
    ]
