"""Admission's window as shipped (1,024 misses, first wait 16,384) against the earlier one (2,048,
first wait 8,192), on topics seen once, over a fresh matcher's first lookups.

    .venv/bin/python benchmarks/admission_window.py [ROWS] [ROUNDS] [LOOKUPS]

Rows: ``distinct`` (the workload matrix's distinct-10k: 10,000 MQTT filters) and
``unmatched-once`` (the unmatched row's 20,000 filters, topics seen once that match nobody:
the cheapest lookups, where admission's records weigh most). Variants, each a fresh matcher
built in this process, in alternating order round by round, every round reading topics none has
seen: ``default`` as shipped; ``w2048``, the same with its governor set to the earlier window and
wait (instance attributes, set before the first lookup); ``no cache`` (``cache_size=0``); ``trie``.
Printed: each variant's median lookups/s over the first LOOKUPS (default 10,000) and its ratio to
the default (median of the rounds' ratios), in thread CPU time.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from typing import Any

from default_parts import _shape  # the same rows, built the same way (run from benchmarks/)

from topicmatch import BUILD, Matcher
from topicmatch.bench import shapes

VARIANTS = ("default", "w2048", "no cache", "trie")


def _matcher(variant: str, shape: shapes.Shape) -> Matcher[Any]:
    if variant == "trie":
        m: Matcher[Any] = Matcher("trie", shape.dialect)
    else:
        m = Matcher("default", shape.dialect, cache_size=0 if variant == "no cache" else None)
    m.subscribe_many(shape.pairs)
    if variant == "w2048":
        assert m._cache is not None
        g = m._cache.admission
        g.window = g.left = 2048
        g.first_backoff = g.backoff = 8192
    return m


def main(rows: list[str], rounds: int, lookups: int) -> None:
    for row in rows:
        shape = _shape(row)
        rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for r in range(rounds):
            topics = shape.topics[r * lookups : (r + 1) * lookups]
            for variant in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
                m = _matcher(variant, shape)
                gc.collect()
                lookup = m.lookup
                began = time.thread_time()
                for topic in topics:
                    lookup(topic)
                rates[variant].append(len(topics) / (time.thread_time() - began))
                del m, lookup
        base = rates["default"]
        cells = []
        for variant, values in rates.items():
            ratio = statistics.median(a / b for a, b in zip(values, base, strict=True))
            cells.append(f"{variant} {statistics.median(values):,.0f}/s ({ratio:.3f})")
        print(f"{BUILD}, {row}, first {lookups:,}: " + "; ".join(cells))


if __name__ == "__main__":
    main(
        sys.argv[1].split(",") if len(sys.argv) > 1 else ["distinct", "unmatched-once"],
        int(sys.argv[2]) if len(sys.argv) > 2 else 21,
        int(sys.argv[3]) if len(sys.argv) > 3 else 10_000,
    )
