"""Experiment 3: memory per subscription after 1k, 10k, 100k and 1M subscriptions.

Measured with ``tracemalloc`` in a forked child per algorithm and size: the child generates its
inputs (they are not counted: the pattern strings are the caller's), starts tracing, adds the
subscriptions, collects garbage and reads the traced memory; that, divided by the number of
subscriptions, is the figure. tracemalloc counts the bytes Python allocated, exactly, at any
size (a resident-memory difference is below the resolution of pages and allocator arenas at
small sizes, and read 0 B); allocator slack is not in it. Tracing slows a build down 2-3x: the
build times in the table are under tracemalloc. Each algorithm stops at the first size whose
build would exceed the time budget, extrapolated from the previous size with its measured
growth; the report says where. The inverted bitmap's topic space is 1,000 topics of the same
distribution.
"""

from __future__ import annotations

import gc
import math
import os
import pickle
import time
import tracemalloc
from pathlib import Path
from typing import Any

from .. import Matcher
from . import charts
from .report import Progress, Report, fmt_int
from .shapes import realistic

__all__ = ["run"]

ALGORITHMS = ("naive", "inverted_bitmap", "optimized_bitmap", "trie", "cstrie", "default")
#: Largest size per algorithm, beyond which a build takes minutes on the reference machine
#: (inverted_bitmap: 158 s at 1M; optimized_bitmap: 107 s; cstrie: 109 s, under tracemalloc).
MAX_SIZE = {"inverted_bitmap": 100_000, "optimized_bitmap": 100_000, "cstrie": 100_000}


def _measure_in_child(algorithm: str, n: int) -> tuple[int, float, int]:
    patterns, space = realistic(n, 1000, seed=3)
    subscribers = list(range(10_000, 10_000 + n))  # ints above the small-int cache
    options: dict[str, Any] = {"topics": space} if algorithm == "inverted_bitmap" else {}
    gc.collect()
    tracemalloc.start()
    start = time.perf_counter()
    m = Matcher(algorithm, **options)
    for pattern, subscriber in zip(patterns, subscribers, strict=True):
        m.subscribe(pattern, subscriber)
    elapsed = time.perf_counter() - start
    gc.collect()
    size = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return size, elapsed, len(set(patterns))


def _build(algorithm: str, n: int, timeout: float) -> tuple[int, float, int] | None:
    """Run the measurement in a forked child; None if it did not finish within ``timeout``."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: measure, report through the pipe, exit without cleanup
        try:
            os.close(read)
            os.write(write, pickle.dumps(_measure_in_child(algorithm, n)))
        finally:
            os._exit(0)
    os.close(write)
    deadline = time.monotonic() + timeout
    chunks = []
    try:
        while time.monotonic() < deadline:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return None
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
    finally:
        os.close(read)
    return pickle.loads(b"".join(chunks)) if chunks else None


def run(out: Path, repeat: int, quick: bool, progress: Progress) -> Path:
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000, 1_000_000)
    budget = 10.0 if quick else 120.0  # seconds for one build, at most
    report = Report(
        "memory", out, "Memory per subscription (tracemalloc)", {"sizes": sizes, "build_budget_s": budget}
    )
    table: dict[str, dict[int, str]] = {}
    per_sub: dict[str, list[float | None]] = {}
    unique: dict[int, int] = {}
    for algorithm in ALGORITHMS:
        table[algorithm], per_sub[algorithm] = {}, []
        previous: tuple[int, float] | None = None
        growth = 1.0
        for n in sizes:
            if n > MAX_SIZE.get(algorithm, n):
                table[algorithm][n] = "not run (see MAX_SIZE)"
                per_sub[algorithm].append(None)
                continue
            projected = previous[1] * (n / previous[0]) ** growth if previous else 0.0
            if projected > budget:
                table[algorithm][n] = f"not measured: build projected at {projected:,.0f} s"
                per_sub[algorithm].append(None)
                continue
            progress(f"{algorithm} {n:,}")
            measured = _build(algorithm, n, timeout=3 * budget)
            if measured is None:
                table[algorithm][n] = f"not measured: the build took over {3 * budget:,.0f} s"
                per_sub[algorithm].append(None)
                previous = (n, 3 * budget)
                continue
            size, elapsed, unique[n] = measured
            if previous is not None:
                ratio = max(elapsed, 1e-9) / max(previous[1], 1e-9)
                growth = max(1.0, math.log(ratio) / math.log(n / previous[0]))
            previous = (n, elapsed)
            table[algorithm][n] = f"{size / n:,.0f} B ({elapsed:.1f} s)"
            per_sub[algorithm].append(size / n)
            report.result(
                f"{algorithm}/{n}",
                {"traced_bytes": size, "bytes_per_subscription": size / n, "build_s": elapsed},
            )
    report.text(__doc__ or "")
    report.text(
        "Distinct patterns per size: "
        + ", ".join(f"{fmt_int(u)} of {fmt_int(n)}" for n, u in sorted(unique.items()))
        + ". Cells: bytes per subscription (traced), and the build time under tracemalloc."
    )
    report.table(
        ["algorithm", *(fmt_int(n) for n in sizes)], [[a, *(table[a][n] for n in sizes)] for a in ALGORITHMS]
    )
    fig = charts.lines(
        list(sizes),
        per_sub,
        "subscriptions",
        "bytes per subscription",
        "Memory per subscription by number of subscriptions (realistic patterns)",
        logx=True,
    )
    report.chart("memory", fig, "Bytes per subscription (tracemalloc) by number of subscriptions (log x)")
    return report.write()
