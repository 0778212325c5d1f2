"""Progress with a rate on stderr (only when it is a terminal) and the closing summary table."""

from __future__ import annotations

import sys
import time
from types import TracebackType

try:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
    from rich.table import Table
except ModuleNotFoundError as exc:  # pragma: no cover - exercised in a venv without the extra
    if exc.name is None or exc.name.partition(".")[0] != "rich":
        raise
    raise ModuleNotFoundError(
        "mqwire.cli.progress needs the 'cli' extra (rich is not installed): pip install 'mqwire[cli]'", name="rich"
    ) from None  # the one line that matters, without the chained traceback


class Meter:
    """Counts records and bytes; draws a live bar with the rate when stderr is a terminal."""

    def __init__(self, label: str, total: int | None = None, *, enabled: bool | None = None) -> None:
        self.console = Console(stderr=True)
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.label = label
        self.total = total
        self.count = 0
        self.bytes = 0
        self.started = time.monotonic()
        self.elapsed = 0.0
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> Meter:
        self.started = time.monotonic()
        if self.enabled:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=self.total, rate="")
        return self

    def add(self, records: int, size: int) -> None:
        self.count += records
        self.bytes += size
        if self._progress is not None and self._task is not None:
            rate = self.count / max(time.monotonic() - self.started, 1e-9)
            self._progress.update(self._task, completed=self.count, rate=f"{rate:,.0f} msg/s")

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.elapsed = time.monotonic() - self.started
        if self._progress is not None:
            self._progress.stop()

    def summary(self, title: str, **extra: str) -> None:
        """A table on stderr: records, bytes, seconds, rates, and anything else worth saying."""
        seconds = max(self.elapsed, 1e-9)
        table = Table(title=title, show_header=False)
        table.add_row("records", f"{self.count:,}")
        table.add_row("bytes", f"{self.bytes:,}")
        table.add_row("seconds", f"{self.elapsed:.2f}")
        table.add_row("records/s", f"{self.count / seconds:,.0f}")
        table.add_row("MB/s", f"{self.bytes / seconds / 1e6:,.2f}")
        for name, value in extra.items():
            table.add_row(name.replace("_", " "), value)
        self.console.print(table)
