"""Building a matcher from many subscriptions: ``subscribe`` pair by pair against ``subscribe_many``.

Usage: ``.venv/bin/python benchmarks/matcher_build.py SUBSCRIPTIONS [ROUNDS]``
(``SUBSCRIPTIONS``: a file of (pattern, subscriber) pairs as ``topicmatch route`` reads them,
e.g. the ``subscriptions.parquet`` that ``topicmatch generate`` writes; ``ROUNDS`` default 3).

What a Spark worker does before it routes its first message (``Compiled`` in
``topicmatch.spark._worker``): a default matcher without result cache, filled from the shipped
pairs. Popular patterns have many subscribers in generated (Zipf) data, and adding k
subscribers to one pattern one by one replaces its frozenset k times: O(k^2).
Both variants alternated in every round, the collector run before each, the collector paused
during each build as the worker pauses it; medians. Then one more ``subscribe_many`` build
under ``tracemalloc``, for the memory the matcher holds (its Python allocations, the pairs'
strings not counted: they exist before it): bytes, which the machine's load does not change.

Figures: docs/pipeline.md (a worker's build).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from topicmatch import Matcher
from topicmatch.spark import Subscriptions


def main() -> None:
    path, rounds = Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 3
    table = Subscriptions.read(path)
    pairs = list(zip(table.patterns, table.subscriber_ids.tolist(), strict=True))
    widest = Counter(table.patterns).most_common(1)[0][1] if pairs else 0

    def one_by_one(m: Matcher) -> None:
        for pattern, subscriber in pairs:
            m.subscribe(pattern, subscriber)

    def many(m: Matcher) -> None:
        m.subscribe_many(pairs)

    variants: dict[str, Callable[[Matcher], None]] = {"subscribe": one_by_one, "subscribe_many": many}
    times: dict[str, list[float]] = {name: [] for name in variants}
    for turn in range(rounds):
        for name in list(variants)[turn % 2 :] + list(variants)[: turn % 2]:
            gc.collect()
            m = Matcher("default", table.dialect, pedantic=table.pedantic, cache_size=0)
            gc.disable()
            try:
                began = time.perf_counter()
                variants[name](m)
                times[name].append(time.perf_counter() - began)
            finally:
                gc.enable()
            assert len(m) == len(set(pairs)), name
            del m
    print(
        f"{path}: {len(pairs):,} pairs, {len(set(table.patterns)):,} patterns (the widest with "
        f"{widest:,} subscribers), {rounds} rounds"
    )
    base = statistics.median(times["subscribe_many"])
    for name, runs in times.items():
        median = statistics.median(runs)
        rounded = [round(t, 2) for t in runs]
        print(f"{name:15s} {median:7.2f} s  ({median / base:5.1f}x subscribe_many)  runs {rounded}")
    gc.collect()
    tracemalloc.start()
    m = Matcher("default", table.dialect, pedantic=table.pedantic, cache_size=0)
    many(m)
    held = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    print(f"memory held  {held / 2**20:7.0f} MiB  ({held / len(pairs):,.0f} bytes a pair, tracemalloc)")


if __name__ == "__main__":
    main()
