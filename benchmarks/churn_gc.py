"""Where the slowest writes under churn come from: each write timed, each run of CPython's cyclic
collector logged (its generation and duration).

    .venv/bin/python benchmarks/churn_gc.py [SECONDS] [--freeze]

The workload matrix's churn row (300,000 MQTT subscriptions, a subscribe or unsubscribe paced at
10,000 a second among lookups of Zipf topics), run for SECONDS (default 20) on the default,
itself without a cache and the trie, each in a process of its own. Printed per variant: the
writes done, the collections by generation with the full ones' durations, and the five slowest
writes with the collections that ran inside each. A collection runs inside whatever call
allocates past its threshold, a lookup or a write: the matrix's *write max* column shows where
one landed, not what a write costs. ``--freeze``: ``gc.freeze()`` once the matcher is built, as a
program that builds its table and then serves can do (docs/performance.md): the collector then
leaves the objects made until then alone, and only what the churn makes is traversed.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import time
from typing import Any

import default_parts  # benchmarks/default_parts.py, beside this script

from topicmatch.bench import shapes

VARIANTS = ("default", "no cache", "trie")
WRITE_EVERY_NS = 100_000  # 10,000 writes a second, as the matrix's WRITE_RATE


def _run(variant: str, seconds: float, freeze: bool) -> None:
    shape = shapes.churn(300_000, 200_000, 200_000)
    m = default_parts._matcher(variant, shape)
    if freeze:
        gc.collect()
        gc.freeze()
    collections: list[tuple[int, int, int]] = []  # start ns, end ns, generation
    began: list[int] = [0]

    def log(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            began[0] = time.perf_counter_ns()
        else:
            collections.append((began[0], time.perf_counter_ns(), info["generation"]))

    clock = time.perf_counter_ns
    writes: list[tuple[int, int, int, bool, str]] = []  # duration, start, end, subscribe, pattern
    topics, ops = shape.topics, shape.writes
    w = position = 0
    gc.callbacks.append(log)
    try:
        start = clock()
        end, next_write = start + int(seconds * 1e9), start
        while w < len(ops) and (now := clock()) < end:
            if now >= next_write:
                adding, pattern, subscriber = ops[w]
                t0 = clock()
                (m.subscribe if adding else m.unsubscribe)(pattern, subscriber)
                t1 = clock()
                writes.append((t1 - t0, t0, t1, adding, pattern))
                w += 1
                next_write += WRITE_EVERY_NS
                continue
            for topic in topics[position : position + 16]:
                m.lookup(topic)
            position = (position + 16) % len(topics)
    finally:
        gc.callbacks.remove(log)
    by_generation = {g: sum(1 for c in collections if c[2] == g) for g in (0, 1, 2)}
    full = ", ".join(f"{(b - a) / 1e6:,.0f}" for a, b, g in collections if g == 2)
    frozen = f", {gc.get_freeze_count():,} objects frozen" if freeze else ""
    print(f"{variant}: {len(writes):,} writes; collections by generation {by_generation}{frozen}")
    print(f"  full collections, ms: {full}")
    for duration, t0, t1, adding, pattern in sorted(writes, reverse=True)[:5]:
        inside = [f"gen {g} {(b - a) / 1e3:,.0f} µs" for a, b, g in collections if a >= t0 and b <= t1]
        kind = "subscribe" if adding else "unsubscribe"
        ran = ", ".join(inside) or "no collection"
        print(f"  {duration / 1e3:12,.1f} µs  {kind} {pattern!r}; inside: {ran}")


def main(seconds: float, freeze: bool) -> None:
    for variant in VARIANTS:
        command = [sys.executable, __file__, "--child", variant, str(seconds)]
        subprocess.run([*command, "--freeze"] if freeze else command, check=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _run(sys.argv[2], float(sys.argv[3]), "--freeze" in sys.argv)
    else:
        args = [a for a in sys.argv[1:] if a != "--freeze"]
        main(float(args[0]) if args else 20.0, "--freeze" in sys.argv)
