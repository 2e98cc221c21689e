"""How big should the default matcher's result cache be? Lookups/s on the shapes where topics repeat.

Usage: ``.venv/bin/python benchmarks/cache_size.py [ROUNDS]``

Workloads (fixed seeds):

* *replay-1k*, *replay-10k*: the realistic workload (``topicmatch.bench.shapes.realistic``: Zipf
  words, 1-5 words, ~13 % wildcard patterns), 1,000 and 10,000 subscriptions, a log of 20,000
  lookups of about 15,600 distinct topics read again every round (a log replayed);
* *zipf*, *unmatched*, *study*: the workload matrix's rows (``topicmatch bench workloads``):
  20,000 AMQP patterns and Zipf-drawn topics; 20,000 MQTT filters and 90 % of the topics
  matching nobody; the study's 1,000 subscriptions and topics (200,000 lookups each).

The default matcher with its cache off and at several sizes, all built first, then measured
round after round in rotated order (ROUNDS, default 7, after a warm-up round). Reported: each
variant's median rate, and the median over the rounds of its rate divided by the cache-off
matcher's in the same round. The cyclic collector runs as in an application (nothing is frozen).

Figures: ``topicmatch._matcher`` (``DEFAULT_CACHE_SIZE``); no run is committed
(docs/performance.md, "Other experiments").
"""

from __future__ import annotations

import statistics
import sys
import time

from topicmatch import Matcher
from topicmatch.bench import shapes
from topicmatch.bench.shapes import realistic

SIZES = (0, 4096, 16384, 65536)


def _workloads() -> dict[str, tuple[str, list[tuple[str, int]], list[str]]]:
    out = {}
    for subscriptions in (1_000, 10_000):
        patterns, topics = realistic(subscriptions, 20_000, seed=13)
        out[f"replay-{subscriptions // 1000}k"] = ("amqp", [(p, i) for i, p in enumerate(patterns)], topics)
    for shape in (shapes.zipf(20_000, 200_000), shapes.unmatched(20_000, 200_000), shapes.study(200_000)):
        out[shape.name] = (shape.dialect, shape.pairs, shape.topics)
    return out


def main(rounds: int) -> None:
    print(f"{'workload':<12}{'distinct':>9}" + "".join(f"{f'size {s}':>22}" for s in SIZES))
    for name, (dialect, pairs, topics) in _workloads().items():
        matchers = {size: Matcher(dialect=dialect, cache_size=size) for size in SIZES}
        for m in matchers.values():
            m.subscribe_many(pairs)
        rates: dict[int, list[float]] = {size: [] for size in SIZES}
        for r in range(rounds + 1):
            for size in SIZES[r % len(SIZES) :] + SIZES[: r % len(SIZES)]:
                lookup = matchers[size].lookup
                start = time.perf_counter()
                for topic in topics:
                    lookup(topic)
                if r:  # round 0 warms up
                    rates[size].append(len(topics) / (time.perf_counter() - start))
        cells = []
        for size in SIZES:
            ratio = statistics.median(a / b for a, b in zip(rates[size], rates[0], strict=True))
            cells.append(f"{statistics.median(rates[size]):>12,.0f}/s x{ratio:.2f}")
        print(f"{name:<12}{len(set(topics)):>9,}" + "".join(f"{c:>22}" for c in cells), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
