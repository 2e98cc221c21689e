"""What a Spark worker keeps across batches: each cache within its bound, and the answers exact."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.spark.test_levels import DIALECTS, _expected, _got, _topics, drawn_table
from topicmatch import DEFAULT_CACHE_BYTES, DEFAULT_CACHE_SIZE
from topicmatch.spark import Subscriptions
from topicmatch.spark._worker import Bounded, Compiled, Validator

from .helpers import trie_of

pytestmark = pytest.mark.spark

#: Charge per entry of a Bounded (its _ENTRY_BYTES), counted here independently.
ENTRY = 64


def _arrays_charge(cache: Bounded) -> int:
    """What the entries of a Compiled's arrays hold, by the module docstring's rule: an array
    and its set per result key, an entry per state key."""
    total = 0
    for key, array in cache.entries.items():
        total += ENTRY
        if isinstance(key, frozenset):
            total += sys.getsizeof(array) + key.__sizeof__()
    return total


def test_a_bounded_cache_stays_within_its_entries_and_its_bytes() -> None:
    cache = Bounded(max_entries=3, max_bytes=ENTRY * 3 + 100)
    for i in range(20):
        cache.store(i, str(i), i % 40)
        assert len(cache.entries) <= 3
        assert cache.bytes <= cache.max_bytes
        assert cache.bytes == sum(ENTRY + key % 40 for key in cache.entries)
        assert cache.entries[i] == str(i)  # the newest entry always stays
    cache.store("big", "x", cache.max_bytes)  # charged more than the whole bound: not stored
    assert "big" not in cache.entries
    assert cache.bytes <= cache.max_bytes


def test_the_arrays_stay_within_their_bounds_and_the_answers_stay_exact() -> None:
    # 40 patterns with one subscriber each: topic "w{i}.x" gets {s_i, star}, 40 distinct results.
    pairs = [(f"w{i}.x", f"s{i}") for i in range(40)] + [("*.x", "star")]
    table = Subscriptions.from_pairs(pairs)
    compiled = Compiled("amqp", False, table.payload())
    cache = compiled.arrays
    cache.max_entries, cache.max_bytes = 8, 4000
    topics: list[str | None] = [*(f"w{i}.x" for i in range(40)), *(f"w{i} .x" for i in range(10))]
    stored = 0
    for start in range(0, 40, 5):  # batches of new results, plain and not
        batch: list[str | None] = [*topics[start : start + 5], topics[40 + start // 5]]
        assert _got(table, compiled, batch) == _expected(table, batch)
        assert len(cache.entries) <= 8
        assert cache.bytes == _arrays_charge(cache) <= 4000
        stored += len(cache.entries)
    assert stored > 8  # the bound was reached, and the cache emptied on the way
    again = topics[:40:3]
    assert _got(table, compiled, again) == _expected(table, again)  # after the evictions too


@pytest.mark.parametrize(("dialect", "pedantic"), DIALECTS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_tiny_bounds_change_no_answer(dialect: str, pedantic: bool, data: st.DataObject) -> None:
    table, compiled = drawn_table(data, dialect, pedantic)
    compiled.arrays.max_entries = data.draw(st.integers(1, 4))
    for _ in range(3):
        topics = data.draw(_topics(dialect))
        assert _got(table, compiled, topics) == _expected(table, topics)
        assert len(compiled.arrays.entries) <= compiled.arrays.max_entries


class _CountingSubscribers:
    """A walker's ``subscribers``, counting its calls."""

    def __init__(self, subscribers: Any) -> None:
        self.subscribers = subscribers
        self.calls = 0

    def __call__(self, state: Any) -> Any:
        self.calls += 1
        return self.subscribers(state)


def test_a_dfa_out_of_room_has_each_states_set_united_once() -> None:
    table = Subscriptions.from_pairs([("a.*", "x"), ("a.#", "y"), ("*.b", "z"), ("#.c", "x")])
    compiled = Compiled("amqp", False, table.payload())
    walker = compiled._walker
    assert walker is not None
    topics = pa.array(["a.b", "a.c", "q.b", "a.b.c"])
    where, states = walker.states(topics)  # the DFA learns these states, not their sets yet
    dfa = trie_of(compiled.matcher).stable_dfa()
    assert dfa is not None
    dfa.max_bytes = dfa.bytes  # out of room from here on
    end = states[int(where[0])]
    first, second = walker.subscribers(end), walker.subscribers(end)
    assert first == second
    assert first is not second  # the DFA unites again at each call
    counting = walker.subscribers = _CountingSubscribers(walker.subscribers)
    expected = _expected(table, topics.to_pylist())
    assert _got(table, compiled, topics.to_pylist()) == expected
    assert counting.calls == len(set(where.tolist()))  # once per state a topic ends in
    for _ in range(3):
        assert _got(table, compiled, topics.to_pylist()) == expected
    assert counting.calls == len(set(where.tolist()))  # and never again: the state keys answer


def test_topics_that_are_not_plain_use_the_matchers_result_cache() -> None:
    table = Subscriptions.from_pairs([("a.*", "x"), ("#", "y")])
    compiled = Compiled("amqp", False, table.payload())
    info = compiled.matcher.cache_info
    assert info["max_size"] == DEFAULT_CACHE_SIZE  # the library's defaults
    sightings = []
    for _ in range(3):
        got = _got(table, compiled, ["a.b", "a b", "a.c", "a." + "x" * 300])
        assert got == [{"x", "y"}, {"y"}, {"x", "y"}, "is 302 bytes of UTF-8; the limit is 255"]
        sightings.append(compiled.matcher.cache_info["size"])
    # "a b" (not plain: a space) only: stored at its second sighting, and found at its third;
    # the plain topics never reach the result cache, and the invalid one is never stored.
    assert sightings == [0, 1, 1]
    assert 0 < compiled.matcher.cache_info["bytes"] <= DEFAULT_CACHE_BYTES // 3
    assert all(not isinstance(key, str) for key in compiled.arrays.entries)  # no topic cache here


def test_the_validators_cache_stays_within_its_bounds() -> None:
    validator = Validator("mqtt", False)
    cache = validator.cache
    cache.max_entries, cache.max_bytes = 5, 2000
    topics: list[str | None] = [f"s/{i}" if i % 3 else f"s/+/{i}" for i in range(30)]
    for start in range(0, 30, 4):
        chunk = [*topics[start : start + 4], None]
        reasons = validator.reasons(chunk)
        assert [r is None for r in reasons[:-1]] == ["+" not in str(t) for t in chunk[:-1]]
        assert reasons[-1] == "the topic is null"
        assert len(cache.entries) <= 5
        charge = sum(
            ENTRY + sys.getsizeof(topic) + (0 if reason is None else sys.getsizeof(reason))
            for topic, reason in cache.entries.items()
        )
        assert cache.bytes == charge <= 2000
    assert validator.reasons(topics[:6]) == Validator("mqtt", False).reasons(topics[:6])


def test_the_subscribers_are_cast_once_per_string_type() -> None:
    compiled = Compiled("amqp", False, Subscriptions.from_pairs([("a", "x")]).payload())
    for kind in (pa.string(), pa.large_string(), pa.string(), pa.large_string()):
        assert compiled.subscribers_as(kind).type == kind
    assert len(compiled._typed) == 2
    assert np.array_equal(compiled._array_of(frozenset({0})), [0])
