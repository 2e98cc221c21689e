"""Interest queries: ``has_interest``, ``iter_matches`` and ``count`` agree with ``lookup`` on
every algorithm; ``covered`` and ``covering`` with the dialect's ``covers`` over every stored
pattern; ``has_interest`` makes no union (its bytes are counted)."""

from __future__ import annotations

import tracemalloc
from collections import Counter
from collections.abc import Hashable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from topicmatch import ALGORITHMS, InvalidPatternError, InvalidTopicError, Matcher, make_dialect
from topicmatch._engine import trie as _trie

from .strategies import PATTERNS, TOPICS

ALGOS = [a for a in ALGORITHMS if a != "inverted_bitmap"]  # it needs its topic space up front


@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
@given(data=st.data())
def test_interest_iteration_and_count_agree_with_lookup(
    algorithm: str, dialect: str, data: st.DataObject
) -> None:
    matcher: Matcher[int] = Matcher(algorithm, dialect)
    for n, pattern in enumerate(data.draw(st.lists(PATTERNS[dialect](), max_size=10))):
        matcher.subscribe(pattern, n % 4)  # shared subscribers: one may be in several sets
    for topic in data.draw(st.lists(TOPICS[dialect](), min_size=1, max_size=5)):
        found = matcher.lookup(topic)
        each = list(matcher.iter_matches(topic))
        assert Counter(each) == Counter(found)  # each subscriber once
        assert matcher.has_interest(topic) is bool(found)
        assert matcher.count(topic) == len(found)


def test_the_inverted_bitmap_answers_in_its_topic_space() -> None:
    matcher: Matcher[str] = Matcher("inverted_bitmap", topics=["a.b", "c"])
    matcher.subscribe("a.*", "x")
    assert matcher.has_interest("a.b")
    assert not matcher.has_interest("c")
    assert list(matcher.iter_matches("a.b")) == ["x"]


@pytest.mark.parametrize("algorithm", ALGOS)
@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
@given(data=st.data())
def test_covered_and_covering_are_covers_over_every_stored_pattern(
    algorithm: str, dialect: str, data: st.DataObject
) -> None:
    rules = make_dialect(dialect)
    matcher: Matcher[int] = Matcher(algorithm, dialect)
    stored = data.draw(st.lists(PATTERNS[dialect](), max_size=10, unique=True))
    for n, pattern in enumerate(stored):
        matcher.subscribe(pattern, n)
    query = data.draw(PATTERNS[dialect]())

    def some_topic(p: str) -> bool:
        return rules.overlaps(p, p)

    assert set(matcher.covered(query)) == {p for p in stored if some_topic(p) and rules.covers(query, p)}
    wanted = {p for p in stored if rules.covers(p, query)} if some_topic(query) else set()
    assert set(matcher.covering(query)) == wanted
    for pattern, subscribers in {**matcher.covered(query), **matcher.covering(query)}.items():
        assert subscribers == frozenset([stored.index(pattern)])


def test_bad_input_is_the_typed_error_of_lookup() -> None:
    matcher: Matcher[str] = Matcher(dialect="mqtt")
    matcher.subscribe("a/#", "x")
    for call in (matcher.has_interest, matcher.iter_matches, matcher.count):
        with pytest.raises(InvalidTopicError):
            call("a/+")
    for query in (matcher.covered, matcher.covering):
        with pytest.raises(InvalidPatternError):
            query("a/#/b")


def test_has_interest_unites_nothing() -> None:
    """A topic that two big sets match: lookup allocates their union (megabytes), has_interest
    a few small objects. Counted in bytes with tracemalloc."""
    matcher: Matcher[int] = Matcher("trie", "mqtt")
    matcher.subscribe_many([("a/#", n) for n in range(20_000)])
    matcher.subscribe_many([("a/+", n) for n in range(10_000, 30_000)])

    def allocated(call: object) -> int:
        tracemalloc.start()
        try:
            assert callable(call)
            assert call("a/b")
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    assert allocated(matcher.lookup) > 500_000  # the union of 30,000 subscribers
    assert allocated(matcher.has_interest) < 5_000
    first = matcher.iter_matches("a/b")
    assert next(first) in range(30_000)


@pytest.mark.pure("patches a module global of the trie, which its compiled calls do not read")
def test_has_interest_answers_for_the_walk_that_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A write lands during the first walk, so the trie walks again; the second walk, of the
    state after the write, ends early without its union (MQTT's '$' rule, no '$x' branch any
    more). The answer is that walk's (nothing), not the first walk's sets."""
    matcher: Matcher[str] = Matcher("trie", "mqtt")
    matcher.subscribe("$x/#", "s")
    matcher.subscribe("+/a", "other")  # a wildcard at the root: the walk takes the '$' path
    real = _trie.walk_leaves  # type: ignore[attr-defined]
    calls: list[int] = []

    def walk_then_write(*args: Any) -> frozenset[Hashable]:
        result = real(*args)
        calls.append(1)
        if len(calls) == 1:
            matcher.unsubscribe("$x/#", "s")  # a writer, between the walk and its check
        return result

    monkeypatch.setattr(_trie, "walk_leaves", walk_then_write)
    assert not matcher.has_interest("$x/a")
    assert len(calls) == 2  # the write made the trie walk again
