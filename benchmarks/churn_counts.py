"""What the default's result cache does under churn, counted: which path each lookup takes.

    [TOPICMATCH_PURE=1] .venv/bin/python benchmarks/churn_counts.py [--every N] [--after M]

The workload matrix's churn row (300,000 MQTT subscriptions, Zipf topics), its writes paced by
count: a subscribe or unsubscribe before every ``N`` lookups (default 9, about the pure
default's pace in the matrix on the AMD machine: 10,000 writes a second among some 86,000
lookups). After ``M`` lookups (default 300,000: a long-lived matcher, the matrix's steady
state), over the next 100,000, it counts the share of lookups that took each path of
:meth:`topicmatch.Matcher.lookup`: ``quiet`` (nothing cached, admission waiting: the walk and a
count), a hit in ``hot``, a hit in ``warm``, a miss (and of those, the misses admission was on
for), and the mean number of topics in ``hot``. Nothing is timed: the same run counts the same.
"""

from __future__ import annotations

import argparse

from topicmatch import Matcher
from topicmatch.bench import shapes

WINDOW = 100_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--every", type=int, default=9, help="lookups per write (default 9)")
    parser.add_argument(
        "--after", type=int, default=300_000, help="lookups before the window (default 300,000)"
    )
    args = parser.parse_args()
    every, after = args.every, args.after - args.after % args.every
    total = after + WINDOW
    shape = shapes.churn(300_000, max(total, 200_000), total // every + 4)
    m: Matcher[int] = Matcher("default", shape.dialect)
    m.subscribe_many(shape.pairs)
    cache = m._cache
    assert cache is not None
    topics, writes = shape.topics, shape.writes
    counts = dict.fromkeys(("quiet", "hot", "warm", "miss", "admitted", "hot size"), 0)
    for i in range(0, total, every):
        adding, pattern, subscriber = writes[i // every]
        (m.subscribe if adding else m.unsubscribe)(pattern, subscriber)
        for topic in topics[i : i + every]:
            if i >= after:
                counts["hot size"] += len(cache.hot)
                if cache.quiet:
                    counts["quiet"] += 1
                elif topic in cache.hot:
                    counts["hot"] += 1
                elif topic in cache.warm:
                    counts["warm"] += 1
                else:
                    counts["miss"] += 1
                    counts["admitted"] += cache.admission.on
            m.lookup(topic)
    seen = sum(counts[k] for k in ("quiet", "hot", "warm", "miss"))
    print(f"churn, a write before every {every} lookups, the {seen:,} lookups after the first {after:,}:")
    print(
        f"  quiet {counts['quiet'] / seen:.3f}, hot hits {counts['hot'] / seen:.3f}, "
        f"warm hits {counts['warm'] / seen:.3f}, misses {counts['miss'] / seen:.3f} "
        f"(admission on {counts['admitted'] / seen:.3f}); topics in hot, mean {counts['hot size'] / seen:.0f}"
    )


if __name__ == "__main__":
    main()
