"""Experiment 3: memory per subscription after 1k, 10k, 100k and 1M subscriptions.

Measured with ``tracemalloc``: the Python heap allocated while the subscriptions are added, divided
by their number. The inputs (pattern strings, subscriber ints) are created before measuring, so
the figure is the structure's own cost, as a user who already holds the strings pays it. Each
algorithm stops at the first size whose build would take longer than the budget, extrapolated
from the previous size with its measured growth; the report says where and why. The inverted
bitmap's topic space is 1,000 topics of the same distribution.
"""

from __future__ import annotations

import gc
import math
import time
import tracemalloc
from pathlib import Path
from typing import Any

from .._matcher import Matcher
from .._workloads import realistic
from . import charts
from .report import Progress, Report, fmt_int

__all__ = ["run"]

ALGORITHMS = ("naive", "inverted_bitmap", "optimized_bitmap", "trie", "cstrie", "default")


def _build(
    algorithm: str, patterns: list[str], subscribers: list[int], space: list[str]
) -> tuple[int, float]:
    options: dict[str, Any] = {"topics": space} if algorithm == "inverted_bitmap" else {}
    gc.collect()
    tracemalloc.start()
    start = time.perf_counter()
    before = tracemalloc.get_traced_memory()[0]
    m = Matcher(algorithm, **options)
    for pattern, subscriber in zip(patterns, subscribers, strict=True):
        m.subscribe(pattern, subscriber)
    elapsed = time.perf_counter() - start
    size = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del m
    return size, elapsed


def run(out: Path, repeat: int, quick: bool, progress: Progress) -> Path:
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000, 1_000_000)
    budget = 10.0 if quick else 240.0  # seconds for one build, at most
    patterns, space = realistic(sizes[-1], 1000, seed=3)
    subscribers = list(range(10_000, 10_000 + sizes[-1]))  # ints above the small-int cache
    report = Report("memory", out, "Memory per subscription", {"sizes": sizes, "build_budget_s": budget})
    table: dict[str, dict[int, str]] = {}
    per_sub: dict[str, list[float | None]] = {}
    for algorithm in ALGORITHMS:
        table[algorithm], per_sub[algorithm] = {}, []
        previous: tuple[int, float] | None = None
        growth = 1.0
        for n in sizes:
            if previous is not None:
                last_n, last_time = previous
                # Growth measured between the last two sizes (at least linear) predicts the next.
                projected = last_time * (n / last_n) ** growth
                if projected > budget:
                    table[algorithm][n] = f"not measured: build projected at {projected:,.0f} s"
                    per_sub[algorithm].append(None)
                    continue
            progress(f"{algorithm} {n:,}")
            size, elapsed = _build(algorithm, patterns[:n], subscribers[:n], space)
            if previous is not None:
                growth = max(
                    1.0, math.log(max(elapsed, 1e-9) / max(previous[1], 1e-9)) / math.log(n / previous[0])
                )
            previous = (n, elapsed)
            table[algorithm][n] = f"{size / n:,.0f} B ({elapsed:.1f} s)"
            per_sub[algorithm].append(size / n)
            report.result(
                f"{algorithm}/{n}", {"bytes": size, "bytes_per_subscription": size / n, "build_s": elapsed}
            )
    report.text(__doc__ or "")
    report.text(
        f"Unique patterns: {len(set(patterns)):,} of {len(patterns):,}. Cells: bytes per subscription "
        "(tracemalloc) and the build time under tracemalloc, which slows allocation down."
    )
    report.table(
        ["algorithm", *(fmt_int(n) for n in sizes)], [[a, *(table[a][n] for n in sizes)] for a in ALGORITHMS]
    )
    fig = charts.lines(
        list(sizes), per_sub, "subscriptions", "bytes per subscription", "memory", logx=True, logy=True
    )
    report.chart("memory", fig, "Bytes per subscription by number of subscriptions (log-log)")
    return report.write()
