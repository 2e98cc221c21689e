"""Where a fresh matcher's time goes under churn: its writes and its lookups, apart.

    [TOPICMATCH_PURE=1] .venv/bin/python benchmarks/churn_split.py [ROUNDS] [--lookups N] [--after M]

The workload matrix's churn row (300,000 MQTT subscriptions, Zipf topics), with its writes paced
by count, not by the clock: a subscribe or unsubscribe before every 6 lookups (about the
matrix's pace in the pure build: 10,000 writes a second among some 60,000 lookups), so that
every variant does the same calls. Per round (default 5), the default, itself without a cache
and the trie, each in a child forked from the process holding the row, do the first ``N``
lookups (default 100,000) of a fresh matcher and their writes. Printed: each variant's median
thread CPU time in its writes and in its lookups (ms), and per write (µs); then the default's
ratio of lookups per second, writes' time included as the matrix counts it, to each other
variant, per round and the median. A full collection runs after the build, before the window:
the build leaves its objects to the collector (``subscribe_many`` pauses it), whose first runs
after it take most of a second and would land in whichever call, a write or a lookup, happened
to pass the threshold. ``--after M``: the window starts after ``M`` lookups and their writes,
untimed (a long-lived matcher under churn: the matrix's steady state, paced by count).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from functools import partial
from typing import Any

import default_parts  # benchmarks/default_parts.py, beside this script

from topicmatch.bench import shapes

VARIANTS = ("default", "no cache", "trie")
EVERY = 6  # lookups per write


def paced(m: Any, shape: shapes.Shape, start: int, stop: int, every: int = EVERY) -> None:
    """Lookups ``start`` to ``stop`` of the row on ``m``, a write before every ``every``, untimed.

    ``start`` is a multiple of ``every``: the write before lookup ``i`` is ``writes[i // every]``.
    """
    topics, writes = shape.topics, shape.writes
    lookup, subscribe, unsubscribe = m.lookup, m.subscribe, m.unsubscribe
    for i in range(start, stop, every):
        adding, pattern, subscriber = writes[i // every]
        (subscribe if adding else unsubscribe)(pattern, subscriber)
        for topic in topics[i : i + every]:
            lookup(topic)


def _child(shape: shapes.Shape, variant: str, lookups: int, after: int) -> str:
    m = default_parts._matcher(variant, shape)
    topics, writes = shape.topics, shape.writes
    lookup, subscribe, unsubscribe = m.lookup, m.subscribe, m.unsubscribe
    paced(m, shape, 0, after)  # the life before the window (--after)
    gc.collect()  # the build's own collection (a second or so at 300,000 subscriptions), not the window's
    clock = time.thread_time_ns
    in_writes = in_lookups = 0
    for i in range(after, after + lookups, EVERY):
        adding, pattern, subscriber = writes[i // EVERY]
        t0 = clock()
        (subscribe if adding else unsubscribe)(pattern, subscriber)
        t1 = clock()
        for topic in topics[i : i + EVERY]:
            lookup(topic)
        in_writes += t1 - t0
        in_lookups += clock() - t1
    return f"{in_writes} {in_lookups}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rounds", nargs="?", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--lookups", type=int, default=100_000, help="lookups per round (default 100,000)")
    parser.add_argument("--after", type=int, default=0, help="untimed lookups before the window (default 0)")
    args = parser.parse_args()
    if args.after % EVERY:
        parser.error(f"--after must be a multiple of {EVERY}")
    writes_needed = -(-args.lookups // EVERY)
    total = args.after + args.lookups
    shape = shapes.churn(300_000, max(total, 200_000), -(-total // EVERY) + 2)
    spent: dict[str, list[tuple[int, int]]] = {v: [] for v in VARIANTS}
    for _ in range(args.rounds):
        for variant in VARIANTS:
            done = default_parts.forked(partial(_child, shape, variant, args.lookups, args.after))
            in_writes, in_lookups = map(int, done.split())
            spent[variant].append((in_writes, in_lookups))
    window = f"{args.lookups:,} after the first {args.after:,}" if args.after else f"first {args.lookups:,}"
    print(f"churn, {window} lookups of a fresh matcher, a write before every {EVERY}")
    for variant, times in spent.items():
        w = statistics.median(t[0] for t in times) / 1e6
        lk = statistics.median(t[1] for t in times) / 1e6
        each = w * 1e3 / writes_needed
        print(f"  {variant:9s} writes {w:8.1f} ms ({each:5.1f} µs each), lookups {lk:8.1f} ms")
    mine = [sum(t) for t in spent["default"]]
    for other in VARIANTS[1:]:
        ratios = sorted(b / a for a, b in zip(mine, (sum(t) for t in spent[other]), strict=True))
        rounds = ", ".join(f"{r:.2f}" for r in ratios)
        print(f"  default ÷ {other}: {statistics.median(ratios):.3f} (rounds {rounds})")


if __name__ == "__main__":
    main()
