"""How big should the default matcher's result cache be? Lookups/s on realistic traffic.

Usage: ``.venv/bin/python benchmarks/cache_size.py [ROUNDS]``

Realistic workload (``topicmatch._workloads.realistic``: Zipf words, 1-5 words, ~13 % wildcard
patterns), 1,000 and 10,000 subscriptions, 20,000 lookups of about 15,600 distinct topics (a log
replayed: every round reads the same list); the default matcher with its cache off and at
several sizes, all built first, then measured round after round in rotated order (ROUNDS, default
15, after a warm-up round). Reported: each variant's median rate, and the median over the rounds
of its rate divided by the cache-off matcher's in the same round. The cyclic collector runs as in
an application (nothing is frozen).
"""

from __future__ import annotations

import statistics
import sys
import time

from topicmatch import Matcher
from topicmatch._workloads import realistic

SIZES = (0, 1024, 4096, 16384)


def main(rounds: int) -> None:
    for subscriptions in (1_000, 10_000):
        patterns, topics = realistic(subscriptions, 20_000, seed=13)
        print(f"{subscriptions:,} subscriptions, {len(set(topics)):,} distinct topics in {len(topics):,}")
        matchers = {size: Matcher(cache_size=size) for size in SIZES}
        for m in matchers.values():
            m.subscribe_many((p, i) for i, p in enumerate(patterns))
        rates: dict[int, list[float]] = {size: [] for size in SIZES}
        for r in range(rounds + 1):
            for size in SIZES[r % len(SIZES) :] + SIZES[: r % len(SIZES)]:
                lookup = matchers[size].lookup
                start = time.perf_counter()
                for topic in topics:
                    lookup(topic)
                if r:  # round 0 warms up
                    rates[size].append(len(topics) / (time.perf_counter() - start))
        for size in SIZES:
            ratio = statistics.median(a / b for a, b in zip(rates[size], rates[0], strict=True))
            print(f"  cache_size={size:>6}: {statistics.median(rates[size]):>12,.0f} lookups/s  x{ratio:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
