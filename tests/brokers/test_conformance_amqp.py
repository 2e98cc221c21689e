"""AMQP dialect against a real RabbitMQ 3.10 topic exchange.

Three layers, so a failure says where the truth lies:

1. the documented semantics (``EDGE_CASES``) checked against the broker alone;
2. the same edge cases, library versus broker, for every algorithm;
3. seeded random patterns and topics over a tiny alphabet (so that matches
   really happen), library versus broker, for every algorithm.
"""

from __future__ import annotations

import random

import pytest

from topicmatch import ALGORITHMS

from .oracles import OracleResult, broker_matches, differences, library_matches, random_names

pytestmark = pytest.mark.brokers

LONG = "x" * 255  # the longest key a shortstr carries
E255 = "é" * 127 + "a"  # 255 bytes of UTF-8

#: (binding key, routing key, delivered?) as documented in topicmatch's amqp dialect.
EDGE_CASES: list[tuple[str, str, bool]] = [
    ("", "", True),  # the empty key has zero words
    ("#", "", True),
    ("*", "", False),
    ("#.#", "", True),
    ("#.*", "", False),
    ("#.*", "a", True),
    ("*", "a", True),
    ("*", "a.b", False),
    ("#", "a.b.c", True),
    ("a.#", "a", True),  # '#' may match zero words
    ("a.#", "a.b.c", True),
    ("#.a", "a", True),
    ("a.#.b.#", "a.b", True),  # '#' anywhere, any number of times
    ("a.#.b.#", "a.x.y.b.z", True),
    ("a.#.b.#", "a.x", False),
    ("a.#.#.b", "a.b", True),
    ("#.#", "a.b", True),
    ("a..b", "a..b", True),  # empty words are real words
    ("a.*.b", "a..b", True),
    ("*.*.*", "a..b", True),
    ("*.*", "a..b", False),
    (".", ".", True),
    ("*.", "a.", True),
    ("*.*", ".a", True),
    ("", ".", False),
    ("a*", "a*", True),  # glued wildcards are literal
    ("a*", "ab", False),
    ("a.*", "a.*", True),  # wildcards in a routing key are literal words
    ("a.b", "a.*", False),
    ("a.#", "a.#", True),
    ("a.b", "a.#", False),
    ("a", "A", False),  # case-sensitive
    ("A", "A", True),
    ("#", "$x", True),  # no '$' rule
    ("*.b", "$x.b", True),
    ("é.*", "é.b", True),
    (LONG, LONG, True),
    (E255, E255, True),
]
#: Keys that AMQP cannot carry (shortstr: at most 255 bytes of UTF-8).
TOO_LONG = ["x" * 256, "é" * 128]

EDGE_PATTERNS = list(dict.fromkeys([p for p, _, _ in EDGE_CASES] + TOO_LONG))
EDGE_TOPICS = list(dict.fromkeys([t for _, t, _ in EDGE_CASES] + TOO_LONG))

PATTERN_WORDS = ["a", "a", "b", "$x", "", "*", "*", "#", "#", "a*"]
TOPIC_WORDS = ["a", "a", "b", "$x", "", "*", "#"]
SEEDS = [11, 22, 33]
BATCH = 150


@pytest.fixture(scope="module")
def edge(rabbitmq: tuple[str, int]) -> OracleResult:
    return broker_matches("amqp", EDGE_PATTERNS, EDGE_TOPICS, address=rabbitmq)


@pytest.fixture(scope="module", params=SEEDS, ids=[f"seed{s}" for s in SEEDS])
def generated(request: pytest.FixtureRequest, rabbitmq: tuple[str, int]) -> OracleResult:
    rng = random.Random(request.param)
    patterns = random_names(rng, PATTERN_WORDS, ".", BATCH)
    topics = random_names(rng, TOPIC_WORDS, ".", BATCH)
    return broker_matches("amqp", patterns, topics, address=rabbitmq)


@pytest.mark.parametrize(("pattern", "topic", "expected"), EDGE_CASES)
def test_broker_matches_documented_semantics(
    edge: OracleResult, pattern: str, topic: str, expected: bool
) -> None:
    assert edge.matched(pattern, topic) is expected


def test_keys_over_255_bytes_cannot_be_sent(edge: OracleResult) -> None:
    for key in TOO_LONG:
        assert edge.pattern_verdicts[edge.patterns.index(key)] == "unsendable"
        assert edge.topic_verdicts[edge.topics.index(key)] == "unsendable"
    assert edge.pattern_verdicts[edge.patterns.index(E255)] == "accepted"


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_edge_cases_library_agrees_with_broker(edge: OracleResult, algorithm: str) -> None:
    library = library_matches("amqp", edge.patterns, edge.topics, algorithm=algorithm)
    problems = differences(edge, library)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_generated_library_agrees_with_broker(generated: OracleResult, algorithm: str) -> None:
    library = library_matches("amqp", generated.patterns, generated.topics, algorithm=algorithm)
    problems = differences(generated, library)
    assert not problems, "\n".join(problems)


def test_generated_cases_are_not_trivial(generated: OracleResult) -> None:
    """The alphabet must make deliveries common, and repeated patterns must behave alike."""
    deliveries = sum(len(m) for m in generated.matches)
    subscribed = sum(1 for i in range(len(generated.patterns)) if generated.pattern_ok(i))
    assert 2 * len(generated.topics) < deliveries < subscribed * len(generated.topics) // 2
    first: dict[str, int] = {}
    for i, pattern in enumerate(generated.patterns):
        k = first.setdefault(pattern, i)
        for received in generated.matches:
            assert (i in received) == (k in received), f"duplicate subscriptions to {pattern!r} differ"
    assert len(first) < len(generated.patterns), "no repeated pattern: duplicates go untested"
