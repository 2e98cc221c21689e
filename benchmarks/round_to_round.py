"""How much the default's lookup rate swings from round to round on one matcher.

    .venv/bin/python benchmarks/round_to_round.py [ROUNDS] [--collector-off]

The matrix's *unmatched* row (20,000 MQTT filters, 100,000 Zipf-drawn topics of which 90 % match
no filter): one default matcher, the same 100,000 lookups ROUNDS times (default 8), the rate of
each round with the result cache's size and the collector's counts after it. With
``--collector-off`` the cyclic collector is off during the rounds (what part of the swing is
its collections).
"""

from __future__ import annotations

import gc
import sys
import time

from topicmatch import Matcher
from topicmatch.bench import shapes


def main(rounds: int, collector_off: bool) -> None:
    shape = shapes.unmatched(20_000, 100_000)
    m = Matcher(dialect="mqtt")
    m.subscribe_many(shape.pairs)
    lookup, topics = m.lookup, shape.topics
    if collector_off:
        gc.disable()
    for r in range(rounds):
        start = time.perf_counter()
        for topic in topics:
            lookup(topic)
        rate = len(topics) / (time.perf_counter() - start)
        size = m.cache_info["size"]
        print(f"round {r}: {rate:>11,.0f} lookups/s  cache {size:>6,} entries  gc {gc.get_count()}")
    gc.enable()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(args[0]) if args else 8, "--collector-off" in sys.argv)
