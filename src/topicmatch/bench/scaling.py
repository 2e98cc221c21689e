"""Experiment 4: lookup time against the number of subscriptions, 1k to 1M, realistic topics.

Patterns and topics come from ``topicmatch.bench.shapes.realistic``: 1-5 words drawn from a Zipf
distribution over 1,000 words, about 13 % of patterns with a wildcard (``*``, or a final ``#``).
Popular topics have many subscribers, as in real systems: at 100k subscriptions a lookup returns
~1,000 subscribers (median), at 1M ~10,000, and building that set is most of a lookup's cost.
Lookups go through ``Matcher.lookup`` with the result cache off, each call timed on its own over
a fixed sample of topics. The first pass over the sample is reported apart ("first pass"): for
the default matcher it is the one that builds the DFA's states and their subscriber sets, which
later passes ("repeat") reuse. Each algorithm runs up to the size it can build in reasonable time
(``MAX_SIZE``); the table says where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from .. import Matcher
from . import charts
from .report import Progress, Report, fmt_int, fmt_ns
from .shapes import realistic
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
#: Largest size per algorithm: building 1M took 79 s (optimized_bitmap) and 128 s (cstrie) on the
#: reference machine, against ~55 s for the trie and the default; the naive scan's lookups alone
#: take ~1 ms at 10k.
MAX_SIZE = {"naive": 10_000, "optimized_bitmap": 100_000, "cstrie": 100_000}


def run(out: Path, repeat: int, quick: bool, progress: Progress) -> Path:
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000, 1_000_000)
    lookups = 500 if quick else 3_000
    patterns, topics = realistic(sizes[-1], lookups, seed=5)
    overhead = clock_overhead_ns()
    report = Report(
        "scaling",
        out,
        "Lookup time by number of subscriptions",
        {"sizes": sizes, "lookups": lookups, "repeat": repeat},
    )
    medians: dict[str, list[float | None]] = {}
    cells: dict[str, list[str]] = {a: [] for a in ALGORITHMS}
    for algorithm in ALGORITHMS:
        first_series: list[float | None] = []
        repeat_series: list[float | None] = []
        for n in sizes:
            if n > MAX_SIZE.get(algorithm, n):
                first_series.append(None)
                repeat_series.append(None)
                cells[algorithm].append("not run (see MAX_SIZE)")
                continue
            progress(f"{algorithm} {n:,}")
            start = time.perf_counter()
            m = Matcher(algorithm.split(",")[0], cache_size=0)
            for i, pattern in enumerate(patterns[:n]):
                m.subscribe(pattern, i)
            built = time.perf_counter() - start
            runs = [median(_lookup_ns(m.lookup, topics, overhead)) for _ in range(repeat + 1)]
            first, again = runs[0], median(runs[1:])
            first_series.append(first)
            repeat_series.append(again)
            results = [len(m.lookup(t)) for t in topics[:500]]
            cells[algorithm].append(f"{fmt_ns(first)} / {fmt_ns(again)} (build {built:.1f} s)")
            report.result(
                f"{algorithm}/{n}",
                {
                    "first_pass_ns": first,
                    "repeat_ns": again,
                    "runs": runs,
                    "build_s": built,
                    "median_result_size": median(results),
                },
            )
            del m
        medians[f"{algorithm} (first pass)"] = first_series
        if algorithm.startswith("default"):
            medians[f"{algorithm} (repeat)"] = repeat_series
    report.text(__doc__ or "")
    report.text("Cells: median lookup, first pass / repeat passes (median of runs), and the build time.")
    report.table(["algorithm", *(fmt_int(n) for n in sizes)], [[a, *cells[a]] for a in ALGORITHMS])
    fig = charts.lines(
        list(sizes),
        medians,
        "subscriptions",
        "median lookup (ns)",
        "Lookup time by number of subscriptions (realistic topics)",
        logx=True,
        logy=True,
    )
    report.chart("scaling", fig, "Median lookup time by number of subscriptions (log-log)")
    return report.write()
