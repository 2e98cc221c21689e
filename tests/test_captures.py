"""Captures: which patterns matched and what each wildcard bound, against the brute-force
reference and against ``lookup``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicmatch import Capture, InvalidPatternError, InvalidTopicError, Matcher, capture, make_dialect
from topicmatch._captures import _slots, _walk

from .reference import MATCHES
from .strategies import PATTERNS, TOPICS

ONE = {"amqp": "*", "mqtt": "+", "nats": "*"}
MANY = {"amqp": "#", "mqtt": "#", "nats": ">"}
SEP = {"amqp": ".", "mqtt": "/", "nats": "."}


def _fill(dialect: str, pattern: str, values: tuple[object, ...]) -> str:
    """The pattern with each wildcard replaced by the words it bound: the topic again."""
    if dialect == "mqtt" and pattern.startswith("$share/"):
        pattern = pattern.split("/", 2)[2]
    words = pattern.split(SEP[dialect]) if pattern else []
    out: list[str] = []
    rest = iter(values)
    for word in words:
        if word == ONE[dialect]:
            value = next(rest)
            assert isinstance(value, str)
            out.append(value)
        elif word == MANY[dialect]:
            value = next(rest)
            assert isinstance(value, tuple)
            out.extend(value)
        else:
            out.append(word)
    assert next(rest, None) is None, "more values than wildcards"
    return SEP[dialect].join(out)


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
@given(data=st.data())
def test_captures_exactly_when_the_reference_matches_and_rebuild_the_topic(
    dialect: str, data: st.DataObject
) -> None:
    pattern = data.draw(PATTERNS[dialect]())
    topic = data.draw(TOPICS[dialect]())
    values = capture(pattern, topic, dialect)
    assert (values is not None) is MATCHES[dialect](pattern, topic)
    if values is not None:
        if dialect == "nats":
            assert all(v for v in values if isinstance(v, tuple)), "'>' binds at least one word"
        assert _fill(dialect, pattern, values) == topic


@pytest.mark.parametrize(
    ("pattern", "topic", "dialect", "values"),
    [
        ("sensors/+/temp", "sensors/kitchen/temp", "mqtt", ("kitchen",)),
        ("sensors/#", "sensors", "mqtt", ((),)),
        ("$share/g/+/x", "a/x", "mqtt", ("a",)),
        ("#.a.#", "a.a.a", "amqp", ((), ("a", "a"))),  # each '#' the fewest words, leftmost first
        ("a.#.#", "a.b", "amqp", ((), ("b",))),
        ("#.*", "a.b.c", "amqp", (("a", "b"), "c")),  # the text's order, not the canonical *.#
        ("*.#", "a.b.c", "amqp", ("a", ("b", "c"))),
        ("", "", "amqp", ()),
        ("orders.>", "orders.a", "nats", (("a",),)),
        ("*.>", "x.y.z", "nats", ("x", ("y", "z"))),
    ],
)
def test_documented_bindings(pattern: str, topic: str, dialect: str, values: tuple[object, ...]) -> None:
    assert capture(pattern, topic, dialect) == values


@pytest.mark.parametrize(
    ("pattern", "topic", "dialect"),
    [
        ("#", "$SYS/x", "mqtt"),  # the '$' rule
        ("+/x", "$a/x", "mqtt"),
        ("$share/g/$SYS/#", "$SYS/x", "mqtt"),  # a shared '$' filter matches nothing
        ("a.>", "a", "nats"),
        ("a.*", "a..b", "nats"),  # a subject with an empty token matches nothing
    ],
)
def test_no_captures_where_the_dialect_does_not_match(pattern: str, topic: str, dialect: str) -> None:
    assert capture(pattern, topic, dialect) is None


def test_errors_are_the_dialects() -> None:
    with pytest.raises(InvalidPatternError):
        capture("a/#/b", "a/x/b", "mqtt")
    with pytest.raises(InvalidTopicError):
        capture("a/+", "a/#", "mqtt")


def test_the_walk_enters_each_position_once_on_a_hostile_pattern() -> None:
    amqp = make_dialect("amqp", max_bytes=4096)
    pattern = ".".join(["#", "a"] * 60 + ["b"])  # many ways to try, none of which matches
    topic = ".".join(["a"] * 180)
    tokens, _joined = _slots(amqp, pattern)
    assert _walk(tokens, topic.split(".")) is None
    words = [*topic.split("."), "b"]
    found = _walk(tokens, words)
    assert found is not None
    assert len(found) <= (len(tokens) + 1) * (len(words) + 1)
    values = capture(pattern, ".".join(words), amqp)
    assert values is not None
    assert values[:2] == ((), ())  # the leftmost '#'s bind nothing


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
@given(data=st.data())
def test_matcher_captures_agree_with_lookup(dialect: str, data: st.DataObject) -> None:
    patterns = data.draw(st.lists(PATTERNS[dialect](), max_size=8))
    topics = data.draw(st.lists(TOPICS[dialect](), min_size=1, max_size=5))
    m = Matcher[int](dialect=dialect)
    holders: dict[str, set[int]] = {}
    for n, pattern in enumerate(patterns):
        m.subscribe(pattern, n % 3)
        holders.setdefault(pattern, set()).add(n % 3)
    for topic in topics:
        found = m.captures(topic)
        assert [c.pattern for c in found] == sorted(p for p in holders if MATCHES[dialect](p, topic))
        union = frozenset(s for c in found for s in c.subscribers)
        assert union == m.lookup(topic)
        for c in found:
            assert isinstance(c, Capture)
            assert c.subscribers == holders[c.pattern]
            assert c.values == capture(c.pattern, topic, dialect)


def test_matcher_captures_for_a_router() -> None:
    router = Matcher[str](dialect="mqtt")
    router.subscribe("sensors/+/temp", "temperature")
    router.subscribe("sensors/+/+", "any reading")
    router.subscribe("alerts/#", "alerts")
    got = {(c.pattern, c.values) for c in router.captures("sensors/dev42/temp")}
    assert got == {("sensors/+/temp", ("dev42",)), ("sensors/+/+", ("dev42", "temp"))}
    assert router.captures("nothing/here") == []
