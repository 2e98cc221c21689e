"""What the cyclic collector costs the default matcher where topics come and go through its cache.

    .venv/bin/python benchmarks/cache_collector.py [ROUNDS]
    PYTHONPATH=OTHER/src .venv/bin/python benchmarks/cache_collector.py [ROUNDS]   # another version

The workload matrix's *unmatched* row (20,000 MQTT filters, 200,000 lookups of Zipf-drawn topics
over a pool of 50,000, 90 % matching nobody): its ~27,000 distinct topics are more than a cache of
16,384 entries holds, so topics are stored, dropped with their generation and stored again. The
default matcher with a cache of 16,384 entries (the size of both versions compared) after one
warm-up pass; per round, one pass over the 200,000 topics. Reported per round: lookups/s, the
time spent in collections (``gc.callbacks``) and the number of full (generation 2) collections;
medians of ROUNDS (default 7). Public API only, so that the same script measures an older
checkout. Nothing is frozen: the collector runs as in an application.

Figures: ``topicmatch._engine.cache`` and ``topicmatch._engine.topic_trie`` (why the cache's index makes
nothing the collector tracks); no run is committed (docs/performance.md, "Other experiments").
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from typing import Any

from topicmatch import Matcher
from topicmatch.bench import shapes


def main(rounds: int) -> None:
    shape = shapes.unmatched(20_000, 200_000)
    m = Matcher(dialect="mqtt", cache_size=16384)
    m.subscribe_many(shape.pairs)
    for topic in shape.topics:
        m.lookup(topic)
    spent = [0, 0]  # ns in collections, full collections
    started: list[int] = []

    def timer(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(time.perf_counter_ns())
        else:
            spent[0] += time.perf_counter_ns() - started.pop()
            spent[1] += info["generation"] == 2

    gc.callbacks.append(timer)
    rates, collected, full = [], [], []
    for _ in range(rounds):
        spent[:] = [0, 0]
        start = time.perf_counter()
        for topic in shape.topics:
            m.lookup(topic)
        elapsed = time.perf_counter() - start
        rates.append(len(shape.topics) / elapsed)
        collected.append(spent[0] / 1e9 / elapsed)
        full.append(spent[1])
    gc.callbacks.remove(timer)
    print(
        f"{statistics.median(rates):,.0f} lookups/s (min {min(rates):,.0f}, max {max(rates):,.0f}); "
        f"{statistics.median(collected):.1%} of the time in collections; "
        f"{statistics.median(full):.0f} full collections per pass of {len(shape.topics):,}"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
