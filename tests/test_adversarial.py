"""Patterns built to make backtracking matchers explode stay polynomial in every algorithm.

A matcher that tries every way of splitting the topic among the '#'s needs C(words, hashes)
steps: C(250, 8) is about 4e14 here, far beyond any time bound. A polynomial one needs
O(words x pattern length), milliseconds. The bound asserted is generous (seconds) so that a
loaded machine cannot fail it, while an exponential matcher could never meet it.
"""

from __future__ import annotations

import time

import pytest

from topicmatch import ALGORITHMS
from topicmatch._words import HASH, pattern_matches

from .conftest import make_matcher
from .reference import amqp_matches

WORDS = 250
LIMITS = {"max_bytes": 4 * WORDS, "max_words": WORDS}


@pytest.mark.parametrize(
    ("pattern", "topic", "expected"),
    [
        ("#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.b", ".".join(["a"] * WORDS), False),
        ("#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.b", ".".join(["a"] * (WORDS - 1) + ["b"]), True),
        ("#.#.#.#.#.#.#.#.c", ".".join(["a"] * WORDS), False),
        ("*.#.*.#.*.#.*.#.b", ".".join(["a"] * WORDS), False),
    ],
)
def test_many_hashes_stay_fast(algorithm: str, pattern: str, topic: str, expected: bool) -> None:
    m = make_matcher(algorithm, "amqp", [topic], **LIMITS)
    m.subscribe(pattern, 1)
    m.subscribe("#.a.#.a.#.a", 2)  # a second pattern sharing the prefix
    start = time.perf_counter()
    result = m.lookup(topic)
    elapsed = time.perf_counter() - start
    assert (1 in result) is expected
    assert elapsed < 5.0, f"{algorithm} took {elapsed:.1f}s"


def test_one_pattern_matcher_is_polynomial() -> None:
    """The two-pointer matcher's work is bounded by a count, not a clock."""
    tokens = (HASH, "a") * 30 + ("b",)
    words = ["a"] * 200
    calls = 0

    class Counting(list[str]):
        def __getitem__(self, index):  # type: ignore[no-untyped-def]
            nonlocal calls
            calls += 1
            return super().__getitem__(index)

    assert pattern_matches(tokens, Counting(words)) is False
    assert calls <= len(tokens) * len(words) * 2


def test_every_algorithm_agrees_with_the_reference_on_the_adversarial_cases() -> None:
    topics = [".".join(["a"] * 40), ".".join(["a"] * 39 + ["b"]), "a", "b", ""]
    patterns = ["#.a.#.a.#.a.#", "#.a.#.a.#.b", "#.#.#", "a.#.b"]
    for algorithm in ALGORITHMS:
        m = make_matcher(algorithm, "amqp", topics)
        for i, pattern in enumerate(patterns):
            m.subscribe(pattern, i)
        for topic in topics:
            expected = {i for i, pattern in enumerate(patterns) if amqp_matches(pattern, topic)}
            assert m.lookup(topic) == expected, (algorithm, topic)
    assert amqp_matches("#.a.#.a.#.a.#", topics[0])  # the reference itself, on the cases that
    assert not amqp_matches("#.a.#.a.#.b", topics[0])  # a backtracking matcher gets slow on
