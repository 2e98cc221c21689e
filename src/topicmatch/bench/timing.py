"""Timing helpers: medians of repeated runs and per-call nanosecond samples.

Per-call samples come from ``time.perf_counter_ns`` around each call; the clock's own cost
(two calls back to back, measured the same way) is subtracted so that a fast operation is not
reported as slower than it is. Medians, never means: one descheduling on a shared machine can
move a mean by orders of magnitude.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence

__all__ = ["clock_overhead_ns", "median", "per_call_ns", "rate"]


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def clock_overhead_ns(samples: int = 20_000) -> int:
    """The median cost of reading the clock twice, to subtract from per-call samples."""
    clock = time.perf_counter_ns
    deltas = []
    for _ in range(samples):
        t0 = clock()
        deltas.append(clock() - t0)
    deltas.sort()
    return deltas[len(deltas) // 2]


def per_call_ns(call: Callable[[], object], count: int, overhead: int) -> list[int]:
    """``count`` samples of one call's duration in ns, clock overhead removed (floored at 0)."""
    clock = time.perf_counter_ns
    out = []
    for _ in range(count):
        t0 = clock()
        call()
        out.append(clock() - t0)
    return [max(0, d - overhead) for d in out]


def rate(run: Callable[[], object], items: int, repeat: int) -> list[float]:
    """Items per second of ``run()``, once per repeat after one warm-up run."""
    run()
    rates = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run()
        rates.append(items / (time.perf_counter() - t0))
    return rates
