"""MQTT dialect against a real Mosquitto 2.0 broker (MQTT v5, QoS 1).

Layers as in the AMQP module: documented semantics against the broker,
edge cases library versus broker, generated cases library versus broker.

Mosquitto 2.0.11 departs from the MQTT 5 specification in two places; the
library follows the specification, so these are exempted from the
library-versus-broker comparison and pinned by its own test instead:

* it accepts malformed shared subscriptions: an empty or ``+`` share name
  (``$share//a``, ``$share/+/a``) and a missing or empty filter
  (``$share/g``, ``$share/g/``); the spec requires a ShareName of at least
  one character without wildcards, then ``/`` and a non-empty filter;

The library follows Mosquitto in one more surprising case, checked below like every other:
a shared subscription never receives a ``$`` topic, so one whose filter starts with ``$``
(``$share/g/$x/#``) receives nothing, though ``$x/#`` receives ``$x/b``.

Clients may not publish to topics starting with ``$SYS`` or ``$share``
(Mosquitto answers "not authorized"), except ``$SYS/broker/connection/+/state``,
which is how the ``$SYS`` cases below are observed.
"""

from __future__ import annotations

import random

import pytest

from topicmatch import ALGORITHMS, InvalidPatternError, Matcher

from .oracles import OracleResult, broker_matches, differences, library_matches, random_names

pytestmark = pytest.mark.brokers

SYS_TOPIC = "$SYS/broker/connection/x/state"  # the one $SYS topic clients may publish

#: (filter, topic name, delivered?) as documented in topicmatch's mqtt dialect.
EDGE_CASES: list[tuple[str, str, bool]] = [
    ("#", "a", True),
    ("#", "a/b/c", True),
    ("#", "/", True),
    ("+", "a", True),
    ("+", "a/b", False),
    ("+", "/", False),
    ("+/+", "/", True),
    ("/#", "/", True),
    ("/#", "/a", True),
    ("a/#", "a", True),  # '#' also matches the parent level
    ("a/#", "a/b/c", True),
    ("a/+", "a", False),
    ("a/+", "a/", True),  # empty levels are real levels
    ("a//b", "a//b", True),
    ("a/+/b", "a//b", True),
    ("a/b", "a/b/", False),
    ("A", "a", False),  # case-sensitive
    ("#", "$x/b", False),  # '$' topics: no leading wildcard matches them
    ("+/b", "$x/b", False),
    ("+", "$x", False),
    ("$x/#", "$x/b", True),
    ("$x/#", "$x", True),
    ("$x/+", "$x/b", True),
    ("a/#", "a/$x", True),  # the rule is about the first level only
    ("#", SYS_TOPIC, False),
    ("+/broker/#", SYS_TOPIC, False),
    ("$SYS/#", SYS_TOPIC, True),
    ("$SYS/broker/connection/+/state", SYS_TOPIC, True),
    ("$share/g/a/#", "a/b", True),  # $share/<group>/<filter> matches as <filter>
    ("$share/g/#", "a", True),
    ("$share/g/+/b", "a/b", True),
    ("$share/h/+/b", "a/b", True),
    ("$share/g/#", "$x/b", False),
    ("$share/g/+/b", "$x/b", False),
    ("$share/g//a", "/a", True),
]
INVALID_FILTERS = ["", "a+", "+a", "#a", "a#", "a/#/b", "#/a", "a/b+", "$share", "$share/g+/a", "$share/#/a"]
INVALID_TOPICS = ["", "+", "#", "a/+", "a/#", "a+", "#a"]
#: Valid topic names that Mosquitto refuses to take from a client (policy, not syntax).
FORBIDDEN_TOPICS = ["$SYS/b", "$SYS", "$share/g/a", "$share"]
#: Shared subscriptions Mosquitto accepts against the spec (see the module docstring).
LENIENT_SHARES = ["$share//a", "$share/+/a", "$share/g", "$share/g/"]
#: Shared subscriptions with a '$' filter, which Mosquitto (and so the library) never delivers to.
DOLLAR_SHARES = [("$share/g/$x/#", "$x/b"), ("$share/g/$x", "$x"), ("$share/g/$SYS/#", SYS_TOPIC)]

EDGE_PATTERNS = list(
    dict.fromkeys(
        [p for p, _, _ in EDGE_CASES]
        + INVALID_FILTERS
        + LENIENT_SHARES
        + [p for p, _ in DOLLAR_SHARES]
        + ["$x/#"]
    )
)
EDGE_TOPICS = list(
    dict.fromkeys(
        [t for _, t, _ in EDGE_CASES] + INVALID_TOPICS + FORBIDDEN_TOPICS + [t for _, t in DOLLAR_SHARES]
    )
)

PATTERN_WORDS = ["a", "a", "b", "$x", "", "+", "+", "#", "#", "a+"]
TOPIC_WORDS = ["a", "a", "a", "b", "b", "$x", "$x", "", "", "+", "#"]
SHARE_PREFIXES = ["$share/g/", "$share/h/"]
SEEDS = [11, 22, 33]
BATCH = 150


def _share_parts(pattern: str) -> list[str] | None:
    """['$share', group, *filter levels] for a shared subscription, else None."""
    return pattern.split("/") if pattern.startswith("$share/") else None


def mosquitto_lenient_share(pattern: str) -> bool:
    """A shared subscription that Mosquitto accepts although the spec makes it invalid."""
    parts = _share_parts(pattern)
    return parts is not None and (len(parts) < 3 or parts[1] in ("", "+") or parts[2:] == [""])


def compare(oracle: OracleResult, algorithm: str) -> list[str]:
    library = library_matches("mqtt", oracle.patterns, oracle.topics, algorithm=algorithm)
    return differences(oracle, library, skip_validity=mosquitto_lenient_share)


@pytest.fixture(scope="module")
def edge(mosquitto: tuple[str, int]) -> OracleResult:
    return broker_matches("mqtt", EDGE_PATTERNS, EDGE_TOPICS, address=mosquitto)


@pytest.fixture(scope="module", params=SEEDS, ids=[f"seed{s}" for s in SEEDS])
def generated(request: pytest.FixtureRequest, mosquitto: tuple[str, int]) -> OracleResult:
    rng = random.Random(request.param)
    patterns = random_names(rng, PATTERN_WORDS, "/", BATCH)
    patterns = [rng.choice(SHARE_PREFIXES) + p if p and rng.random() < 0.15 else p for p in patterns]
    topics = random_names(rng, TOPIC_WORDS, "/", BATCH)
    return broker_matches("mqtt", patterns, topics, address=mosquitto)


@pytest.mark.parametrize(("pattern", "topic", "expected"), EDGE_CASES)
def test_broker_matches_documented_semantics(
    edge: OracleResult, pattern: str, topic: str, expected: bool
) -> None:
    assert edge.matched(pattern, topic) is expected


def test_broker_rejects_invalid_filters_and_topics(edge: OracleResult) -> None:
    for pattern in INVALID_FILTERS:
        assert edge.pattern_verdicts[edge.patterns.index(pattern)] == "rejected", pattern
    for topic in INVALID_TOPICS:
        assert edge.topic_verdicts[edge.topics.index(topic)] == "rejected", topic
    for topic in FORBIDDEN_TOPICS:
        assert edge.topic_verdicts[edge.topics.index(topic)] == "forbidden", topic


def test_mosquitto_accepts_malformed_shared_subscriptions(edge: OracleResult) -> None:
    """Pinned deviation: Mosquitto accepts these, the library (and the spec) reject them."""
    for pattern in LENIENT_SHARES:
        assert mosquitto_lenient_share(pattern)
        assert edge.pattern_verdicts[edge.patterns.index(pattern)] == "accepted", pattern
        with pytest.raises(InvalidPatternError):
            Matcher(algorithm="naive", dialect="mqtt").subscribe(pattern, 0)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_no_dollar_topic_reaches_a_shared_subscription(edge: OracleResult, algorithm: str) -> None:
    """Mosquitto: '$share/g/$x/#' gets nothing though '$x/#' gets '$x/b'; the library agrees."""
    assert edge.matched("$x/#", "$x/b")
    for pattern, topic in DOLLAR_SHARES:
        assert not edge.matched(pattern, topic), (pattern, topic)
        matcher = (
            Matcher(algorithm, "mqtt", topics=[topic])
            if algorithm == "inverted_bitmap"
            else Matcher(algorithm, "mqtt")
        )
        matcher.subscribe(pattern, 0)
        assert matcher.lookup(topic) == frozenset(), (algorithm, pattern, topic)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_edge_cases_library_agrees_with_broker(edge: OracleResult, algorithm: str) -> None:
    problems = compare(edge, algorithm)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_generated_library_agrees_with_broker(generated: OracleResult, algorithm: str) -> None:
    problems = compare(generated, algorithm)
    assert not problems, "\n".join(problems)


def test_generated_cases_are_not_trivial(generated: OracleResult) -> None:
    """The alphabet must make deliveries common, and repeated patterns must behave alike."""
    deliveries = sum(len(m) for m in generated.matches)
    subscribed = sum(1 for i in range(len(generated.patterns)) if generated.pattern_ok(i))
    assert 2 * len(generated.topics) < deliveries < subscribed * len(generated.topics) // 2
    assert any(generated.topic_verdicts[j] == "rejected" for j in range(len(generated.topics)))
    assert any(generated.pattern_verdicts[i] == "rejected" for i in range(len(generated.patterns)))
    first: dict[str, int] = {}
    for i, pattern in enumerate(generated.patterns):
        k = first.setdefault(pattern, i)
        for received in generated.matches:
            assert (i in received) == (k in received), f"duplicate subscriptions to {pattern!r} differ"
    assert len(first) < len(generated.patterns), "no repeated pattern: duplicates go untested"
