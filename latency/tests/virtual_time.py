"""A virtual clock for the load generator: time that moves by steps, never by this machine's load.

The generator's own logic (schedule, catch-up, the three views, the interval log, when a run
ends) is what the stall self-test and the full-throttle tests check. On the real clock a
shared machine adds stalls of its own, as long as the one a test injects (300 ms was seen at
load 8 on 2 cores), and no bound on a latency can tell the two apart. Here time moves only
when the code under test sleeps (by exactly what it asked for) and by :attr:`VirtualClock.tick`
at each reading of the clock, so every run is the same run: its latencies are counted steps,
and exact.

:func:`use_virtual_clock` puts the clock under :mod:`topicmatch_latency._load` and
:mod:`topicmatch_latency._processes` (the blocking loop, the asyncio loop and the start time)
for one test; a requester reads and sleeps on the same clock (the ``clock`` attribute of the
stall self-test's requesters). It runs one load process only (``processes=1``).
"""

from __future__ import annotations

import asyncio
import selectors
import time
from typing import Any

import pytest

from topicmatch_latency import _load, _processes

NS = 1_000_000_000


class VirtualClock:
    """Monotonic nanoseconds that move by :meth:`sleep` and by ``tick`` ns at each reading."""

    def __init__(self, tick: int = 1_000) -> None:
        self.now = 1_000 * NS
        self.tick = tick

    def monotonic_ns(self) -> int:
        self.now += self.tick
        return self.now

    def monotonic(self) -> float:
        return self.monotonic_ns() / NS

    def sleep(self, seconds: float) -> None:
        self.now += max(0, round(seconds * NS))

    # What the generator reads besides its clock: CPU time and the epoch, both real.
    process_time = staticmethod(time.process_time)
    time_ns = staticmethod(time.time_ns)


class _Selector(selectors.SelectSelector):
    """Waits for a timer pass at once, on the virtual clock; waits for I/O alone (the event
    loop's wake-up from a thread) are real."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__()
        self.clock = clock

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:
            return super().select(None)
        self.clock.sleep(timeout)
        return super().select(0)


class _Loop(asyncio.SelectorEventLoop):
    """An asyncio loop on the virtual clock: ``asyncio.sleep`` takes no real time."""

    def __init__(self, clock: VirtualClock) -> None:
        super().__init__(_Selector(clock))
        self.clock = clock

    def time(self) -> float:
        return self.clock.now / NS


def use_virtual_clock(monkeypatch: pytest.MonkeyPatch, tick: int = 1_000) -> VirtualClock:
    """Run the load generator on a new :class:`VirtualClock` until the end of the test."""
    clock = VirtualClock(tick)
    virtual: Any = clock
    monkeypatch.setattr(_load, "time", virtual)
    monkeypatch.setattr(_processes, "time", virtual)
    monkeypatch.setattr(_load, "_select_loop", lambda: _Loop(clock))
    # A virtual sleep ends on time to the nanosecond: no busy-wait is needed before a due time
    # (on this clock it would only cost 200 readings a request).
    monkeypatch.setattr(_load, "SPIN_NS", 0)
    return clock
