"""Experiment 4: lookup time against the number of subscriptions, 1k to 1M, realistic topics.

Patterns and topics come from ``topicmatch._workloads.realistic``: 1-5 words drawn from a Zipf
distribution over 1,000 words, about 13 % of patterns with a wildcard (``*``, or a final ``#``).
Lookups go through ``Matcher.lookup`` with the result cache off, each call timed on its own
over a fixed sample of topics; the figure is the median per lookup. Algorithms that cannot scale
(the naive scan, the bitmaps) stop at the first size whose build or lookups exceed the budget.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from .._matcher import Matcher
from .._workloads import realistic
from . import charts
from .report import Progress, Report, fmt_int, fmt_ns
from .timing import clock_overhead_ns, median

__all__ = ["run"]


def _lookup_ns(lookup: Callable[[str], object], topics: list[str], overhead: int) -> list[int]:
    """One timed call per topic, in ns, the clock's own cost removed."""
    clock = time.perf_counter_ns
    out = []
    for topic in topics:
        t0 = clock()
        lookup(topic)
        out.append(max(0, clock() - t0 - overhead))
    return out


ALGORITHMS = ("naive", "optimized_bitmap", "trie", "cstrie", "default, no cache")


def run(out: Path, repeat: int, quick: bool, progress: Progress) -> Path:
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000, 1_000_000)
    budget = 20.0 if quick else 180.0
    lookups = 500 if quick else 3_000
    patterns, topics = realistic(sizes[-1], lookups, seed=5)
    overhead = clock_overhead_ns()
    report = Report(
        "scaling",
        out,
        "Lookup time by number of subscriptions",
        {"sizes": sizes, "lookups": lookups, "repeat": repeat},
    )
    medians: dict[str, list[float | None]] = {a: [] for a in ALGORITHMS}
    cells: dict[str, list[str]] = {a: [] for a in ALGORITHMS}
    for algorithm in ALGORITHMS:
        stopped = ""
        for n in sizes:
            if stopped:
                medians[algorithm].append(None)
                cells[algorithm].append(stopped)
                continue
            progress(f"{algorithm} {n:,}")
            start = time.perf_counter()
            m = Matcher(algorithm.split(",")[0], cache_size=0)
            for i, pattern in enumerate(patterns[:n]):
                m.subscribe(pattern, i)
            built = time.perf_counter() - start
            runs = []
            start = time.perf_counter()
            for _ in range(repeat):
                runs.append(median(_lookup_ns(m.lookup, topics, overhead)))
            looked = time.perf_counter() - start
            medians[algorithm].append(median(runs))
            cells[algorithm].append(f"{fmt_ns(median(runs))} (build {built:.1f} s)")
            report.result(f"{algorithm}/{n}", {"median_ns": median(runs), "runs": runs, "build_s": built})
            if built * 10 > budget or looked * 10 > budget:
                stopped = "not measured: the previous size took over a tenth of the budget"
            del m
    report.text(__doc__ or "")
    report.table(["algorithm", *(fmt_int(n) for n in sizes)], [[a, *cells[a]] for a in ALGORITHMS])
    fig = charts.lines(
        list(sizes), medians, "subscriptions", "median lookup (ns)", "scaling", logx=True, logy=True
    )
    report.chart("scaling", fig, "Median lookup time by number of subscriptions (log-log)")
    return report.write()
