"""Experiment 2: single-thread throughput on the study's workload, in messages per second.

Workload (``topicmatch.bench.shapes.study_throughput``, seed 7): 1,000 three-word subscriptions
over the digits 0-9 and 100,000 messages over them. Every algorithm runs through
``Matcher.lookup``; the default runs with its result cache, without it, and through
``lookup_many`` with and without it; the 40-line dict trie of :mod:`.plain_trie` runs too, as the
yardstick of the targets. Each figure is the median of the runs after one warm-up run; a slow
algorithm stops at a time budget and its rate is computed on the messages it did. All results are
checked against the naive scan before they count.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from .. import Matcher
from . import charts
from .plain_trie import PlainTrie
from .report import Progress, Report, fmt_int
from .shapes import study_throughput
from .timing import median

__all__ = ["run"]


def _rate(
    lookup_chunk: Callable[[list[str]], list[Any]], topics: list[str], budget: float
) -> tuple[float, int]:
    """Messages per second of ``lookup_chunk`` over ``topics`` in chunks of 1,000, within ``budget`` s."""
    done = 0
    start = time.perf_counter()
    deadline = start + budget
    while done < len(topics):
        lookup_chunk(topics[done : done + 1000])
        done = min(done + 1000, len(topics))
        if time.perf_counter() > deadline:
            break
    return done / (time.perf_counter() - start), done


def _each(lookup: Callable[[str], Any]) -> Callable[[list[str]], list[Any]]:
    """A chunk runner calling ``lookup`` once per topic, as a user's loop would."""

    def chunk(topics: list[str]) -> list[Any]:
        return [lookup(t) for t in topics]

    return chunk


def _variants(
    patterns: list[str], topics: list[str]
) -> dict[str, tuple[Callable[[list[str]], list[Any]], Any]]:
    def matcher(algorithm: str, **options: Any) -> Matcher:
        if algorithm == "inverted_bitmap":
            options["topics"] = sorted(set(topics))
        m = Matcher(algorithm, **options)
        for i, p in enumerate(patterns):
            m.subscribe(p, i)
        return m

    out: dict[str, tuple[Callable[[list[str]], list[Any]], Any]] = {}
    for algorithm in ("naive", "inverted_bitmap", "optimized_bitmap", "trie", "cstrie"):
        m = matcher(algorithm)
        out[algorithm] = (_each(m.lookup), m)
    cached, uncached = matcher("default"), matcher("default", cache_size=0)
    out["default, cache"] = (_each(cached.lookup), cached)
    out["default, no cache"] = (_each(uncached.lookup), uncached)
    out["default, cache, lookup_many"] = (cached.lookup_many, cached)
    out["default, no cache, lookup_many"] = (uncached.lookup_many, uncached)
    plain = PlainTrie()
    for i, p in enumerate(patterns):
        plain.subscribe(p, i)
    out["40-line dict trie"] = (_each(plain.lookup), plain)
    return out


def run(out: Path, repeat: int, quick: bool, progress: Progress) -> Path:
    messages = 20_000 if quick else 100_000
    budget = 0.5 if quick else 5.0
    patterns, topics = study_throughput(messages)
    report = Report(
        "throughput",
        out,
        "Throughput, single thread",
        {"repeat": repeat, "messages": messages, "budget_s": budget},
    )
    progress("building the matchers")
    variants = _variants(patterns, topics)
    reference = variants["naive"][1]
    expected: dict[str, frozenset[Hashable]] = {t: reference.lookup(t) for t in set(topics)}
    rates: dict[str, float] = {}
    counts: dict[str, int] = {}
    for name, (chunk, _) in variants.items():
        progress(name)
        got = chunk(topics[:2000])
        if [frozenset(r) for r in got] != [expected[t] for t in topics[:2000]]:
            raise AssertionError(f"{name} disagrees with the naive scan on the throughput workload")
        runs = [_rate(chunk, topics, budget) for _ in range(repeat + 1)][1:]  # run 0 warms up
        rates[name] = median([r for r, _ in runs])
        counts[name] = min(n for _, n in runs)
        report.result(
            name, {"msg_per_s": rates[name], "runs": [r for r, _ in runs], "messages": counts[name]}
        )
    base, trie = rates["40-line dict trie"], rates["trie"]
    report.text(__doc__ or "")
    report.table(
        ["matcher", "msg/s (median)", "vs 40-line dict trie", "vs trie", "messages per run"],
        [[n, fmt_int(r), f"{r / base:.2f}", f"{r / trie:.2f}", fmt_int(counts[n])] for n, r in rates.items()],
    )
    fig = charts.grouped_bars(
        list(rates),
        {"msg/s": list(rates.values())},
        "messages / s (log)",
        "Messages per second on the study's workload, one thread",
        log=True,
    )
    report.chart("throughput", fig, "Messages per second, single thread (log scale)")
    return report.write()
