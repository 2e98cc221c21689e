"""TopicIndex, the reverse index, against the reference matchers on random stores and filters."""

from __future__ import annotations

import gc
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicmatch import DIALECTS, InvalidPatternError, InvalidTopicError, TopicIndex
from topicmatch._topic_index import WALK_FLOOR, WALK_SHARE

from .reference import MATCHES
from .strategies import PATTERNS, TOPICS


@pytest.mark.parametrize("dialect", DIALECTS)
@given(data=st.data())
def test_match_is_every_stored_topic_the_reference_matches(dialect: str, data: st.DataObject) -> None:
    topics = data.draw(st.lists(TOPICS[dialect](), max_size=12))
    gone = data.draw(st.lists(st.sampled_from(topics), max_size=3)) if topics else []
    index = TopicIndex[int](dialect)
    for i, topic in enumerate(topics):
        index.set(topic, i)
    for topic in gone:
        index.discard(topic)
    stored = {t: i for i, t in enumerate(topics) if t not in gone}
    assert len(index) == len(stored)
    for _ in range(3):
        pattern = data.draw(PATTERNS[dialect]())
        expected = {t: v for t, v in stored.items() if MATCHES[dialect](pattern, t)}
        assert index.match(pattern) == expected, pattern


def test_values_replace_and_discards_prune() -> None:
    index = TopicIndex[str](dialect="mqtt")
    assert index.set("a/b", "1") is True
    assert index.set("a/b", "2") is False
    assert index.get("a/b") == "2"
    assert index.discard("a/b") is True
    assert index.discard("a/b") is False
    assert index._trie.kids[0] == {}  # the branch went with the topic
    assert index.get("a/b", "none") == "none"
    with pytest.raises(InvalidTopicError):
        index.set("a/+", "x")
    with pytest.raises(InvalidPatternError):
        index.match("a/#/b")
    assert len(index) == 0


def test_a_filter_visits_its_branch_not_the_store() -> None:
    """The walk's cost, counted in (node, position) pairs: a filter whose first word is literal
    stays in its branch, whatever else the store holds; '+' first fans out over the store."""
    index = TopicIndex[int](dialect="mqtt")
    for i in range(5_000):
        index.set(f"devices/d{i}/state", i)
    index.set("home/kitchen/temp", -1)
    assert index.match("home/+/temp") == {"home/kitchen/temp": -1}
    assert index.last_walk <= 4
    assert index.match("devices/d42/+") == {"devices/d42/state": 42}
    assert index.last_walk <= 4
    assert len(index.match("+/+/state")) == 5_000
    assert index.last_walk == len(index) // WALK_SHARE + WALK_FLOOR  # it gave up: a scan answered


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
def test_walk_and_scan_agree_with_the_reference(dialect: str) -> None:
    """Narrow filters are walked, broad ones scanned after the walk's budget (or, wildcards
    only, counted): every answer is the reference's, and both ways are taken."""
    rng = random.Random(5)
    sep = "/" if dialect == "mqtt" else "."
    words = ["a", "b", "c", "$x", "d"] + ([""] if dialect != "mqtt" else [])
    index = TopicIndex[int](dialect=dialect)
    topics = {sep.join(rng.choices(words, k=rng.randint(1, 4))) for _ in range(600)}
    topics = {t for t in topics if t}
    for n, topic in enumerate(sorted(topics)):
        index.set(topic, n)
    wild_one, wild_many = ("+", "#") if dialect == "mqtt" else ("*", ">" if dialect == "nats" else "#")
    pattern_words = ["a", "b", "$x", wild_one, wild_one] + (["#"] if dialect == "amqp" else [])
    ways = set()
    for _ in range(300):
        levels = rng.choices(pattern_words, k=rng.randint(1, 4))
        if rng.random() < 0.5:
            levels.append(wild_many)
        pattern = sep.join(levels)
        expected = {t: index.get(t) for t in topics if MATCHES[dialect](pattern, t)}
        assert index.match(pattern) == expected, pattern
        if any(level not in (wild_one, wild_many) for level in levels):
            ways.add(index.last_walk == len(index) // WALK_SHARE + WALK_FLOOR)
    assert ways == {True, False}


def test_stored_topics_add_nothing_the_collector_tracks() -> None:
    """A broker's million retained topics must not become millions of objects for CPython's
    cyclic collector to traverse at every full collection (topicmatch._engine.topic_trie)."""
    index = TopicIndex[int](dialect="mqtt")
    topics = [f"devices/d{i}/state" for i in range(5_000)]
    gc.collect()
    before = len(gc.get_objects())
    for i, topic in enumerate(topics):
        index.set(topic, i)  # small ints: the values add nothing either
    assert len(gc.get_objects()) - before < 10
    assert index.match("devices/d7/+") == {"devices/d7/state": 7}
