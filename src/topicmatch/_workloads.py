"""Seeded workloads shared by the demo and the benchmarks.

``study_throughput`` is the topic-matching study's throughput workload: 1,000 three-word
subscriptions over the digits 0-9 — subscriber ``i`` gets ``*.d.d`` when ``i % 10 == 0``, else
``d.*.d`` when ``i % 25 == 0``, else ``d.d.*`` when ``i % 45 == 0``, else three literal digits —
and messages where message ``i`` is subscription ``i % 1000`` with each ``*`` replaced by a random
digit.
"""

from __future__ import annotations

import bisect
import random

__all__ = ["Zipf", "random_subscriptions", "realistic", "study_throughput"]


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


def random_subscriptions(count: int, words: int = 5, seed: int = 7, vocabulary: int = 100) -> list[str]:
    """``count`` random patterns of ``words`` words (the study's "hot" matcher), about one word in
    ten a ``*``; words drawn uniformly from ``vocabulary`` short words."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(vocabulary)]
    return [
        ".".join("*" if rng.random() < 0.1 else rng.choice(vocab) for _ in range(words)) for _ in range(count)
    ]


class Zipf:
    """Words drawn from a Zipf distribution (exponent 1) over a vocabulary: a few hot words, a
    long tail, as topic words are in real systems. Sampling is O(log vocabulary) by bisection."""

    def __init__(self, vocabulary: int, rng: random.Random) -> None:
        self.words = [f"z{i}" for i in range(vocabulary)]
        total = 0.0
        self.cumulative = []
        for rank in range(1, vocabulary + 1):
            total += 1.0 / rank
            self.cumulative.append(total)
        self.rng = rng

    def word(self) -> str:
        return self.words[bisect.bisect_left(self.cumulative, self.rng.random() * self.cumulative[-1])]


def realistic(
    subscriptions: int, topics: int, seed: int = 7, vocabulary: int = 1000
) -> tuple[list[str], list[str]]:
    """AMQP patterns and topics with Zipf-distributed words, 1-5 words each.

    Patterns: each word is ``*`` with probability 0.03, and one pattern in 20 ends in ``#``, so
    about 13 % of patterns have a wildcard. Topics: words from the same distribution, so hot
    words match hot subscriptions, as in real traffic.
    """
    rng = random.Random(seed)
    zipf = Zipf(vocabulary, rng)
    patterns = []
    for _ in range(subscriptions):
        n = rng.randint(1, 5)
        words = ["*" if rng.random() < 0.03 else zipf.word() for _ in range(n)]
        if rng.random() < 0.05:
            words[-1] = "#"
        patterns.append(".".join(words))
    topic_list = [".".join(zipf.word() for _ in range(rng.randint(1, 5))) for _ in range(topics)]
    return patterns, topic_list
