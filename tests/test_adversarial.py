"""Patterns built to make backtracking matchers explode stay polynomial in every algorithm.

A matcher that tries every way of splitting the topic among the '#'s needs C(words, hashes)
steps: C(250, 8) is about 4e14 here. A polynomial one needs O(words x pattern length). The
steps are counted, not timed (a clock measures the machine's load as much as the matcher): on
the pure build, the lines of topicmatch's code that subscribing and looking up run, against a
budget of :data:`STEPS_PER_WORD_AND_TOKEN` x words x pattern words (the algorithms take 1 to 8;
an exponential matcher is stopped as soon as it overruns). The compiled build runs the same
source, compiled; there the answers are checked.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from topicmatch import ALGORITHMS
from topicmatch._words import HASH, pattern_matches

from .conftest import make_matcher
from .reference import amqp_matches
from .steps import steps_run

WORDS = 250
LIMITS = {"max_bytes": 4 * WORDS, "max_words": WORDS}
#: Lines run per topic word and pattern word: the algorithms take 1 to 7 (the tries take most), an
#: exponential matcher about 1e11 on these cases.
STEPS_PER_WORD_AND_TOKEN = 50
SECOND = "#.a.#.a.#.a"  # a second pattern sharing the prefix

CASES = pytest.mark.parametrize(
    ("pattern", "topic", "expected"),
    [
        ("#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.b", ".".join(["a"] * WORDS), False),
        ("#.a.#.a.#.a.#.a.#.a.#.a.#.a.#.b", ".".join(["a"] * (WORDS - 1) + ["b"]), True),
        ("#.#.#.#.#.#.#.#.c", ".".join(["a"] * WORDS), False),
        ("*.#.*.#.*.#.*.#.b", ".".join(["a"] * WORDS), False),
    ],
)


def _subscribe_and_look_up(algorithm: str, pattern: str, topic: str) -> Callable[[], frozenset[object]]:
    """The work of one case, ready to run: the inverted bitmap matches at subscription (against
    its topic space), the others at lookup."""
    m = make_matcher(algorithm, "amqp", [topic], **LIMITS)

    def work() -> frozenset[object]:
        m.subscribe(pattern, 1)
        m.subscribe(SECOND, 2)
        return frozenset(m.lookup(topic))

    return work


@CASES
def test_many_hashes_give_the_right_answer(algorithm: str, pattern: str, topic: str, expected: bool) -> None:
    result = _subscribe_and_look_up(algorithm, pattern, topic)()
    assert (1 in result) is expected


@CASES
@pytest.mark.pure("counts the lines of the core's Python code, which the compiled build has not")
def test_many_hashes_take_polynomially_many_steps(
    algorithm: str, pattern: str, topic: str, expected: bool
) -> None:
    tokens = len(pattern.split(".")) + len(SECOND.split("."))
    budget = STEPS_PER_WORD_AND_TOKEN * WORDS * tokens
    answers: list[frozenset[object]] = []
    work = _subscribe_and_look_up(algorithm, pattern, topic)
    steps = steps_run(lambda: answers.append(work()), budget)
    assert (1 in answers[0]) is expected
    assert steps <= budget, f"{algorithm}: {steps:,} steps"


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
