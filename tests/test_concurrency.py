"""Threads mixing writes and reads: nothing lost, nothing half-applied, snapshots consistent.

The switch interval is lowered so that the GIL changes hands every few bytecodes, which makes
the interleavings these tests look for frequent; every loop is bounded in count.
"""

from __future__ import annotations

import gc
import os
import sys
import threading
from collections.abc import Callable, Hashable, Iterator

import pytest

from topicmatch import Matcher, _walk
from topicmatch._collector import collector_paused
from topicmatch._dialects import make_dialect
from topicmatch._trie import TrieIndex
from topicmatch._words import Tokens

from .conftest import make_matcher


@pytest.fixture(autouse=True)
def _fast_switching() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _run(threads: list[threading.Thread]) -> None:
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
        assert not t.is_alive(), "a thread did not finish"


def test_no_subscription_is_lost(algorithm: str) -> None:
    topics = [f"t{i}.x" for i in range(8)]
    m = make_matcher(algorithm, "amqp", topics)
    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            for i in range(150):
                m.subscribe(f"t{i % 8}.*", (w, i))
                m.subscribe(f"t{i % 8}.#", (w, i))
                if i % 3 == 0:
                    m.unsubscribe(f"t{i % 8}.#", (w, i))
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    def reader() -> None:
        try:
            for i in range(600):
                m.lookup(topics[i % 8])
        except BaseException as error:  # pragma: no cover
            errors.append(error)

    _run([threading.Thread(target=writer, args=(w,)) for w in range(4)] + [threading.Thread(target=reader)])
    assert not errors
    expected_star = {(w, i) for w in range(4) for i in range(150)}
    expected_hash = {(w, i) for w in range(4) for i in range(150) if i % 3}
    assert len(m) == len(expected_star) + len(expected_hash)
    subs = m.subscriptions()
    assert set().union(*(subs[f"t{k}.*"] for k in range(8))) == expected_star
    assert set().union(*(subs[f"t{k}.#"] for k in range(8))) == expected_hash
    for k in range(8):
        assert m.lookup(f"t{k}.x") == {p for p in expected_star | expected_hash if p[1] % 8 == k}


# A writer cycles through the states {} -> {1} -> {1, 2} -> {1} -> {}: subscriber 2 (on the
# 'a.*' branch) is only ever present while subscriber 1 (on the '#' branch) is. A lookup of 'a.b'
# reads both branches at different moments; if it could see a mix of two states it would return
# {2} alone, a state that never existed.
VALID_STATES = [frozenset(), frozenset({1}), frozenset({1, 2})]


def _cycling_writer(
    m: Matcher, rounds: int, stop: threading.Event, errors: list[BaseException], bulk: bool = False
) -> None:
    try:
        for _ in range(rounds):
            if bulk:  # the same steps in the same order: the bulk calls keep the patterns' order
                m.subscribe_many([("#", 1), ("a.*", 2)])
                m.unsubscribe_many([("a.*", 2), ("#", 1)])
            else:
                m.subscribe("#", 1)
                m.subscribe("a.*", 2)
                m.unsubscribe("a.*", 2)
                m.unsubscribe("#", 1)
    except BaseException as error:  # pragma: no cover - reported by the test
        errors.append(error)
    finally:
        stop.set()


@pytest.mark.parametrize("bulk", [False, True], ids=["subscribe", "subscribe_many"])
@pytest.mark.parametrize("cache_size", [0, 16])
def test_lookups_are_linearizable(algorithm: str, cache_size: int, bulk: bool) -> None:
    m = make_matcher(algorithm, "amqp", ["a.b"], cache_size=cache_size)
    stop = threading.Event()
    seen: set[frozenset[object]] = set()
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            for _ in range(200_000):
                seen.add(m.lookup("a.b"))
                if stop.is_set():
                    break
        except BaseException as error:  # pragma: no cover
            errors.append(error)

    writer = threading.Thread(target=_cycling_writer, args=(m, 400, stop, errors, bulk))
    _run([writer, threading.Thread(target=reader), threading.Thread(target=reader)])
    assert not errors
    assert seen <= set(VALID_STATES), seen - set(VALID_STATES)
    assert m.lookup("a.b") == frozenset()


@pytest.mark.parametrize("bulk", [False, True], ids=["subscribe", "subscribe_many"])
@pytest.mark.parametrize("cache_size", [0, 16])
def test_lookups_through_the_dfa_are_linearizable(cache_size: int, bulk: bool) -> None:
    # The default, its DFA made by the first lookup of every version and learning every
    # transition at once: readers build and use DFAs while the writer changes the trie.
    m = Matcher(cache_size=cache_size)
    index = m._index
    index.quiet_lookups = 0  # type: ignore[attr-defined]
    index.learn_after = 1  # type: ignore[attr-defined]
    stop = threading.Event()
    seen: set[frozenset[object]] = set()
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            for _ in range(200_000):
                seen.add(m.lookup("a.b"))
                if stop.is_set():
                    break
        except BaseException as error:  # pragma: no cover
            errors.append(error)

    writer = threading.Thread(target=_cycling_writer, args=(m, 400, stop, errors, bulk))
    _run([writer, threading.Thread(target=reader), threading.Thread(target=reader)])
    assert not errors
    assert seen <= set(VALID_STATES), seen - set(VALID_STATES)
    assert m.lookup("a.b") == frozenset()


def test_subscribe_many_moves_the_version_with_every_pattern() -> None:
    """The mechanism behind the bulk case above, step by step (the threads rarely hit it).

    A lookup that starts while ``add_many`` runs walks the trie and returns its result only if
    the version has not moved meanwhile. So the version must be odd from the first change on
    (no DFA of an older trie is used) and move with each pattern: a lookup that read the '#'
    branch before the first pattern and the 'a.*' branch after the second would see {2} alone.
    A pattern that changes nothing does not move it.
    """
    index = TrieIndex(dollar_rule=False, dfa=True)
    parse = make_dialect("amqp").parse_pattern
    versions: list[int] = []

    def items() -> Iterator[tuple[str, Tokens, frozenset[Hashable]]]:
        for pattern, subscriber in [("#", 1), ("a.*", 2), ("a.*", 2)]:  # the last one adds nothing
            versions.append(index._version)
            yield pattern, parse(pattern), frozenset({subscriber})
        versions.append(index._version)

    assert index.add_many(items()) == 2
    assert not versions[0] & 1, versions  # nothing changed yet
    assert all(v & 1 for v in versions[1:]), versions
    assert versions[1] != versions[2] == versions[3], versions
    assert not index._version & 1
    assert index.stable_dfa() is not None
    assert index.match(["a", "b"]) == {1, 2}


def test_snapshots_stay_consistent_while_writers_run(algorithm: str) -> None:
    m = make_matcher(algorithm, "amqp", ["a.b"])
    stop = threading.Event()
    snapshots = []
    errors: list[BaseException] = []

    def snapshotter() -> None:
        try:
            for _ in range(2_000):
                snap = m.snapshot()
                snapshots.append((snap, snap.subscriptions(), snap.lookup("a.b")))
                if stop.is_set():
                    break
        except BaseException as error:  # pragma: no cover
            errors.append(error)

    _run(
        [
            threading.Thread(target=_cycling_writer, args=(m, 300, stop, errors)),
            threading.Thread(target=snapshotter),
        ]
    )
    assert not errors
    assert snapshots
    valid = [{}, {"#": {1}}, {"#": {1}, "a.*": {2}}]
    for snap, subs_then, lookup_then in snapshots:
        assert subs_then in valid
        # A snapshot never moves: the same answers now, after all the writes.
        assert snap.subscriptions() == subs_then
        assert snap.lookup("a.b") == lookup_then == frozenset().union(*subs_then.values())
        assert len(snap) == sum(len(s) for s in subs_then.values())


def test_cstrie_snapshot_is_constant_time() -> None:
    """Taking a cstrie snapshot does not walk the trie: its cost does not grow with the size."""
    m = Matcher("cstrie")
    for i in range(20_000):
        m.subscribe(f"s.{i}.*", i)
    index = m._index  # the frozen root is shared, not copied
    snap = m.snapshot()
    assert snap._index._root.main is index._root.main  # type: ignore[attr-defined]
    m.subscribe("s.0.*", "new")
    assert snap.lookup("s.0.x") == {0}
    assert m.lookup("s.0.x") == {0, "new"}


def test_many_threads_snapshot_at_once() -> None:
    m = Matcher("cstrie")
    for i in range(200):
        m.subscribe(f"k.{i}", i)
    results: list[int] = []
    lock = threading.Lock()

    def take() -> None:
        n = len(m.snapshot().subscriptions())
        with lock:
            results.append(n)

    threads: list[threading.Thread] = [threading.Thread(target=take) for _ in range(100)]
    _run(threads)
    assert results == [200] * 100


def test_patterns_of_a_subscriber_follow_its_subscriptions(algorithm: str) -> None:
    """Writers racing on the same pairs, and clients dropped meanwhile: the index of each
    subscriber's patterns ends equal to the subscriptions (index and subscriber index change
    under one writers' lock; without it a subscribe and an unsubscribe of one pair interleave
    and leave a pattern recorded that the matcher no longer holds, or the reverse)."""
    patterns = [f"p{i}.*" for i in range(4)]
    m = make_matcher(algorithm, "amqp", ["p0.x"])
    errors: list[BaseException] = []

    def churn(seed: int) -> None:
        try:
            for i in range(400):
                pattern, client = patterns[(i + seed) % 4], (i * 7 + seed) % 3
                if (i + seed) % 3:
                    m.subscribe(pattern, client)
                else:
                    m.unsubscribe(pattern, client)
                if i % 50 == seed:
                    m.unsubscribe_all(client)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    _run([threading.Thread(target=churn, args=(seed,)) for seed in range(4)])
    assert not errors
    held = m.subscriptions()
    for client in range(3):
        assert m.patterns_of(client) == sorted(p for p, subs in held.items() if client in subs), client


def test_overlapping_bulk_builds_keep_the_collector_paused_until_the_last_ends() -> None:
    """gc.disable/enable are process-wide: the first build to end must not switch the collector
    back on under a build still running in another thread."""
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def first() -> None:
        with collector_paused():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with collector_paused():
            second_in.set()
            first_out.wait(10)
            seen.append(gc.isenabled())

    assert gc.isenabled()
    _run([threading.Thread(target=first), threading.Thread(target=second)])
    assert seen == [False]
    assert gc.isenabled()


def test_unsubscribe_many_removes_a_patterns_subscribers_in_one_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On the trie, readers see a pattern's removed subscribers go together: one publication of
    the node's subscribers per pattern, not one per pair (which would let a lookup see {2}
    left of {1, 2} while {1, 2} are being removed)."""
    m = Matcher("trie")
    m.subscribe_many([("a.*", 1), ("a.*", 2), ("a.*", 3)])
    published: list[int] = []
    real = _walk.Node._publish

    def counted(node: _walk.Node, added: object, removed: object) -> None:
        published.append(1)
        real(node, added, removed)  # type: ignore[arg-type]

    monkeypatch.setattr(_walk.Node, "_publish", counted)
    assert m.unsubscribe_many([("a.*", 1), ("a.*", 2)]) == 2
    assert published == [1]
    assert m.lookup("a.b") == {3}


def test_a_child_forked_during_another_threads_bulk_build_gets_its_collector_back() -> None:
    """Only the forking thread lives on in the child: a block another thread had open must not
    keep the child's collector off for good (nor its lock held)."""
    inside, release = threading.Event(), threading.Event()

    def build() -> None:
        with collector_paused():
            inside.set()
            release.wait(10)

    builder = threading.Thread(target=build)
    builder.start()
    try:
        assert inside.wait(10)
        assert not gc.isenabled()
        pid = os.fork()
        if pid == 0:  # the child: report through the exit status, run nothing else
            ok = gc.isenabled()
            with collector_paused():
                ok = ok and not gc.isenabled()
            os._exit(0 if ok and gc.isenabled() else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        release.set()
        builder.join(timeout=10)
    assert gc.isenabled()


class _WriteOnGet(dict):  # type: ignore[type-arg]
    """A trie node's dict of children that runs a writer's steps the first time a lookup reads
    it: a write landing mid-walk, deterministically (the threaded tests above hit that rarely)."""

    def __init__(self, children: dict[str, object], steps: Callable[[], None]) -> None:
        super().__init__(children)
        self.steps: Callable[[], None] | None = steps

    def get(self, key: str, default: object = None) -> object:
        steps, self.steps = self.steps, None
        if steps is not None:
            steps()
        return super().get(key, default)


def test_a_trie_lookup_overlapping_writes_retries() -> None:
    """The trie's version check, pinned: the lookup reads the '#' branch ({1}), then two writes
    land (unsubscribe '#', subscribe 'a.*') before it reads 'a': without the check it returns
    {1, 2}, which never existed (the states were {1}, {} and {2})."""
    for algorithm in ("trie", "default"):
        m = Matcher(algorithm, cache_size=0)
        m.subscribe("#", 1)
        index = m._index

        def steps(m: Matcher = m) -> None:
            m.unsubscribe("#", 1)
            m.subscribe("a.*", 2)

        index._root.children = _WriteOnGet(index._root.children, steps)  # type: ignore[attr-defined]
        assert m.lookup("a.b") == {2}, algorithm
        assert index._root.children.steps is None  # type: ignore[attr-defined]  # the writes ran mid-walk


def test_a_cstrie_lookup_overlapping_writes_retries() -> None:
    """The cstrie's version check, pinned: the lookup holds the C-node of 'a' from before the
    writes (subscribe 'a.b', unsubscribe 'a.*'), reads no 'b' in it and then the '*' branch's
    current, emptied node: without the check it returns {}, which never existed (the states
    were {1}, {1, 2} and {2})."""
    m = Matcher("cstrie")
    m.subscribe("a.*", 1)
    index = m._index
    a = index._root.main.children["a"].main  # type: ignore[attr-defined]

    def steps() -> None:
        m.subscribe("a.b", 2)
        m.unsubscribe("a.*", 1)

    a.children = _WriteOnGet(a.children, steps)
    assert m.lookup("a.b") == {2}
    assert a.children.steps is None
