"""Seeded workloads shared by the demo and the benchmarks.

``study_throughput`` is the topic-matching study's throughput workload: 1,000 three-word
subscriptions over the digits 0-9 — subscriber ``i`` gets ``*.d.d`` when ``i % 10 == 0``, else
``d.*.d`` when ``i % 25 == 0``, else ``d.d.*`` when ``i % 45 == 0``, else three literal digits —
and messages where message ``i`` is subscription ``i % 1000`` with each ``*`` replaced by a random
digit.
"""

from __future__ import annotations

import random

__all__ = ["study_throughput"]


def study_throughput(messages: int, seed: int = 7, subscriptions: int = 1000) -> tuple[list[str], list[str]]:
    """Return (patterns, topics); pattern ``i`` belongs to subscriber ``i``."""
    rng = random.Random(seed)
    digits = "0123456789"
    patterns = []
    for i in range(subscriptions):
        words = [rng.choice(digits) for _ in range(3)]
        if i % 10 == 0:
            words[0] = "*"
        elif i % 25 == 0:
            words[1] = "*"
        elif i % 45 == 0:
            words[2] = "*"
        patterns.append(".".join(words))
    topics = []
    for i in range(messages):
        words = patterns[i % subscriptions].split(".")
        topics.append(".".join(rng.choice(digits) if w == "*" else w for w in words))
    return patterns, topics
