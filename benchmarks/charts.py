"""The performance page's charts: ours over each reference peer, records/s at saturation, one bar per setting
(defaults, tuned) and event loop, drawn with matplotlib from the ratios ``suite.py --readme`` computes.

A bar's length is a ratio of medians; the axis is logarithmic so that 2x and 0.5x are as far from parity, which
a dashed line marks. A peer that runs on the caller's event loop (aiokafka, pulsar-client's asyncio API) is
compared with ours on the same loop; one with threads of its own (confluent-kafka, pulsar-client, the Java
TubeMQ client) with ours on each loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Ratio:
    """Our records/s (and CPU per record) over a peer's, medians of one setting's rounds."""

    settings: str  # "defaults" or "tuned"
    system: str
    size: int
    partitions: int
    phase: str  # produce or consume (saturation)
    peer: str
    loop: str  # the loop ours ran on
    rate: float
    cpu: float | None


# One colour per setting and loop, the same in every chart: the defaults (the headline) dark, tuned light.
COLOURS = {
    ("defaults", "asyncio"): "#1f4e99",
    ("defaults", "uvloop"): "#2ca02c",
    ("tuned", "asyncio"): "#8fb3e8",
    ("tuned", "uvloop"): "#a8dca8",
}


def _case(ratio: Ratio) -> tuple[str, int, int]:
    return ratio.phase, ratio.size, ratio.partitions


def _size(size: int) -> str:
    return f"{size // 1024} KB" if size >= 1024 else f"{size} B"


def draw(ratios: list[Ratio], system: str, path: Path) -> Path:
    """One PNG for ``system``: a panel per peer, a group of bars per phase, size and partition count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    mine = [r for r in ratios if r.system == system]
    peers = list(dict.fromkeys(r.peer for r in mine))
    cases = sorted({_case(r) for r in mine}, key=lambda c: (c[0] != "produce", c[1], c[2]))
    kinds = [kind for kind in COLOURS if any((r.settings, r.loop) == kind for r in mine)]
    figure, axes = plt.subplots(1, len(peers), figsize=(6.2 * len(peers), 0.55 * len(cases) * len(kinds) + 1.6),
                                squeeze=False, sharey=True)
    height = 0.8 / len(kinds)
    for axis, peer in zip(axes[0], peers, strict=True):
        found = {(_case(r), r.settings, r.loop): r.rate for r in mine if r.peer == peer}
        for k, kind in enumerate(kinds):
            places = [c + k * height for c in range(len(cases))]
            values = [found.get((case, *kind), 0.0) for case in cases]
            # From parity to the ratio: to the right where ours is ahead, to the left where the peer is.
            bars = axis.barh(places, [v - 1.0 if v else 0.0 for v in values], height, left=1.0,
                             color=COLOURS[kind], label=f"{kind[0]}, {kind[1]}")
            axis.bar_label(bars, labels=[f"{v:.2f}x" if v else "" for v in values], fontsize=7, padding=2)
        axis.axvline(1.0, color="black", linestyle="--", linewidth=0.8)
        axis.set_xscale("log", base=2)
        axis.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}x"))
        axis.set_xlabel(f"ours / {peer}, records/s")
        axis.set_title(f"{system}: ours / {peer}")
        axis.set_yticks([c + 0.4 - height / 2 for c in range(len(cases))])
        axis.set_yticklabels([f"{phase} {_size(size)} x{parts}" for phase, size, parts in cases])
        axis.margins(x=0.15)
    axes[0][0].invert_yaxis()  # the first case on top (the panels share the axis: once for all)
    axes[0][-1].legend(fontsize="small", loc="lower right")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=80)
    plt.close(figure)
    return path


def draw_all(ratios: list[Ratio], folder: Path) -> list[Path]:
    """A chart per system among ``ratios`` in ``folder`` (``ratios-SYSTEM.png``)."""
    systems = list(dict.fromkeys(r.system for r in ratios))
    return [draw(ratios, system, folder / f"ratios-{system}.png") for system in systems]
