"""topicmatch.compat.paho: paho-mqtt's matcher interface with Mosquitto's semantics.

The cases are MQTT's documented matching examples (the ones paho-mqtt's own tests exercise),
written here from the specification; each is also run on paho itself, which agrees on all of
them. Where paho and Mosquitto disagree ($share, invalid filters), the adapter follows Mosquitto
(tests/brokers checks Mosquitto itself on these rules).
"""

from __future__ import annotations

import pytest
from paho.mqtt import client as paho_client
from paho.mqtt import matcher as paho_matcher

from topicmatch import InvalidPatternError, InvalidTopicError
from topicmatch.compat.paho import MQTTMatcher, topic_matches_sub

MATCHING = [
    ("foo/bar", "foo/bar"),
    ("foo/+", "foo/bar"),
    ("foo/+/baz", "foo/bar/baz"),
    ("foo/+/#", "foo/bar/baz"),
    ("A/B/+/#", "A/B/B/C"),
    ("#", "foo/bar/baz"),
    ("#", "/foo/bar"),
    ("/#", "/foo/bar"),
    ("$SYS/bar", "$SYS/bar"),
    ("foo/#", "foo"),  # '#' includes the parent level
    ("+/+", "/finance"),
    ("foo/+/baz", "foo//baz"),  # '+' matches an empty level
]
NOT_MATCHING = [
    ("test/6/#", "test/3"),
    ("foo/bar", "foo"),
    ("foo/+", "foo/bar/baz"),
    ("foo/+/baz", "foo/bar/bar"),
    ("foo/+/#", "fo2/bar/baz"),
    ("/#", "foo/bar"),
    ("#", "$SYS/bar"),
    ("+/bar", "$SYS/bar"),
    ("$BOB/bar", "$SYS/bar"),
]


@pytest.mark.parametrize(("sub", "topic"), MATCHING + NOT_MATCHING)
def test_the_documented_cases_as_paho_decides_them(sub: str, topic: str) -> None:
    expected = (sub, topic) in MATCHING
    assert paho_client.topic_matches_sub(sub, topic) is expected  # paho agrees with the spec here
    assert topic_matches_sub(sub, topic) is expected
    m = MQTTMatcher()
    m[sub] = "value"
    assert list(m.iter_match(topic)) == (["value"] if expected else [])


def test_the_mapping_interface_behaves_as_pahos() -> None:
    ours, theirs = MQTTMatcher(), paho_matcher.MQTTMatcher()  # type: ignore[no-untyped-call]
    for m in (ours, theirs):
        m["a/+"] = 1
        m["a/#"] = 2
        m["a/+"] = 3  # replaces
        assert m["a/+"] == 3
        assert sorted(m.iter_match("a/b")) == [2, 3]
        del m["a/+"]
        with pytest.raises(KeyError):
            m["a/+"]
        with pytest.raises(KeyError):
            del m["a/+"]
        m["a/#"] = None  # None is no value
        with pytest.raises(KeyError):
            m["a/#"]
        assert list(m.iter_match("a/b")) == []


def test_where_mosquitto_and_paho_disagree_the_adapter_follows_mosquitto() -> None:
    shared = "$share/group/sensors/#"
    assert not paho_client.topic_matches_sub(shared, "sensors/kitchen")  # paho: a literal '$share'
    assert topic_matches_sub(shared, "sensors/kitchen")
    theirs = paho_matcher.MQTTMatcher()  # type: ignore[no-untyped-call]
    theirs["a/#/b"] = 1  # paho stores an invalid filter
    ours = MQTTMatcher()
    with pytest.raises(InvalidPatternError):
        ours["a/#/b"] = 1
    with pytest.raises(InvalidTopicError):
        list(ours.iter_match("a/+"))


@pytest.mark.parametrize(
    ("sub", "topic"), [("", "foo"), ("a/#/b", "a/x/b"), ("a+", "a+"), ("+", "+"), ("a", "")]
)
def test_topic_matches_sub_answers_a_bool_for_what_mosquitto_refuses(sub: str, topic: str) -> None:
    """paho documents a bool; an input Mosquitto refuses matches nothing (paho itself answers
    False for the empty filter, and some of the others as its matcher happens to)."""
    assert topic_matches_sub(sub, topic) is False
    if sub == "":
        assert paho_client.topic_matches_sub(sub, topic) is False
