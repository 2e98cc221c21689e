"""NATS dialect against a real nats-server 2.9, in default and pedantic mode.

Layers as in the AMQP module: documented semantics against the server,
edge cases library versus server, generated cases library versus server,
each with the client's ``pedantic`` option off and on.

Observed and pinned below: in pedantic mode the server answers a subject
with wildcard tokens with ``-ERR 'Invalid Publish Subject'`` but still
routes it. The library rejects such a topic in pedantic mode, matching the
error; what it would have matched is not compared.
"""

from __future__ import annotations

import random

import pytest

from topicmatch import ALGORITHMS

from .oracles import OracleResult, broker_matches, differences, library_matches, random_names

pytestmark = pytest.mark.brokers

#: (subscription, published subject, delivered?) as documented, in default mode.
EDGE_CASES: list[tuple[str, str, bool]] = [
    (">", "a", True),
    (">", "a.b.c", True),
    ("a.>", "a", False),  # '>' is one or more tokens
    ("a.>", "a.b", True),
    ("a.>", "a.b.c", True),
    ("*", "a", True),
    ("*", "a.b", False),
    ("a.*", "a.b", True),
    ("a.*", "a", False),
    ("*.>", "a", False),
    ("*.>", "a.b", True),
    ("*.b", "$x.b", True),  # no '$' rule
    ("a*", "a*", True),  # glued wildcards are literal
    ("a*", "ab", False),
    ("a>", "a>", True),
    ("a.*", "a.*", True),  # wildcard tokens in a published subject are literal
    ("a.b", "a.*", False),
    ("a.>", "a.>", True),
    ("a.b", "a.>", False),
    ("*", ">", True),
    (">", "a..b", False),  # a subject with an empty token matches nothing
    ("a.*.b", "a..b", False),
    (">", ".a", False),
    (">", "a.", False),
    ("*.*", "a.", False),
    ("A", "a", False),  # case-sensitive
]
INVALID_SUBSCRIPTIONS = ["a..b", ".a", "a.", ".", "a.>.b", ">.a", ">.>"]
UNSENDABLE = ["", " ", "a b", "a\tb"]
#: Subjects the server refuses to publish in pedantic mode (and accepts otherwise).
PEDANTIC_INVALID_TOPICS = ["a..b", ".a", "a.", ".", "a.*", "a.>", ">", "*", "*.a"]
PEDANTIC_VALID_TOPICS = ["a*", "a>", "a.b", "$x.b"]

EDGE_PATTERNS = list(dict.fromkeys([p for p, _, _ in EDGE_CASES] + INVALID_SUBSCRIPTIONS + UNSENDABLE))
EDGE_TOPICS = list(
    dict.fromkeys(
        [t for _, t, _ in EDGE_CASES] + UNSENDABLE + PEDANTIC_INVALID_TOPICS + PEDANTIC_VALID_TOPICS
    )
)

PATTERN_WORDS = ["a", "a", "b", "$x", "", "*", "*", ">", ">", "a*"]
TOPIC_WORDS = ["a", "a", "a", "b", "b", "$x", "", "*", ">"]
SEEDS = [11, 22, 33]
BATCH = 150
MODES = [False, True]


@pytest.fixture(scope="module", params=MODES, ids=["default", "pedantic"])
def edge(request: pytest.FixtureRequest, nats_server: tuple[str, int]) -> OracleResult:
    return broker_matches("nats", EDGE_PATTERNS, EDGE_TOPICS, address=nats_server, pedantic=request.param)


@pytest.fixture(scope="module")
def edge_default(nats_server: tuple[str, int]) -> OracleResult:
    return broker_matches("nats", EDGE_PATTERNS, EDGE_TOPICS, address=nats_server)


@pytest.fixture(scope="module")
def edge_pedantic(nats_server: tuple[str, int]) -> OracleResult:
    return broker_matches("nats", EDGE_PATTERNS, EDGE_TOPICS, address=nats_server, pedantic=True)


@pytest.fixture(
    scope="module",
    params=[(s, m) for s in SEEDS for m in MODES],
    ids=[f"seed{s}-{'pedantic' if m else 'default'}" for s in SEEDS for m in MODES],
)
def generated(request: pytest.FixtureRequest, nats_server: tuple[str, int]) -> OracleResult:
    seed, pedantic = request.param
    rng = random.Random(seed)
    patterns = random_names(rng, PATTERN_WORDS, ".", BATCH)
    topics = random_names(rng, TOPIC_WORDS, ".", BATCH)
    return broker_matches("nats", patterns, topics, address=nats_server, pedantic=pedantic)


def compare(oracle: OracleResult, algorithm: str) -> list[str]:
    library = library_matches(
        "nats", oracle.patterns, oracle.topics, algorithm=algorithm, pedantic=oracle.pedantic
    )
    return differences(oracle, library)


@pytest.mark.parametrize(("pattern", "topic", "expected"), EDGE_CASES)
def test_server_matches_documented_semantics(
    edge_default: OracleResult, pattern: str, topic: str, expected: bool
) -> None:
    assert edge_default.matched(pattern, topic) is expected


def test_server_rejects_invalid_subscriptions(edge: OracleResult) -> None:
    for pattern in INVALID_SUBSCRIPTIONS:
        assert edge.pattern_verdicts[edge.patterns.index(pattern)] == "rejected", pattern
    for text in UNSENDABLE:
        assert edge.pattern_verdicts[edge.patterns.index(text)] == "unsendable", repr(text)
        assert edge.topic_verdicts[edge.topics.index(text)] == "unsendable", repr(text)


def test_pedantic_decides_which_subjects_can_be_published(
    edge_default: OracleResult, edge_pedantic: OracleResult
) -> None:
    for topic in PEDANTIC_INVALID_TOPICS:
        assert edge_default.topic_verdicts[edge_default.topics.index(topic)] == "accepted", topic
        assert edge_pedantic.topic_verdicts[edge_pedantic.topics.index(topic)] == "rejected", topic
    for topic in PEDANTIC_VALID_TOPICS:
        assert edge_pedantic.topic_verdicts[edge_pedantic.topics.index(topic)] == "accepted", topic


def test_pedantic_rejection_of_wildcard_subjects_is_advisory(edge_pedantic: OracleResult) -> None:
    """Pinned server behaviour: -ERR, yet the message is routed (empty tokens are not)."""
    assert edge_pedantic.topic_verdicts[edge_pedantic.topics.index("a.*")] == "rejected"
    assert edge_pedantic.matched("a.*", "a.*")
    assert edge_pedantic.matched(">", "a.>")
    assert not edge_pedantic.matched(">", "a..b")


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_edge_cases_library_agrees_with_server(edge: OracleResult, algorithm: str) -> None:
    problems = compare(edge, algorithm)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_generated_library_agrees_with_server(generated: OracleResult, algorithm: str) -> None:
    problems = compare(generated, algorithm)
    assert not problems, "\n".join(problems)


def test_generated_cases_are_not_trivial(generated: OracleResult) -> None:
    """The alphabet must make deliveries common, and repeated patterns must behave alike."""
    deliveries = sum(len(m) for j, m in enumerate(generated.matches) if generated.topic_ok(j))
    subscribed = sum(1 for i in range(len(generated.patterns)) if generated.pattern_ok(i))
    assert 2 * len(generated.topics) < deliveries < subscribed * len(generated.topics) // 2
    assert any(generated.pattern_verdicts[i] == "rejected" for i in range(len(generated.patterns)))
    first: dict[str, int] = {}
    for i, pattern in enumerate(generated.patterns):
        k = first.setdefault(pattern, i)
        for received in generated.matches:
            assert (i in received) == (k in received), f"duplicate subscriptions to {pattern!r} differ"
    assert len(first) < len(generated.patterns), "no repeated pattern: duplicates go untested"
