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
from typing import Any, ClassVar

import pytest

from topicmatch import Matcher
from topicmatch._collector import collector_paused
from topicmatch._cstrie import _INode
from topicmatch._dialects import make_dialect
from topicmatch._engine.trie import TrieIndex
from topicmatch._words import Tokens

from .conftest import make_matcher, pure_only


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
def test_batch_walks_are_exact_at_their_version(bulk: bool) -> None:
    # Readers ask for the default's DFA while the writer changes the trie, walk 'a.b' through
    # it as a batch engine does, and keep the result only if no write began meanwhile (the
    # contract of batch_walk). The writer's cycle moves the trie's version by 2 per pattern
    # changed, so a version names its state: the answer must be that state's (a DFA of an
    # earlier version answers for the state it learnt, which is also one that existed).
    m = Matcher()
    index = m._index
    by_version = [frozenset(), frozenset({1}), frozenset({1, 2}), frozenset({1})]  # version % 8 // 2
    stop = threading.Event()
    walks: list[int] = []
    wrong: list[tuple[int, frozenset[object]]] = []
    errors: list[BaseException] = []

    def reader() -> None:
        try:
            for _ in range(200_000):
                last = stop.is_set()  # one whole walk after the writer's end, at least
                version = index._version
                walk = m.batch_walk()
                if walk is not None:
                    (state,) = walk.advance(walk.advance([walk.root], ["a"]), ["b"])
                    result = walk.subscribers(state)
                    if index._version == version:
                        walks.append(1)
                        if result != by_version[version % 8 // 2]:
                            wrong.append((version, result))
                if last:
                    break
        except BaseException as error:  # pragma: no cover
            errors.append(error)

    writer = threading.Thread(target=_cycling_writer, args=(m, 400, stop, errors, bulk))
    _run([writer, threading.Thread(target=reader), threading.Thread(target=reader)])
    assert not errors
    assert walks, "no batch walk ran at a stable version"
    assert not wrong, wrong[:5]


def test_subscribe_many_brackets_every_pattern_with_the_version() -> None:
    """The mechanism behind the bulk case above, step by step (the threads rarely hit it).

    A lookup that starts while ``add_many`` runs keeps its result only if the version was even
    and has not moved. So each pattern's change moves it by 2 (odd around its store, see
    test_no_lookup_returns_while_a_change_is_half_published) and it is even between patterns:
    a lookup that read the '#' branch before the first pattern and the 'a.*' branch after the
    second would see {2} alone. A pattern that changes nothing does not move it.
    """
    index = TrieIndex(dollar_rule=False, dfa_bytes=1 << 20)
    parse = make_dialect("amqp").parse_pattern
    versions: list[int] = []

    def items() -> Iterator[tuple[str, Tokens, frozenset[Hashable]]]:
        for pattern, subscriber in [("#", 1), ("a.*", 2), ("a.*", 2)]:  # the last one adds nothing
            versions.append(index._version)
            yield pattern, parse(pattern), frozenset({subscriber})
        versions.append(index._version)

    assert index.add_many(items()) == 2
    assert versions == [0, 2, 4, 4], versions
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


def test_unsubscribe_many_removes_a_patterns_subscribers_in_one_change() -> None:
    """On the trie, readers see a pattern's removed subscribers go together: one publication of
    the node's subscribers per pattern, bracketed by one move of the version by 2, not one per
    pair (which would let a lookup see {2} left of {1, 2} while {1, 2} are being removed)."""
    m = Matcher("trie")
    m.subscribe_many([("a.*", 1), ("a.*", 2), ("a.*", 3)])
    index = m._index
    before = index._version
    assert m.unsubscribe_many([("a.*", 1), ("a.*", 2)]) == 2
    assert index._version == before + 2
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


class _WriteOnGet:
    """A dict a lookup reads (a cstrie's children, a bitmap's subscribers) that runs a writer's
    ``steps`` when the lookup reads it for the ``at``-th time: a write landing mid-walk,
    deterministically (the threaded tests above hit that rarely). The steps and the count live
    on this class, set by the test with monkeypatch."""

    __slots__ = ()
    steps: ClassVar[Callable[[], None] | None] = None
    at: ClassVar[int] = 1

    def get(self, key: Any, default: Any = None) -> Any:
        _WriteOnGet.at -= 1
        steps = _WriteOnGet.steps
        if _WriteOnGet.at == 0 and steps is not None:
            _WriteOnGet.steps = None
            steps()
        return super().get(key, default)  # type: ignore[misc]


class _WriteOnGetDict(_WriteOnGet, dict):  # type: ignore[type-arg]
    __slots__ = ()


class _WritesOnIter(dict):  # type: ignore[type-arg]
    """A big trie node's ``counts`` (held by its :class:`~topicmatch._engine.walk.Big`), from which a
    lookup makes the node's union (``frozenset(counts)``, :func:`topicmatch._engine.walk.materialize`),
    that runs a writer's ``steps``
    the first time it is iterated: a write landing mid-walk at the same point in both builds
    (``frozenset`` iterates a dict subclass through its ``__iter__``, compiled code too)."""

    def __init__(self, counts: dict[Hashable, int], steps: Callable[[], None]) -> None:
        super().__init__(counts)
        self.steps: Callable[[], None] | None = steps

    def __iter__(self) -> Iterator[Hashable]:
        steps, self.steps = self.steps, None
        if steps is not None:
            steps()
        return super().__iter__()


def test_a_trie_lookup_overlapping_writes_retries() -> None:
    """The trie's version check, pinned: the lookup reads the '#' branch ({1}), then two writes
    land (unsubscribe '#', subscribe 'a.*') before it reads 'a': without the check it returns
    {1, 2}, which never existed (the states were {1}, {} and {2}). Every node is big here
    (``small`` 0), so the lookup makes the '#' node's union from its ``counts``, which runs the
    writes."""
    for algorithm in ("trie", "default"):
        m = Matcher(algorithm, cache_size=0)
        index = m._index
        index.small = 0  # type: ignore[attr-defined]
        m.subscribe("#", 1)
        ran: list[bool] = []

        def steps(m: Matcher = m, ran: list[bool] = ran) -> None:
            ran.append(True)
            m.unsubscribe("#", 1)
            m.subscribe("a.*", 2)

        big = index._root.hash.big  # type: ignore[attr-defined]
        big.counts = _WritesOnIter(big.counts, steps)
        assert m.lookup("a.b") == {2}, algorithm
        assert ran  # the writes ran mid-walk


@pytest.mark.pure("compiled, the cstrie's walk reads a C-node's children with the dict's own get")
def test_a_cstrie_lookup_overlapping_writes_retries(monkeypatch: pytest.MonkeyPatch) -> None:
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

    monkeypatch.setattr(_WriteOnGet, "steps", steps)
    monkeypatch.setattr(_WriteOnGet, "at", 1)
    a.children = _WriteOnGetDict(a.children)
    assert m.lookup("a.b") == {2}
    assert _WriteOnGet.steps is None


@pytest.mark.parametrize("algorithm", ["inverted_bitmap", "optimized_bitmap"])
def test_a_bitmap_lookup_overlapping_writes_retries(monkeypatch: pytest.MonkeyPatch, algorithm: str) -> None:
    """The bitmaps' version check, pinned: the lookup has the bits of 'a.*' and '#' from before
    the writes and reads the subscribers of 'a.*' ({1}); then 'a.*' loses its last subscriber
    and '#' gains 3 before it reads those of '#' ({2, 3}): without the check it returns
    {1, 2, 3}, which never existed (the states were {1, 2}, {2} and {2, 3})."""
    m = make_matcher(algorithm, "amqp", ["a.b"], cache_size=0)
    m.subscribe("a.*", 1)
    m.subscribe("#", 2)
    index = m._index

    def steps() -> None:
        m.unsubscribe("a.*", 1)
        m.subscribe("#", 3)

    monkeypatch.setattr(_WriteOnGet, "steps", steps)
    monkeypatch.setattr(_WriteOnGet, "at", 2)
    index._subs = _WriteOnGetDict(index._subs)  # type: ignore[attr-defined]
    assert m.lookup("a.b") == {2, 3}
    assert _WriteOnGet.steps is None


class _WritesMidScan(dict):  # type: ignore[type-arg]
    """The naive index's entries, whose ``values()`` (the scan of a lookup) runs a writer's
    ``steps`` after the first entry: a write landing mid-scan, in both builds (a compiled scan
    of a dict subclass calls its ``values``). The entries after it are read as the write left
    them, and a write that changes the map's size makes the scan's iterator raise."""

    def __init__(self, entries: dict[str, Any], steps: Callable[[], None]) -> None:
        super().__init__(entries)
        self.steps: Callable[[], None] | None = steps

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        values = iter(dict.values(self))
        yield next(values)
        steps, self.steps = self.steps, None
        if steps is not None:
            steps()
        yield from values


@pytest.mark.parametrize("resize", [False, True], ids=["replace", "resize"])
def test_a_naive_lookup_overlapping_writes_retries(resize: bool) -> None:
    """The naive index's version check, pinned: the scan holds 'a.*' -> {1} from before the
    writes and reads '#' after them. Replacing entries only (a.* gains 5 and loses 1, then '#'
    gains 3) it returns {1, 2, 3} without the check, a state that never existed; deleting an
    entry mid-scan (a.* loses its last subscriber) makes the map change size under the scan,
    and without the check it returns the {} that the scan gives up with."""
    m = Matcher("naive")
    m.subscribe("a.*", 1)
    m.subscribe("#", 2)
    ran: list[bool] = []

    def steps() -> None:
        ran.append(True)
        if not resize:
            m.subscribe("a.*", 5)
        m.unsubscribe("a.*", 1)
        m.subscribe("#", 3)

    index = m._index
    index._entries = _WritesMidScan(index._entries, steps)  # type: ignore[attr-defined]
    assert m.lookup("a.b") == ({2, 3} if resize else {2, 3, 5})
    assert ran


def _around(hook: Callable[[], None] | None, store: Callable[[], None]) -> None:
    """Run ``store`` with ``hook`` (if any) just before or just after it (``_HOOK_AT``)."""
    if hook is not None and _HOOK_AT == "before":
        hook()
    store()
    if hook is not None and _HOOK_AT == "after":
        hook()


class _HookedINode(_INode):
    """The cstrie's I-node with a hook on its publishing store (``main``)."""

    __slots__ = ()
    hook: Callable[[], None] | None = None

    def __setattr__(self, name: str, value: object) -> None:
        hook, _HookedINode.hook = _HookedINode.hook, None
        _around(hook, lambda: object.__setattr__(self, name, value))


class _StoreHook(dict):  # type: ignore[type-arg]
    """A dict of the structure a write publishes into, with a hook on its first store."""

    def __init__(self, items: dict[object, object], hook: Callable[[], None]) -> None:
        super().__init__(items)
        self.hook: Callable[[], None] | None = hook

    def __setitem__(self, key: object, value: object) -> None:
        hook, self.hook = self.hook, None
        _around(hook, lambda: dict.__setitem__(self, key, value))


_HOOK_AT = "before"


@pytest.mark.parametrize("pattern", ["a.b", "#"], ids=["new-pattern", "known-pattern"])
@pytest.mark.parametrize("at", ["before", "after"])
def test_no_lookup_returns_while_a_change_is_half_published(
    algorithm: str, at: str, pattern: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rule 2 and 3 of topicmatch._versions, pinned for every index: just before (or just after)
    the store that publishes a subscribe (of a new pattern, or a new subscriber of a known
    one), a lookup starts in another thread. It must not return until the change is over: the
    version is odd around the store, and a reader keeps a result only at an even, unchanged
    version. It fails if the bracket is removed or moved off the store, or if a reader accepts
    an odd version. The wait is only a bound: a reader that obeys the rules never returns
    during it, however long it is."""
    monkeypatch.setattr(sys.modules[__name__], "_HOOK_AT", at)
    m = make_matcher(algorithm, "amqp", ["a.b"], cache_size=0)
    m.subscribe("#", 1)
    assert m.lookup("a.b") == {1}
    index = m._index
    early: list[frozenset[Hashable]] = []
    late: list[frozenset[Hashable]] = []
    readers: list[threading.Thread] = []

    def lookup() -> None:
        late.append(m.lookup("a.b"))

    def hook() -> None:
        reader = threading.Thread(target=lookup)
        readers.append(reader)
        reader.start()
        reader.join(0.05)
        early.extend(late)

    if algorithm == "naive":
        index._entries = _StoreHook(index._entries, hook)  # type: ignore[attr-defined]
    elif algorithm.endswith("bitmap"):
        index._subs = _StoreHook(index._subs, hook)  # type: ignore[attr-defined]
    elif algorithm == "cstrie":
        pure_only("the cstrie's I-node, whose class the hook swaps, is a native class compiled")
        monkeypatch.setattr(_HookedINode, "hook", hook)
        root = index._root  # type: ignore[attr-defined]
        (root if pattern == "a.b" else root.main.hash).__class__ = _HookedINode
    elif pattern == "a.b":  # the trie links a new branch into the root's children
        root = index._root  # type: ignore[attr-defined]
        root.children = _StoreHook(root.children, hook)
    else:  # the trie's node of '#' gets a new subscriber set
        node = index._root.hash  # type: ignore[attr-defined]
        node.by_pattern = _StoreHook(node.by_pattern, hook)
    m.subscribe(pattern, 7)
    assert len(readers) == 1, "the hook did not run"
    readers[0].join(10)
    assert not early, f"a lookup returned {early} mid-change"
    assert late == [{1, 7}]


@pytest.mark.parametrize("call", ["subscriptions", "patterns", "unsubscribe_many", "snapshot"])
def test_the_whole_state_calls_run_no_collection(call: str) -> None:
    """A container per subscription (a copy, a list, the pairs grouped) set off collections
    that each traversed the whole matcher; like subscribe_many, these calls pause the
    collector. Counted with gc.callbacks, the collector made eager (threshold 10): hundreds of
    collections unpaused (796 and 1,547 for these 3,000 subscriptions), at most the one young
    collection the call's allocations owe when the collector resumes."""
    matcher: Matcher[int] = Matcher("naive" if call == "snapshot" else "default", "mqtt")  # a copy
    pairs = [(f"a/{n}/+", n) for n in range(3_000)]
    matcher.subscribe_many(pairs)
    method: Any = getattr(matcher, call)
    arguments = (pairs,) if call == "unsubscribe_many" else ()
    runs: list[int] = []

    def counted(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            runs.append(info["generation"])

    threshold = gc.get_threshold()
    gc.collect()
    gc.set_threshold(10)
    gc.callbacks.append(counted)
    try:
        result = method(*arguments)
        during = list(runs)
        [[n] for n in range(1_000)]  # the same collector, outside the calls: it runs
        after = len(runs)
    finally:
        gc.callbacks.remove(counted)
        gc.set_threshold(*threshold)
    assert (result if call == "unsubscribe_many" else len(result)) == len(pairs)
    assert after > len(during) + 10
    assert during in ([], [0])
