"""How the result cache meets the churn row: what its writes walk, and what answers its lookups.

    [TOPICMATCH_PURE=1] .venv/bin/python benchmarks/churn_walks.py [--lookups N]

The churn row as ``churn_split.py`` paces it (a write before every 6 lookups) on one fresh
default matcher, first ``N`` lookups (default 100,000). For each write made while ``hot`` held
topics (the others walk nothing), the steps of its walk (``ResultCache.last_walk``): one step is
the root's test, the walk ``TopicTrie.matching`` answers without building its stack (a pattern
whose first word no cached topic starts with). Then where each lookup was answered: ``hot``,
``warm`` (a promotion), or the index's walk (while ``quiet`` counts, or after probing the
generations). Counts, not times: the same on any machine.
"""

from __future__ import annotations

import argparse
import collections

import default_parts  # benchmarks/default_parts.py, beside this script

from topicmatch.bench import shapes

EVERY = 6  # lookups per write, as churn_split.py


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lookups", type=int, default=100_000, help="lookups (default 100,000)")
    args = parser.parse_args()
    shape = shapes.churn(300_000, max(args.lookups, 200_000), -(-args.lookups // EVERY) + 2)
    m = default_parts._matcher("default", shape)
    cache = m._cache
    assert cache is not None
    steps: collections.Counter[int] = collections.Counter()
    answered: collections.Counter[str] = collections.Counter()
    for i in range(0, args.lookups, EVERY):
        adding, pattern, subscriber = shape.writes[i // EVERY]
        walked = bool(cache.hot)
        cache.last_walk = 0
        (m.subscribe if adding else m.unsubscribe)(pattern, subscriber)
        if walked:
            steps[min(cache.last_walk, 3)] += 1
        for topic in shape.topics[i : i + EVERY]:
            if topic in cache.hot:
                answered["hot"] += 1
            elif topic in cache.warm:
                answered["warm"] += 1
            else:
                answered["quiet" if cache.quiet else "walk"] += 1
            m.lookup(topic)
    total = sum(steps.values())
    print(f"churn, first {args.lookups:,} lookups: {total:,} writes walked the cached topics' index")
    for k, label in ((1, "1 step (the root's test)"), (2, "2 steps"), (3, "3 steps or more")):
        print(f"  {label:26s} {steps[k]:7,} ({100 * steps[k] / max(total, 1):.0f} %)")
    print(f"churn, first {args.lookups:,} lookups: where each was answered")
    labels = (
        ("hot", "hot (a hit)"),
        ("warm", "warm (promoted)"),
        ("quiet", "walk, quiet"),
        ("walk", "walk, after probing"),
    )
    for key, label in labels:
        print(f"  {label:26s} {answered[key]:7,} ({100 * answered[key] / args.lookups:.1f} %)")


if __name__ == "__main__":
    main()
