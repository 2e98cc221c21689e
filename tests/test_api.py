"""The Matcher API: idempotence, views, snapshots, the topic space, the cache."""

from __future__ import annotations

import gc
import re
import subprocess
import sys
from collections.abc import Callable, Hashable, Iterator
from enum import Enum
from typing import Any

import pytest

from topicmatch import (
    InvalidPairError,
    InvalidPatternError,
    InvalidSubscriberError,
    InvalidTopicError,
    Matcher,
    MatcherSnapshot,
    TopicMatchError,
    UnknownTopicError,
)


def test_subscribe_is_idempotent_and_unsubscribe_tolerant(matcher_factory: Callable[..., Matcher]) -> None:
    m = matcher_factory(topics=["a.b"])
    assert m.subscribe("a.*", "x") is True
    assert m.subscribe("a.*", "x") is False
    assert len(m) == 1
    assert m.unsubscribe("a.*", "nobody") is False
    assert m.unsubscribe("zzz", "x") is False
    assert m.lookup("a.b") == {"x"}
    assert m.unsubscribe("a.*", "x") is True
    assert m.unsubscribe("a.*", "x") is False
    assert len(m) == 0


def test_equivalent_patterns_stay_distinct(matcher_factory: Callable[..., Matcher]) -> None:
    """'#.#' and '#' match alike but are two subscriptions, as two bindings are in RabbitMQ."""
    m = matcher_factory(topics=["a"])
    m.subscribe("#", 1)
    m.subscribe("#.#", 1)
    m.subscribe("#.*", 2)
    m.subscribe("*.#", 3)
    assert len(m) == 4
    assert m.lookup("a") == {1, 2, 3}
    m.unsubscribe("#", 1)
    assert m.lookup("a") == {1, 2, 3}  # still subscribed through '#.#'
    m.unsubscribe("#.#", 1)
    assert m.lookup("a") == {2, 3}
    assert m.subscriptions() == {"#.*": {2}, "*.#": {3}}


def test_shared_subscriptions_keep_their_names(matcher_factory: Callable[..., Matcher]) -> None:
    m = matcher_factory("mqtt", topics=["a/b"])
    m.subscribe("$share/g1/a/+", "x")
    m.subscribe("a/+", "y")
    assert m.lookup("a/b") == {"x", "y"}
    assert m.patterns() == ["$share/g1/a/+", "a/+"]
    m.unsubscribe("a/+", "y")
    assert m.lookup("a/b") == {"x"}


def test_unhashable_subscriber_is_refused(matcher_factory: Callable[..., Matcher]) -> None:
    m = matcher_factory(topics=["a"])
    with pytest.raises(InvalidSubscriberError, match="hashable"):
        m.subscribe("a", ["not", "hashable"])  # type: ignore[arg-type]
    assert len(m) == 0
    assert m.lookup("a") == frozenset()


def test_subscribe_many_refuses_a_bad_pair_and_changes_nothing(
    matcher_factory: Callable[..., Matcher],
) -> None:
    m = matcher_factory(topics=["a", "a.b"])
    m.subscribe("a", 1)
    before = m.subscriptions()
    with pytest.raises(InvalidPatternError) as refused:
        m.subscribe_many([("a.*", 2), ("#", 3), ("a" * 300, 4)])
    assert refused.value.__notes__ == ["pair 2 of subscribe_many; nothing was changed"]
    with pytest.raises(InvalidSubscriberError, match="hashable"):
        m.subscribe_many([("a.*", 2), ("#", ["not", "hashable"])])  # type: ignore[list-item]
    assert m.subscriptions() == before
    assert m.lookup("a.b") == frozenset()
    assert m.subscribe_many([]) == 0
    assert m.subscribe_many([("a", 1), ("a.*", 2), ("a.*", 2), ("a.*", 5)]) == 2
    assert m.lookup("a.b") == {2, 5}


def test_snapshot_is_frozen(matcher_factory: Callable[..., Matcher]) -> None:
    m = matcher_factory(topics=["a.b", "c"])
    m.subscribe("a.*", 1)
    snap = m.snapshot()
    m.subscribe("#", 2)
    m.unsubscribe("a.*", 1)
    assert snap.lookup("a.b") == {1}
    assert snap.lookup_many(["a.b", "c"]) == [{1}, frozenset()]
    assert snap.subscriptions() == {"a.*": {1}}
    assert snap.patterns() == ["a.*"]
    assert len(snap) == 1
    assert m.lookup("a.b") == {2}
    assert not hasattr(snap, "subscribe")


def test_inverted_bitmap_topic_space() -> None:
    m = Matcher("inverted_bitmap", topics=["a.b", "a.c"])
    m.subscribe("a.*", 1)
    with pytest.raises(
        UnknownTopicError, match=re.escape("'x.y' is not in the inverted bitmap's topic space")
    ):
        m.lookup("x.y")
    assert m.extend_topic_space(["x.y", "a.b"]) == 1
    assert m.lookup("x.y") == frozenset()
    m.subscribe("x.#", 2)
    assert m.lookup("x.y") == {2}
    assert m.lookup("a.b") == {1}


def test_extend_topic_space_only_on_inverted_bitmap() -> None:
    with pytest.raises(Exception, match="no topic space"):
        Matcher("trie").extend_topic_space(["a"])


def test_repr_and_properties() -> None:
    m = Matcher("cstrie", "mqtt")
    assert m.algorithm == "cstrie"
    assert m.dialect == "mqtt"
    assert "cstrie mqtt" in repr(m)
    assert dict(m.cache_info) == {"size": 0, "max_size": 0, "bytes": 0}
    assert Matcher().cache_info["max_size"] > 0


class _Ticker(str, Enum):  # noqa: UP042 - the case users hit (StrEnum prints its value)
    STOCK = "stock.nyse"


class _Topic(str):  # a plain subclass that also prints unlike its value
    def __str__(self) -> str:
        return "not the value"


@pytest.mark.parametrize("kind", [_Ticker.STOCK, _Topic("stock.nyse")], ids=["enum", "subclass"])
def test_str_subclasses_count_by_their_value(matcher_factory: Callable[..., Matcher], kind: str) -> None:
    m = matcher_factory(topics=["stock.nyse", "stock.lse"])
    assert m.subscribe(kind, 1)
    assert m.subscribe("stock.*", 2)
    assert m.subscriptions() == {"stock.nyse": {1}, "stock.*": {2}}
    assert all(type(p) is str for p in m.subscriptions())
    for _ in range(3):  # also once the default's cache has seen them
        assert m.lookup(kind) == {1, 2}
        assert m.lookup("stock.nyse") == {1, 2}
        assert m.lookup_many([kind, "stock.nyse", kind]) == [{1, 2}] * 3
    assert m.snapshot().lookup(kind) == {1, 2}
    assert m.unsubscribe(kind, 1)
    assert m.lookup("stock.nyse") == m.lookup(kind) == {2}
    assert m.subscribe_many([(kind, 3), ("stock.nyse", 4)]) == 2
    assert m.subscriptions()["stock.nyse"] == {3, 4}


def test_lookup_many_raises_what_lookup_raises(matcher_factory: Callable[..., Matcher]) -> None:
    m = matcher_factory(topics=["a"])
    m.subscribe("a", 1)
    for bad in (["a"], None, 3):
        with pytest.raises(InvalidTopicError):
            m.lookup(bad)  # type: ignore[type-var]
        with pytest.raises(InvalidTopicError):
            m.lookup_many(["a", bad])  # type: ignore[type-var]
        with pytest.raises(InvalidTopicError):
            m.snapshot().lookup_many([bad])  # type: ignore[type-var]
    assert m.lookup("a") == {1}


def test_patterns_are_sorted_once_each() -> None:
    m = Matcher()
    m.subscribe("b.#", 1)
    m.subscribe("a.*", 2)
    m.subscribe("a.*", 3)
    assert m.patterns() == ["a.*", "b.#"]


def test_unsubscribe_all_drops_a_client(matcher_factory: Callable[..., Matcher]) -> None:
    m = matcher_factory("mqtt", topics=["a/b", "c/d", "a/x"])
    m.subscribe_many([("a/+", "c1"), ("a/b", "c1"), ("c/#", "c1"), ("a/#", "c2"), ("a/b", "c2")])
    m.subscribe("c/d", "c1")
    m.unsubscribe("c/#", "c1")
    assert m.patterns_of("c1") == ["a/+", "a/b", "c/d"]
    assert m.unsubscribe_all("c1") == 3
    assert m.patterns_of("c1") == []
    assert m.subscriptions() == {"a/#": {"c2"}, "a/b": {"c2"}}
    assert m.lookup("a/b") == {"c2"}
    assert m.lookup("c/d") == frozenset()
    assert m.unsubscribe_all("c1") == 0
    assert m.unsubscribe_all("nobody") == 0
    assert m.patterns_of("c2") == ["a/#", "a/b"]
    with pytest.raises(InvalidSubscriberError):
        m.unsubscribe_all(["unhashable"])  # type: ignore[arg-type]


def test_unsubscribe_many(matcher_factory: Callable[..., Matcher]) -> None:
    m = matcher_factory(topics=["a.b"])
    m.subscribe_many([("a.*", 1), ("a.*", 2), ("#", 1)])
    assert m.unsubscribe_many([("a.*", 1), ("a.*", 1), ("#", 1), ("#", 9), ("x.y", 1)]) == 2
    assert m.subscriptions() == {"a.*": {2}}
    assert m.patterns_of(1) == []
    assert m.patterns_of(2) == ["a.*"]
    before = m.subscriptions()
    with pytest.raises(InvalidPatternError) as refused:
        m.unsubscribe_many(
            [("a.*", 2), ("a..#.", 2)] if m.dialect != "amqp" else [("a.*", 2), ("a" * 300, 2)]
        )
    assert refused.value.__notes__ == ["pair 1 of unsubscribe_many; nothing was changed"]
    assert m.subscriptions() == before
    assert m.lookup("a.b") == {2}


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (None, r"_many takes an iterable of \(pattern, subscriber\) pairs, not a NoneType$"),
        (5, "not a int"),
        ("a.b", "not a str"),
        ({"a.b": 1}, r"not a dict \(pass mapping.items\(\)\)"),
        ([("a.b", 1), ("a.b",)], r"pair 1 of \w+ is not a \(pattern, subscriber\) pair: \('a.b',\)"),
        ([("a.b", 1), ("a.b", 1, 2)], "pair 1 of"),
        ([("a.b", 1), "ab"], r"pair 1 of \w+ is not a \(pattern, subscriber\) pair: 'ab'"),
        ([("a.b", 1), 7], "pair 1 of"),
    ],
)
def test_bulk_calls_refuse_what_is_not_pairs_and_change_nothing(
    matcher_factory: Callable[..., Matcher], pairs: object, message: str
) -> None:
    m = matcher_factory(topics=["a.b"])
    m.subscribe("a.b", 1)
    for call in (m.subscribe_many, m.unsubscribe_many):
        with pytest.raises(InvalidPairError, match=message):
            call(pairs)  # type: ignore[arg-type]
        assert m.subscriptions() == {"a.b": {1}}
        assert m.patterns_of(1) == ["a.b"]


@pytest.mark.parametrize("topics", ["a.b", 5, None])
def test_lookup_many_refuses_one_string_or_a_non_iterable(
    matcher_factory: Callable[..., Matcher], topics: object
) -> None:
    m = matcher_factory(topics=["a.b"])
    m.subscribe("a.b", 1)
    for reader in (m, m.snapshot()):
        with pytest.raises(
            InvalidTopicError, match=f"lookup_many takes an iterable of topics, not a {type(topics).__name__}"
        ):
            reader.lookup_many(topics)  # type: ignore[arg-type]
    assert m.lookup_many(t for t in ["a.b"]) == [{1}]


def test_subscribe_many_pauses_the_cyclic_collector() -> None:
    m = Matcher()
    seen: list[bool] = []

    def pairs() -> Iterator[tuple[str, int]]:
        for i in range(3):
            seen.append(gc.isenabled())
            yield f"a.{i}", i

    assert gc.isenabled()
    assert m.subscribe_many(pairs()) == 3
    assert seen == [False, False, False]
    assert gc.isenabled()
    with pytest.raises(InvalidPairError):
        m.subscribe_many([("a", 1), "bad"])  # type: ignore[list-item]
    assert gc.isenabled()  # back on after an error too
    gc.disable()
    try:
        m.subscribe_many([("b", 1)])
        assert not gc.isenabled()  # a caller's own pause is left alone
    finally:
        gc.enable()


def test_matcher_is_generic_in_its_subscribers() -> None:
    m: Matcher[str] = Matcher[str]()
    m.subscribe("a", "x")
    assert m.lookup("a") == {"x"}
    snap: MatcherSnapshot[str] = m.snapshot()
    assert snap.lookup("a") == {"x"}


_BAD_VALUES = [None, 5, 1.5, b"a.b", ["a", "b"], {"a": 1}, object()]


def test_every_method_refuses_bad_input_with_a_typed_error_and_changes_nothing(
    matcher_factory: Callable[..., Matcher],
) -> None:
    """Each public method, given values of the wrong type where it expects a pattern, topic,
    subscriber or iterable of them, raises a TopicMatchError subclass (never a bare Python
    error) and leaves the subscriptions as they were."""
    m = matcher_factory(topics=["a.b"])
    m.subscribe("a.*", 1)
    before = m.subscriptions()
    snap = m.snapshot()
    # Callables taking Any: the values below are wrong on purpose.
    calls: list[tuple[str, Callable[[Any], object]]] = [
        ("subscribe pattern", lambda v: m.subscribe(v, 2)),
        ("subscribe subscriber", lambda v: m.subscribe("a.b", v)),
        ("unsubscribe pattern", lambda v: m.unsubscribe(v, 1)),
        ("subscribe_many", m.subscribe_many),
        ("subscribe_many element", lambda v: m.subscribe_many([("a.b", 3), v])),
        ("unsubscribe_many", m.unsubscribe_many),
        ("lookup", m.lookup),
        ("lookup_many", m.lookup_many),
        ("lookup_many element", lambda v: m.lookup_many(["a.b", v])),
        ("snapshot lookup", snap.lookup),
        ("snapshot lookup_many", snap.lookup_many),
    ]
    if m.algorithm == "inverted_bitmap":
        calls.append(("extend_topic_space", m.extend_topic_space))
    for name, call in calls:
        for value in _BAD_VALUES:
            if name == "subscribe subscriber" and isinstance(value, Hashable):
                continue  # any hashable value is a valid subscriber
            if name in {"lookup_many", "snapshot lookup_many", "extend_topic_space"} and isinstance(
                value, (list, dict)
            ):
                continue  # an iterable of valid topics; bad elements are checked apart
            if name == "subscribe_many element" and value == ["a", "b"]:
                continue  # a list of two is a (pattern, subscriber) pair
            try:
                call(value)
            except TopicMatchError:
                pass
            else:
                pytest.fail(f"{name} took {value!r}")
            assert m.subscriptions() == before, (name, value)
    assert snap.subscriptions() == before


class _Touchy:
    """A subscriber whose __eq__ raises: hashes like ``other`` so that a set compares them."""

    def __init__(self, other: object) -> None:
        self.other = other

    def __hash__(self) -> int:
        return hash(self.other)

    def __eq__(self, other: object) -> bool:
        if other is self:
            return True
        raise RuntimeError("touchy")


def test_a_client_dropped_after_a_failed_write_receives_nothing(
    matcher_factory: Callable[..., Matcher],
) -> None:
    """A write that a subscriber's own __eq__ interrupts may leave some of its pairs subscribed;
    the matcher's record of each subscriber's patterns still holds them, so unsubscribe_all
    removes them."""
    m = matcher_factory(topics=["a", "b"])
    m.subscribe("b", "k1")
    with pytest.raises(RuntimeError, match="touchy"):
        m.subscribe_many([("a", "k2"), ("b", _Touchy("k1"))])
    m.unsubscribe_all("k2")
    assert m.lookup("a") == frozenset()
    assert m.patterns_of("k2") == []


def test_a_free_threaded_python_running_without_its_gil_is_refused() -> None:
    """The lock-free lookups rely on the GIL: a free-threaded CPython that runs without it
    (``sys._is_gil_enabled()`` false) gets a typed error from the constructor, not wrong
    answers. Forced in a child process whose ``sys`` says so; 3.11 has no such function, and
    then (as with the GIL on) the matcher is made."""
    code = (
        "import sys\n"
        "from topicmatch import ConfigurationError, Matcher\n"
        "Matcher().subscribe('a.*', 1)\n"
        "sys._is_gil_enabled = lambda: True\n"
        "Matcher()\n"
        "sys._is_gil_enabled = lambda: False\n"
        "try:\n"
        "    Matcher()\n"
        "except ConfigurationError as error:\n"
        "    print(error)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert "rely on the GIL" in run.stdout
    assert "-X gil=1" in run.stdout
