"""The cyclic collector's runs in a fresh matcher's first lookups under churn, per variant.

    [TOPICMATCH_PURE=1] .venv/bin/python benchmarks/early_collections.py [--lookups N] [--variants A,B,...]

The churn row as ``churn_split.py`` paces it (300,000 MQTT subscriptions, a subscribe or
unsubscribe before every 6 lookups) on each variant of ``default_parts.py`` (default: the
default, itself without its memo of unions, itself without its cache, the trie), each built in
a process of its own, a full collection after the build, then the first ``N`` lookups (default
10,000) and their writes. Printed per variant: the time in lookups and in writes (ms, wall), and
the collections of CPython's cyclic collector meanwhile by generation, with their time
(``gc.callbacks``). A collection runs inside whatever call allocates past its threshold, mostly
a write here; the counts are the same on any machine, the times are not.
"""

from __future__ import annotations

import argparse
import gc
import time
from functools import partial

import default_parts  # benchmarks/default_parts.py, beside this script
from churn_split import EVERY  # lookups per write: churn_split.py's pace

from topicmatch.bench import shapes


def _child(shape: shapes.Shape, variant: str, lookups: int) -> str:
    m = default_parts._matcher(variant, shape)
    gc.collect()
    runs = {0: [0, 0.0], 1: [0, 0.0], 2: [0, 0.0]}  # generation: [collections, ms]
    began = [0]

    def log(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began[0] = time.perf_counter_ns()
        else:
            run = runs[info["generation"]]
            run[0] += 1
            run[1] += (time.perf_counter_ns() - began[0]) / 1e6

    writes = iter(shape.writes)
    lookup, subscribe, unsubscribe = m.lookup, m.subscribe, m.unsubscribe
    clock = time.perf_counter_ns
    in_lookups = in_writes = 0
    gc.callbacks.append(log)
    try:
        for i, topic in enumerate(shape.topics[:lookups]):
            start = clock()
            lookup(topic)
            in_lookups += clock() - start
            if i % EVERY == 0:
                adding, pattern, subscriber = next(writes)
                start = clock()
                (subscribe if adding else unsubscribe)(pattern, subscriber)
                in_writes += clock() - start
    finally:
        gc.callbacks.remove(log)
    shown = ", ".join(f"gen {g}: {n} in {ms:.1f} ms" for g, (n, ms) in runs.items())
    spent = f"lookups {in_lookups / 1e6:6.1f} ms, writes {in_writes / 1e6:6.1f} ms"
    return f"  {variant:9s} {spent}; collections {shown}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lookups", type=int, default=10_000, help="lookups (default 10,000)")
    parser.add_argument(
        "--variants", default="default,no memo,no cache,trie", help="variants, separated by ','"
    )
    args = parser.parse_args()
    shape = shapes.churn(300_000, 200_000, args.lookups // EVERY + 2)
    print(f"churn, first {args.lookups:,} lookups of a fresh matcher, a write before every {EVERY}")
    for variant in args.variants.split(","):
        print(default_parts.forked(partial(_child, shape, variant, args.lookups)))


if __name__ == "__main__":
    main()
