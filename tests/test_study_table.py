"""The topic-matching study's own example, for every algorithm."""

from __future__ import annotations

from collections.abc import Callable

from topicmatch import Matcher

SUBSCRIPTIONS = [
    ("forex.*", 0),
    ("*.usd", 0),
    ("forex.eur", 0),
    ("*.eur", 1),
    ("forex.*", 1),
    ("trade", 1),
    ("*", 2),
]
LOOKUPS = {"forex.eur": {0, 1}, "forex": {2}, "trade.jpy": set(), "forex.jpy": {0, 1}, "trade": {1, 2}}


def test_study_table(matcher_factory: Callable[..., Matcher]) -> None:
    m = matcher_factory(topics=list(LOOKUPS))
    for pattern, subscriber in SUBSCRIPTIONS:
        assert m.subscribe(pattern, subscriber) is True
    assert len(m) == len(SUBSCRIPTIONS)
    for topic, expected in LOOKUPS.items():
        assert m.lookup(topic) == expected, topic
    assert m.lookup_many(list(LOOKUPS)) == list(LOOKUPS.values())
    for pattern, subscriber in SUBSCRIPTIONS:
        assert m.unsubscribe(pattern, subscriber) is True
    for topic in LOOKUPS:
        assert m.lookup(topic) == frozenset(), topic
    assert len(m) == 0
    assert m.subscriptions() == {}
