"""Experiment 1: per-operation latency, cold and hot, for subscribe, unsubscribe and lookup.

As in the study: *cold* is an empty matcher, *hot* one holding 1,000 random 5-word
subscriptions; the operation's pattern is ``foo.*.baz.qux.quux`` and the lookup topic
``foo.bar.baz.qux.quux``. Every call is timed on its own with ``perf_counter_ns`` (the clock's
own cost subtracted). A subscribe is always of a new pair, followed by the unsubscribe of that
pair (timed separately), so every sample starts from the same state. Lookups are also recorded
in an HDR histogram for their whole distribution. The default matcher runs twice, with its
result cache (warmed with the topics of the hot set, so writes pay their real invalidation cost)
and without.
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from .. import Matcher
from ..support.commandline import counted
from . import charts
from .report import Progress, Report, fmt_ns
from .shapes import random_subscriptions
from .timing import clock_overhead_ns, median, per_call_ns

__all__ = ["run"]

WHAT = {"cold": "empty matcher", "hot": "matcher of 1,000 subscriptions"}

PATTERN = "foo.*.baz.qux.quux"
TOPIC = "foo.bar.baz.qux.quux"
VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("naive", {}),
    ("inverted_bitmap", {}),
    ("optimized_bitmap", {}),
    ("trie", {}),
    ("cstrie", {}),
    ("default", {}),
    ("default, no cache", {"cache_size": 0}),
)
PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)


def _build(variant: str, options: dict[str, Any], hot: list[str], space: list[str]) -> Matcher:
    algorithm = variant.split(",", maxsplit=1)[0]
    extra: dict[str, Any] = dict(options)
    if algorithm == "inverted_bitmap":
        extra["topics"] = space
    m = Matcher(algorithm, **extra)
    for i, pattern in enumerate(hot):
        m.subscribe(pattern, i)
    for _ in range(10):  # a warm cache: writes pay their real invalidation cost
        if m.cache_info["size"] >= min(len(set(space)), m.cache_info["max_size"]):
            break  # (a new cache first times 2,048 lookups without itself, then stores on a 2nd miss)
        m.lookup_many(space)
    return m


def _writes(m: Matcher, count: int, overhead: int, budget: float) -> tuple[list[int], list[int]]:
    clock = time.perf_counter_ns
    subscribe, unsubscribe = m.subscribe, m.unsubscribe
    subs, unsubs = [], []
    deadline = time.perf_counter() + budget
    for i in range(count):
        who: Hashable = ("op", i)
        t0 = clock()
        subscribe(PATTERN, who)
        t1 = clock()
        unsubscribe(PATTERN, who)
        t2 = clock()
        subs.append(max(0, t1 - t0 - overhead))
        unsubs.append(max(0, t2 - t1 - overhead))
        if i % 256 == 0 and time.perf_counter() > deadline:
            break
    return subs, unsubs


def run(out: Path, repeat: int, quick: bool, progress: Progress) -> Path:
    from hdrh.histogram import HdrHistogram  # noqa: PLC0415 - optional 'bench' extra

    samples = 2_000 if quick else 20_000
    budget = 0.3 if quick else 2.0  # seconds per operation, algorithm and run, at most
    hot = random_subscriptions(1000, words=5, seed=11)
    space = [TOPIC, *(p.replace("*", "w0") for p in hot)]
    overhead = clock_overhead_ns()
    report = Report(
        "operations",
        out,
        "Per-operation latency, cold and hot",
        {"repeat": repeat, "samples_per_run": samples, "budget_s": budget, "clock_overhead_ns": overhead},
    )
    rows = []
    medians: dict[str, dict[str, float]] = {}
    distributions: dict[str, dict[float, float]] = {}
    for state in ("cold", "hot"):
        for variant, options in VARIANTS:
            progress(f"{state} {variant}")
            runs: dict[str, list[float]] = {"subscribe": [], "unsubscribe": [], "lookup": []}
            histogram = HdrHistogram(1, 60_000_000_000, 3)
            counts = 0
            for _ in range(repeat):
                m = _build(variant, options, hot if state == "hot" else [], space)
                subs, unsubs = _writes(m, samples, overhead, budget)
                m.subscribe(PATTERN, "x")  # lookups then match something
                lookup = m.lookup
                lookup(TOPIC)
                lookups = per_call_ns(lambda lookup=lookup: lookup(TOPIC), samples, overhead)  # type: ignore[misc]
                for name, values in (("subscribe", subs), ("unsubscribe", unsubs), ("lookup", lookups)):
                    runs[name].append(median(values))
                for value in lookups:
                    histogram.record_value(max(1, value))
                counts += len(lookups)
            key = f"{state}/{variant}"
            medians[key] = {op: median(values) for op, values in runs.items()}
            pct = {p: float(histogram.get_value_at_percentile(p)) for p in PERCENTILES}
            if state == "hot":
                distributions[variant] = pct
            report.result(
                key, {"median_ns": medians[key], "lookup_percentiles_ns": pct, "lookup_samples": counts}
            )
            ops = (fmt_ns(medians[key][op]) for op in ("subscribe", "unsubscribe", "lookup"))
            rows.append([state, variant, *ops, fmt_ns(pct[99.0]), fmt_ns(pct[99.99])])
    report.text(__doc__ or "")
    report.text(
        f"Median of the per-run medians over {counted(repeat, 'run')}; lookup percentiles from an HDR "
        "histogram of every lookup sample of all runs."
    )
    report.table(
        ["state", "algorithm", "subscribe", "unsubscribe", "lookup", "lookup p99", "lookup p99.99"], rows
    )
    for state in ("cold", "hot"):
        series: dict[str, list[float | None]] = {
            op: [medians[f"{state}/{v}"][op] for v, _ in VARIANTS]
            for op in ("subscribe", "unsubscribe", "lookup")
        }
        fig = charts.grouped_bars(
            [v for v, _ in VARIANTS],
            series,
            "median ns (log)",
            f"Median time of one operation, {WHAT[state]}",
            log=True,
        )
        report.chart(f"operations-{state}", fig, f"Median latency per operation, {state} matcher (log scale)")
    fig = charts.nines(
        distributions, "ns (log)", "Lookup latency by percentile, matcher of 1,000 subscriptions"
    )
    report.chart("lookup-percentiles", fig, "Hot lookup latency distribution by percentile")
    return report.write()
