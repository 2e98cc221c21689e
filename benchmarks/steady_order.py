"""Whether a contender's place in the order of a round decides its steady rate on distinct-100k.

    .venv/bin/python benchmarks/steady_order.py NAMES ROUNDS

    NAMES: "default;default, no cache;naive;optimized_bitmap;trie;cstrie;paho" (the matrix's
    order), or reversed, or "default;default, no cache;trie"

Each listed contender (``;``-separated, the workload matrix's names) is built once, in a process
of its own (``topicmatch.bench.alone``), from ``shapes.distinct(100_000, 1_000_000)``; then a
warm-up round and ROUNDS rounds of 200,000 topics none has seen (8 s budget each), each
contender running its whole round in turn, the order reversed every other round: the workload
matrix's steady state before its contenders took turns within a round. Prints each one's rate
per round and the median of the default's rate divided by its own (thread CPU time).
"""

from __future__ import annotations

import functools
import statistics
import sys

from topicmatch.bench import shapes
from topicmatch.bench import workloads as w
from topicmatch.bench.alone import Alone

PER_ROUND = 200_000


def main(names: list[str], rounds: int) -> None:
    shape = shapes.distinct(100_000, 1_000_000)
    built = {n: Alone(functools.partial(w._make, n, shape, w.FULL, False)) for n in names}
    count = len(shape.topics)
    rates: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds + 1):
        start = count - (r + 1) * PER_ROUND
        for n in names if r % 2 == 0 else names[::-1]:
            out = built[n].call(w._rates_of, "topics", start, start + PER_ROUND, (PER_ROUND,), 8.0)
            if r:
                rates[n].append(out[PER_ROUND][0])
    for n in names:
        print(f"{n:20s}", " ".join(f"{x:8,.0f}" for x in rates[n]))
    mine = rates["default"]
    for n in names:
        print(
            n,
            "default/it median",
            round(statistics.median(a / b for a, b in zip(mine, rates[n], strict=True)), 3),
        )
    for alone in built.values():
        alone.close()


if __name__ == "__main__":
    main(sys.argv[1].split(";"), int(sys.argv[2]))
