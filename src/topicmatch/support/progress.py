"""The one progress reporter of every long command: benchmarks, ``generate``, ``route``.

Three uses, one object and one look:

* ``progress("building the matrix")`` logs a step: ``[label   12.3s] building the matrix``;
* ``progress.count(done, total, "messages")`` reports a counted loop: on a terminal one bar
  rewritten in place, elsewhere (a log file, CI) a line at every tenth of the way;
* ``progress.status(text)`` shows what a watcher thread polled (a Spark job's tasks and
  counts): rewritten in place on a terminal, a line per call elsewhere (the watcher sets the
  pace); :meth:`done` ends the in-place line.

Everything goes to one stream (stderr by default), flushed at once. A hand-written class rather
than ``tqdm`` or ``rich``: the reporters are called at most a few times a second (never in a hot
loop), so there is no cost to measure, and the core keeps no dependency.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """Steps, counts and polled status of one long command, on one stream (module docstring)."""

    def __init__(self, label: str, stream: TextIO | None = None, width: int = 30) -> None:
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.start = time.perf_counter()
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.width = width
        self._tenth = -1  # the last tenth of a count printed (not on a terminal)
        self._open = False  # an in-place line is on the terminal

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def __call__(self, message: str) -> None:
        self._print(f"[{self.label} {self.elapsed():6.1f}s] {message}", in_place=False)

    def count(self, done: int, total: int, unit: str) -> None:
        fraction = done / total if total else 1.0
        filled = int(fraction * self.width)
        line = (
            f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {fraction:4.0%} "
            f"{done:,}/{total:,} {unit}, {self.elapsed():.1f} s"
        )
        if self.tty:
            self._print(line, in_place=True)
            if done >= total:
                self.done()
        elif int(fraction * 10) > self._tenth:
            self._tenth = int(fraction * 10)
            self._print(line, in_place=False)

    def status(self, text: str) -> None:
        self._print(f"{self.label}: {text}, {self.elapsed():.0f} s", in_place=self.tty)

    def done(self) -> None:
        """End an in-place line (a no-op when there is none)."""
        if self._open:
            print(file=self.stream, flush=True)
            self._open = False

    def _print(self, line: str, in_place: bool) -> None:
        if in_place:
            print(f"\r\033[K{line}", end="", file=self.stream, flush=True)
            self._open = True
        else:
            self.done()
            print(line, file=self.stream, flush=True)
