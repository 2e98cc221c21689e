"""The dialect rules, case by case, and the errors for bad input."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicmatch import (
    ConfigurationError,
    InvalidPatternError,
    InvalidTopicError,
    Matcher,
    TopicMatchError,
    make_dialect,
)
from topicmatch._dialects import _MQTT_BAD_CHAR, DIALECTS, AmqpDialect, Dialect, MqttDialect, NatsDialect

from .strategies import TOPICS

# (pattern, topic, matches?)
AMQP_CASES = [
    ("", "", True),
    ("#", "", True),
    ("*", "", False),
    ("a.#", "a", True),
    ("a.#", "a.b.c", True),
    ("#.a", "a", True),
    ("a..b", "a..b", True),
    ("a.*.b", "a..b", True),
    ("a.*", "a", False),
    ("a*", "ab", False),
    ("a*", "a*", True),
    ("*", "*", True),
    ("#", "#", True),
    ("a.#.b.#", "a.b", True),
    ("a.#.b.#", "a.x.y.b.z", True),
    ("#.#", "", True),
    ("#.#", "a.b", True),
    ("*.#", "", False),
    ("#.*", "a", True),
    ("#.*", "", False),
    ("A", "a", False),
    ("#", "$SYS.x", True),
    ("*.b", "$x.b", True),
    (".", ".", True),
    ("", ".", False),
    ("*", ".", False),
    ("*.*", ".", True),
]
MQTT_CASES = [
    ("a/#", "a", True),
    ("a/#", "a/b/c", True),
    ("#", "a", True),
    ("#", "$SYS/b", False),
    ("+/b", "$SYS/b", False),
    ("$SYS/#", "$SYS/b", True),
    ("$SYS/+", "$SYS/b", True),
    ("+", "/", False),
    ("+/+", "/", True),
    ("/+", "/a", True),
    ("a//b", "a//b", True),
    ("a/+/b", "a//b", True),
    ("$share/g/a/+", "a/b", True),
    ("$share/g/#", "$SYS/x", False),
    ("*", "*", True),
    ("+", "*", True),
    ("a/+", "a", False),
    ("#", "/", True),
    ("+/#", "a", True),
]
NATS_CASES = [
    ("a.>", "a", False),
    ("a.>", "a.b", True),
    ("a.>", "a.b.c", True),
    (">", "a", True),
    ("*", "a", True),
    ("a*", "ab", False),
    ("a*", "a*", True),
    ("*", "*", True),
    (">", ">", True),
    ("a.*", "a..b", False),
    ("a.*.b", "a..b", False),
    (">", "a..b", False),
    ("$x.*", "$x.a", True),
    ("*.b", "$x.b", True),
]


@pytest.mark.parametrize(("pattern", "topic", "expected"), AMQP_CASES)
def test_amqp_rules(
    matcher_factory: Callable[..., Matcher], pattern: str, topic: str, expected: bool
) -> None:
    m = matcher_factory("amqp", [topic])
    m.subscribe(pattern, 1)
    assert (m.lookup(topic) == {1}) is expected


@pytest.mark.parametrize(("pattern", "topic", "expected"), MQTT_CASES)
def test_mqtt_rules(
    matcher_factory: Callable[..., Matcher], pattern: str, topic: str, expected: bool
) -> None:
    m = matcher_factory("mqtt", [topic])
    m.subscribe(pattern, 1)
    assert (m.lookup(topic) == {1}) is expected


@pytest.mark.parametrize(("pattern", "topic", "expected"), NATS_CASES)
def test_nats_rules(
    matcher_factory: Callable[..., Matcher], pattern: str, topic: str, expected: bool
) -> None:
    m = matcher_factory("nats", [topic])
    m.subscribe(pattern, 1)
    assert (m.lookup(topic) == {1}) is expected


@pytest.mark.parametrize(
    ("dialect", "pattern", "reason"),
    [
        ("amqp", "a" * 256, "256 bytes"),
        ("amqp", "é" * 128, "256 bytes"),
        ("mqtt", "", "empty"),
        ("mqtt", "a+", "whole level"),
        ("mqtt", "#a", "whole level"),
        ("mqtt", "a/#/b", "last level"),
        ("mqtt", "a/b#", "whole level"),
        ("mqtt", "$share/g", "$share/<group>/<filter>"),
        ("mqtt", "$share//a", "share group"),
        ("mqtt", "$share/g+/a", "share group"),
        ("mqtt", "$share/g/", "must not be empty"),
        ("mqtt", "a\x00b", "U+0000"),
        ("mqtt", "a\x1fb", "U+001F"),
        ("mqtt", "a\ufffeb", "U+FFFE"),
        ("nats", "", "empty"),
        ("nats", "a..b", "empty tokens"),
        ("nats", "a.", "empty tokens"),
        ("nats", ".a", "empty tokens"),
        ("nats", "a.>.b", "last token"),
        ("nats", "a b", "whitespace"),
        ("amqp", "x" * 10, None),  # valid: a control for the parametrisation
    ],
)
def test_invalid_patterns(dialect: str, pattern: str, reason: str | None) -> None:
    m = Matcher(dialect=dialect)
    if reason is None:
        assert m.subscribe(pattern, 1) is True
        return
    with pytest.raises(InvalidPatternError) as info:
        m.subscribe(pattern, 1)
    assert info.value.dialect == dialect
    assert reason in str(info.value)
    assert isinstance(info.value, TopicMatchError)
    assert isinstance(info.value, ValueError)
    assert len(m) == 0
    assert m.subscriptions() == {}


@pytest.mark.parametrize(
    ("dialect", "topic", "pedantic", "reason"),
    [
        ("amqp", "a" * 256, False, "bytes"),
        ("mqtt", "", False, "empty"),
        ("mqtt", "a/+", False, "must not contain"),
        ("mqtt", "a/#", False, "must not contain"),
        ("mqtt", "a+b", False, "must not contain"),
        ("mqtt", "a\x00", False, "U+0000"),
        ("nats", "", False, "empty"),
        ("nats", "a b", False, "whitespace"),
        ("nats", "a..b", True, "empty tokens"),
        ("nats", "a.*", True, "wildcards"),
        ("nats", "a.>", True, "wildcards"),
    ],
)
def test_invalid_topics(algorithm: str, dialect: str, topic: str, pedantic: bool, reason: str) -> None:
    options = {"pedantic": True} if pedantic else {}
    if algorithm == "inverted_bitmap":
        options["topics"] = ["a"]  # type: ignore[assignment]
    m = Matcher(algorithm, dialect, **options)  # type: ignore[arg-type]
    m.subscribe(">" if dialect == "nats" else "#", 1)
    with pytest.raises(InvalidTopicError, match=re.escape(reason)) as info:
        m.lookup(topic)
    assert info.value.dialect == dialect
    with pytest.raises(InvalidTopicError):
        m.lookup_many(["a", topic])


def test_nats_non_pedantic_accepts_what_pedantic_rejects() -> None:
    m = Matcher(dialect="nats")
    m.subscribe(">", 1)
    m.subscribe("a.*", 2)
    assert m.lookup("a..b") == frozenset()  # accepted, delivered to nobody
    assert m.lookup("a.*") == {1, 2}  # '*' is a literal token here


def test_limits_are_configurable_and_explicit() -> None:
    m = Matcher(max_bytes=1000, max_words=3)
    assert dict(m.limits) == {"max_bytes": 1000, "max_words": 3}
    m.subscribe("a" * 300, 1)
    with pytest.raises(InvalidPatternError, match="4 words; the limit is 3"):
        m.subscribe("a.b.c.d", 1)
    with pytest.raises(InvalidTopicError, match="the limit is 3"):
        m.lookup("a.b.c.d")
    assert dict(Matcher(dialect="mqtt").limits) == {"max_bytes": 65_535, "max_words": 201}  # Mosquitto's


@pytest.mark.parametrize(
    "kwargs",
    [
        {"algorithm": "btree"},
        {"dialect": "stomp"},
        {"max_bytes": 0},
        {"max_words": -1},
        {"pedantic": True},
        {"cache_size": -1},
        {"algorithm": "trie", "topics": ["a"]},
        {"algorithm": "inverted_bitmap"},
    ],
)
def test_configuration_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigurationError):
        Matcher(**kwargs)  # type: ignore[arg-type, type-var]


def test_non_string_input_is_a_typed_error() -> None:
    m = Matcher()
    with pytest.raises(InvalidPatternError, match="must be a str"):
        m.subscribe(42, 1)  # type: ignore[type-var]
    with pytest.raises(InvalidTopicError, match="must be a str"):
        m.lookup(None)  # type: ignore[type-var]
    with pytest.raises(InvalidTopicError, match="must be a str"):
        m.lookup(["a"])  # type: ignore[type-var]


def test_lone_surrogate_is_rejected() -> None:
    with pytest.raises(InvalidTopicError, match="surrogate"):
        Matcher().lookup("a\ud800")


def test_dialect_objects() -> None:
    d = make_dialect("nats", pedantic=True)
    assert d.separator == "."
    assert d.pedantic
    assert not d.dollar_rule
    assert "pedantic=True" in repr(d)


def test_one_class_per_dialect() -> None:
    classes = {name: type(make_dialect(name)) for name in DIALECTS}
    assert DIALECTS == ("amqp", "mqtt", "nats")
    assert classes == {"amqp": AmqpDialect, "mqtt": MqttDialect, "nats": NatsDialect}
    assert all(issubclass(c, Dialect) and c.name == name for name, c in classes.items())


@given(
    st.text()
    | st.text(st.characters(max_codepoint=0xA0))
    | st.sampled_from(["a/b", "a\x7fb", "\x00", "\ufffe"])
)
def test_mqtt_character_check_fast_path_agrees_with_the_full_one(text: str) -> None:
    """Printable ASCII skips the regular expression of the characters MQTT forbids: the verdict
    and the reason are those of the expression alone, for any text."""
    bad = _MQTT_BAD_CHAR.search(text)
    expected = None if bad is None else f"contains U+{ord(bad.group()):04X}, not allowed in MQTT strings"
    assert make_dialect("mqtt")._bad_characters(text) == expected


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
@given(data=st.data())
def test_a_plain_topic_is_its_split(dialect: str, data: st.DataObject) -> None:
    """Dialect.plain_topics: the topics a batch engine may split itself (the Spark workers do,
    in Arrow) are exactly parsed as a split by the dialect's own parser."""
    d = make_dialect(dialect)
    regex, max_chars = d.plain_topics()
    topic = data.draw(st.one_of(TOPICS[dialect](), st.from_regex(regex, fullmatch=True)))
    if re.fullmatch(regex, topic) and len(topic) <= max_chars and topic.count(d.separator) < d.max_words:
        assert d.parse_topic(topic) == topic.split(d.separator)


@pytest.mark.parametrize(
    ("dialect", "pedantic"), [("amqp", False), ("mqtt", False), ("nats", False), ("nats", True)]
)
@given(data=st.data())
def test_a_plain_pattern_is_a_valid_literal(dialect: str, pedantic: bool, data: st.DataObject) -> None:
    """A plain text is also a valid pattern without wildcards, of its words: the Spark pipeline
    validates such patterns in bulk and joins them on the equal topic instead of matching them."""
    d = make_dialect(dialect, pedantic=pedantic)
    regex, max_chars = d.plain_topics()
    text = data.draw(st.from_regex(regex, fullmatch=True))
    if len(text) <= max_chars and text.count(d.separator) < d.max_words:
        assert d.parse_pattern(text) == tuple(text.split(d.separator))
        assert d.parse_topic(text) == text.split(d.separator)


def test_the_matchers_batch_walk_walks_as_lookup_does() -> None:
    """Matcher.batch_walk, for batch engines: its walk gives lookup's answer; None elsewhere."""
    m = Matcher(dialect="mqtt")
    m.subscribe_many([("a/+", 1), ("a/#", 2), ("+/b", 3)])
    assert Matcher("trie").batch_walk() is None
    walk = m.batch_walk()
    assert walk is not None
    assert m.batch_walk() is walk
    topics = ["a/b", "a", "x/b", "a/b/c", "q"]
    states = [walk.root] * len(topics)
    for level in range(3):  # every topic one word further, all together, as a worker walks them
        going = [i for i, t in enumerate(topics) if len(t.split("/")) > level]
        moved = walk.advance([states[i] for i in going], [topics[i].split("/")[level] for i in going])
        for i, state in zip(going, moved, strict=True):
            states[i] = state
    for topic, state in zip(topics, states, strict=True):
        assert walk.subscribers(state) == m.lookup(topic), topic
    m.subscribe("q", 4)
    assert m.batch_walk() is not walk  # a write ends the version it described


def test_max_hashes_follows_rabbitmq_4_3_5() -> None:
    """RabbitMQ 4.3.5 and later refuse a binding key of more than two '#' words (406); earlier
    releases (Debian's 3.10 and 4.0) take any number, as the dialect does by default."""
    assert make_dialect("amqp").parse_pattern("#.a.#.b.#")
    strict = make_dialect("amqp", max_hashes=2)
    assert strict.parse_pattern("#.a.#") == make_dialect("amqp").parse_pattern("#.a.#")
    assert strict.parse_pattern("a#b.##.c")  # '#' is a wildcard only as a whole word
    with pytest.raises(InvalidPatternError, match="3 '#' words; the limit is 2"):
        strict.parse_pattern("#.*.#.*.#")
    m = Matcher(dialect="amqp", max_hashes=2)
    with pytest.raises(InvalidPatternError):
        m.subscribe("a.#.b.#.c.#", "x")
    assert len(m) == 0
    for name, hashes in (("mqtt", 2), ("amqp", 0)):
        with pytest.raises(ConfigurationError):
            make_dialect(name, max_hashes=hashes)
