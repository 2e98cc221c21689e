"""How much the default's lookup rate swings from round to round on one matcher.

    .venv/bin/python benchmarks/round_to_round.py [ROUNDS] [--collector-off]

The matrix's *unmatched* row (20,000 MQTT filters, 100,000 Zipf-drawn topics of which 90 % match
no filter): one default matcher, the same 100,000 lookups ROUNDS times (default 8), the rate of
each round with the result cache's size, the young collections the round triggered (a measure
of what it allocated) and the time of its full collections (a ``gc.callbacks`` hook). With
``--collector-off`` the cyclic collector is off during the rounds (what part of the swing is
its collections).

Figures: none committed (docs/performance.md, "Other experiments").
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
    young, full_ms, began = [0], [0.0], [0.0]

    def collections(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[0] = time.perf_counter()
        elif info["generation"] == 2:
            full_ms[0] += (time.perf_counter() - began[0]) * 1e3
        else:
            young[0] += info["generation"] == 0

    gc.callbacks.append(collections)
    if collector_off:
        gc.disable()
    for r in range(rounds):
        young[0], full_ms[0] = 0, 0.0
        start = time.perf_counter()
        for topic in topics:
            lookup(topic)
        rate = len(topics) / (time.perf_counter() - start)
        size = m.cache_info["size"]
        print(
            f"round {r}: {rate:>11,.0f} lookups/s  cache {size:>6,} entries  "
            f"young collections {young[0]:>4}  full collections {full_ms[0]:6.1f} ms"
        )
    gc.callbacks.remove(collections)
    gc.enable()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(args[0]) if args else 8, "--collector-off" in sys.argv)
