"""The worker side without a JVM: the cross-batch cache, versions, and bounded output batches."""

from __future__ import annotations

import gc
import pickle
import tracemalloc
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.strategies import PATTERNS, TOPICS
from topicmatch import InvalidTopicError, make_dialect
from topicmatch._engine.walk import Node
from topicmatch.spark import Subscriptions, _plan
from topicmatch.spark import _worker as worker
from topicmatch.spark._levels import LevelWalker
from topicmatch.spark._stats import Counts, StatsParam

from .helpers import trie_of

pytestmark = pytest.mark.spark


def _batch(topics: Sequence[str | None], payload: int = 10) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "offset": pa.array(range(len(topics)), pa.int64()),
            "topic": pa.array(topics, pa.string()),
            "payload": pa.array(["p" * payload] * len(topics), pa.string()),
        }
    )


def _schema(batch: pa.RecordBatch) -> pa.Schema:
    item = pa.field("element", pa.string(), nullable=False)
    return batch.schema.append(pa.field("subscriber", pa.list_(item), nullable=False))


def _route(
    table: Subscriptions, batch: pa.RecordBatch, key: str, counts: Counts | None = None
) -> list[tuple[int, str]]:
    """(offset, subscriber) of each delivery, the lists exploded as Spark does."""
    compiled = worker.compiled_for(key, table.dialect, table.pedantic, table.payload())
    schema = _schema(batch)
    out: list[tuple[int, str]] = []
    for piece in worker.route_batch(batch, 1, compiled, schema, 1 << 20, counts):
        assert piece.schema == schema
        rows = zip(piece.column("offset").to_pylist(), piece.column("subscriber").to_pylist(), strict=True)
        for offset, subscribers in rows:
            out.extend((offset, subscriber) for subscriber in subscribers)
    return out


def test_what_a_worker_learns_lives_across_batches() -> None:
    table = Subscriptions.from_pairs([("a.*", "x"), ("#", "y")])
    first = worker.compiled_for("t-cache", "amqp", False, table.payload())
    dfa = trie_of(first.matcher).stable_dfa()
    assert dfa is not None
    _route(table, _batch(["a.b", "a.b", "c", "a b"]), "t-cache")
    learnt = dfa.transitions
    assert worker.compiled_for("t-cache", "amqp", False, b"not even decoded on a hit") is first
    assert _route(table, _batch(["a.b", None, "a.c.d", "a b"]), "t-cache") == [
        (0, "x"),
        (0, "y"),
        (2, "y"),
        (3, "y"),
    ]
    assert dfa.transitions == learnt + 2  # only "a.c.d" was new: c, then d
    assert trie_of(first.matcher).stable_dfa() is dfa


class _Recording:
    """A matcher stand-in recording whether the cyclic collector ran during each lookup."""

    def __init__(self, fail_on: str = "") -> None:
        self.collector_on: list[bool] = []
        self.fail_on = fail_on

    def lookup(self, topic: str) -> frozenset[int]:
        self.collector_on.append(gc.isenabled())
        if topic == self.fail_on:
            raise RuntimeError("boom")
        return frozenset({0})


class _RecordingWalker:
    """The compiled's walker, recording whether the cyclic collector ran during each walk."""

    def __init__(self, walker: LevelWalker) -> None:
        self._walker = walker
        self.subscribers = walker.subscribers
        self.collector_on: list[bool] = []

    def plain(self, topics: pa.Array) -> Any:
        return self._walker.plain(topics)

    def states(self, topics: pa.Array) -> Any:
        self.collector_on.append(gc.isenabled())
        return self._walker.states(topics)


def test_cold_lookups_run_with_the_cyclic_collector_paused_and_restore_it() -> None:
    table = Subscriptions.from_pairs([("a.*", "x")])
    compiled = worker.Compiled("amqp", False, table.payload())
    assert compiled._walker is not None
    compiled._walker = walker = _RecordingWalker(compiled._walker)  # type: ignore[assignment]
    compiled.matcher = recording = _Recording(fail_on="a boom")  # type: ignore[assignment]
    assert gc.isenabled()
    # "a b" and "a c" are valid but not plain (a space): they go one by one to the matcher.
    ids, reasons = compiled.entries(pa.array(["a b", "a.b", "a c"]))
    assert recording.collector_on == [False, False]
    assert walker.collector_on == [False]
    assert [a.tolist() for a in ids] == [[0], [0], [0]]
    assert reasons == [None, None, None]
    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        compiled.entries(pa.array(["a boom"]))
    assert gc.isenabled()  # back on after an error too
    gc.disable()
    try:
        compiled.entries(pa.array(["a d"]))
        assert not gc.isenabled()  # a caller's own pause is left alone
    finally:
        gc.enable()


def test_a_new_version_gets_a_new_matcher() -> None:
    one = Subscriptions.from_pairs([("a", "x")])
    two = Subscriptions.from_pairs([("a", "z")])
    assert _route(one, _batch(["a"]), one.version) == [(0, "x")]
    assert _route(two, _batch(["a"]), two.version) == [(0, "z")]
    assert worker.compiled_for(one.version, "amqp", False, b"") is not worker.compiled_for(
        two.version, "amqp", False, b""
    )


def test_old_versions_go_when_a_task_is_done() -> None:
    tables = [Subscriptions.from_pairs([("a", f"s{i}")]) for i in range(worker.KEEP_VERSIONS + 2)]
    for table in tables:  # each version a task of its own, as a stream moving on
        before = list(worker._COMPILED)
        function = worker.RouteFunction(table.version, "amqp", False, table.payload(), 1, "subscriber", 0)
        outputs = function(iter([_batch(["a"])]))
        assert next(outputs).column("subscriber").to_pylist() == [[table.subscribers[0].as_py()]]
        # While the task runs, its matcher is the newest and no older one has been freed yet.
        assert list(worker._COMPILED) == [*before, table.version]
        assert list(outputs) == []
        assert len(worker._COMPILED) <= worker.KEEP_VERSIONS
    kept = [t.version for t in tables[-worker.KEEP_VERSIONS :]]
    assert list(worker._COMPILED)[-worker.KEEP_VERSIONS :] == kept
    assert tables[0].version not in worker._COMPILED


def test_big_lists_are_cut_into_bounded_batches() -> None:
    table = Subscriptions.from_pairs(
        [(p, f"s{i}") for i, p in enumerate(["a.b", "a.*", "#", "*.b", "a.#"] * 3)]
    )
    batch = _batch(["a.b"] * 50)
    whole = _route(table, batch, "t-whole")
    assert len(whole) == len(set(whole)) == 50 * 15
    compiled = worker.compiled_for("t-whole", "amqp", False, table.payload())
    compiled.max_values = 40  # 2 rows of 15 subscribers per batch
    pieces = list(worker.route_batch(batch, 1, compiled, _schema(batch), 1 << 20))
    assert [p.num_rows for p in pieces] == [2] * 25
    assert _route(table, batch, "t-whole") == whole


def test_mostly_empty_batches_send_only_the_matched_rows() -> None:
    table = Subscriptions.from_pairs([("a", "x")])
    batch = _batch(["a", "b", "c", "d", "a"])
    compiled = worker.compiled_for("t-sparse", "amqp", False, table.payload())
    (piece,) = worker.route_batch(batch, 1, compiled, _schema(batch), 1 << 20)
    assert piece.column("offset").to_pylist() == [0, 4]
    assert piece.column("subscriber").to_pylist() == [["x"], ["x"]]


def test_counts_and_their_sum() -> None:
    table = Subscriptions.from_pairs([("a.*", "x"), ("a.b", "y"), ("a.b", "x")])
    counts = Counts(len(table.subscribers))
    _route(table, _batch(["a.b", "a.c", "q", "a.b", None]), "t-counts", counts)
    assert counts.as_dict() == {"messages": 5, "deliveries": 5, "unmatched": 1, "invalid": 1}
    assert counts.per_subscriber.tolist() == [3, 2]
    param = StatsParam()
    total = param.addInPlace(param.zero({}), {(None, "v"): counts})
    total = param.addInPlace(total, {(None, "v"): pickle.loads(pickle.dumps(counts))})
    assert total[None, "v"].per_subscriber.tolist() == [6, 4]
    assert total[None, "v"].messages == 10


def test_a_big_fan_out_is_expanded_piece_by_piece_in_bounded_memory() -> None:
    # 2,000 messages x 200 subscribers = 400,000 deliveries in one input batch. Expanding the
    # whole batch at once held arrays of one entry per delivery (3.2 MB each in int64: 9.7 MB
    # traced at the peak); piece by piece, nothing is much larger than a piece (1,000 values
    # here) or than what the batch's 2,000 rows take anyway (their topics as Python strings
    # in the walk: about 0.4 MB traced).
    table = Subscriptions.from_pairs([("#", f"s{i}") for i in range(200)])
    batch = _batch([f"t.{i}" for i in range(2000)], payload=1)
    compiled = worker.Compiled("amqp", False, table.payload())
    compiled.max_values = 1000
    list(worker.route_batch(batch, 1, compiled, _schema(batch), 1 << 20))  # the topics, learnt
    counts = Counts(len(table.subscribers))
    pieces = worker.route_batch(batch, 1, compiled, _schema(batch), 1 << 20, counts)
    tracemalloc.start()
    try:
        sizes = [len(piece.column("subscriber").values) for piece in pieces]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert sizes == [1000] * 400
    assert peak < 1_000_000, f"{peak:,} bytes traced at the peak"
    assert counts.deliveries == 400_000
    assert counts.per_subscriber.tolist() == [2000] * 200


def test_long_subscriber_names_make_pieces_with_fewer_values() -> None:
    names = [f"{i:02d}" + "n" * 98 for i in range(10)]  # 100 bytes each
    table = Subscriptions.from_pairs([("a.*", name) for name in names])
    batch = _batch(["a.b"] * 7)
    whole = _route(table, batch, "t-long")
    compiled = worker.compiled_for("t-long", "amqp", False, table.payload())
    compiled.max_bytes = 2500  # 25 names: 2 rows of 10 per piece
    assert compiled.values_per_piece == 25
    pieces = list(worker.route_batch(batch, 1, compiled, _schema(batch), 1 << 20))
    assert [p.num_rows for p in pieces] == [2, 2, 2, 1]
    assert all(pc.sum(pc.binary_length(p.column("subscriber").values)).as_py() <= 2500 for p in pieces)
    assert _route(table, batch, "t-long") == whole == [(r, name) for r in range(7) for name in names]


def test_an_oversize_message_keeps_its_place_with_no_subscriber() -> None:
    table = Subscriptions.from_pairs([("a", "x"), ("#", "y")])
    batch = pa.RecordBatch.from_pydict(
        {
            "offset": pa.array([0, 1, 2], pa.int64()),
            "topic": pa.array(["a", "a", "b"], pa.string()),
            "payload": pa.array(["p", "p" * 100, "p"], pa.string()),
        }
    )
    compiled = worker.compiled_for("t-oversize", "amqp", False, table.payload())
    counts = Counts(len(table.subscribers))
    (piece,) = worker.route_batch(batch, 1, compiled, _schema(batch), 50, counts)
    assert piece.column("offset").to_pylist() == [0, 1, 2]
    assert piece.column("subscriber").to_pylist() == [["x", "y"], [], ["y"]]
    assert counts.as_dict() == {"messages": 3, "deliveries": 3, "unmatched": 0, "invalid": 1}
    assert counts.per_subscriber.tolist() == [1, 2]


def _shard_of(shards: _plan.Shards) -> dict[str, int]:
    """First word -> shard."""
    return {row[_plan.WORD_COL]: row[_plan.SHARD_COL] for row in shards.words.to_pylist()}


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_each_topic_finds_every_match_in_its_shard(dialect: str, data: st.DataObject) -> None:
    """The shard plan's cut (:func:`topicmatch.spark._plan._shards`): a topic's first word's
    shard (or, for a word no pattern starts with, any shard) matches it as the whole table does."""
    patterns = data.draw(st.lists(PATTERNS[dialect](), min_size=1, max_size=30))
    table = Subscriptions.from_pairs([(p, f"s{i % 7}") for i, p in enumerate(patterns)], dialect=dialect)
    shards = _plan._shards(table, data.draw(st.integers(1, 6)))
    whole = table.matcher()
    cut = [t.matcher() for t in shards.tables]
    values = table.subscribers.to_pylist()
    for t in shards.tables:
        assert t.subscribers.to_pylist() == values  # every shard keeps the table's ids
    shard_of = _shard_of(shards)
    separator = make_dialect(dialect).separator
    for topic in data.draw(st.lists(TOPICS[dialect](), max_size=20)):
        try:
            expected = whole.lookup(topic)
        except InvalidTopicError:
            continue
        first = topic.split(separator)[0]  # what Spark's substring_index(topic, separator, 1) gives
        where = [shard_of[first]] if first in shard_of else range(len(cut))
        for shard in where:
            assert cut[shard].lookup(topic) == expected, (topic, shard)


def test_the_shards_are_dealt_by_pairs_and_the_common_patterns_go_everywhere() -> None:
    pairs = [(f"big.{i}", "a") for i in range(6)] + [(f"mid.{i}", "b") for i in range(4)]
    pairs += [(f"small.{i}", "c") for i in range(3)] + [("tiny", "d"), ("*.x", "e"), ("#", "f")]
    shards = _plan._shards(Subscriptions.from_pairs(pairs), 3)
    words = _shard_of(shards)
    # largest first, each to the lightest shard: big -> 0, mid -> 1, small -> 2, tiny -> 2 (3 < 4)
    assert words == {"big": 0, "mid": 1, "small": 2, "tiny": 2}
    assert [len(t) for t in shards.tables] == [8, 6, 6]
    assert (shards.common, shards.largest) == (2, 8)
    assert all({"*.x", "#"} <= set(t.patterns) for t in shards.tables)
    # More shards than first words: as many as there are words.
    assert len(_plan._shards(Subscriptions.from_pairs(pairs), 10).tables) == 4
    assert len(_plan._shards(Subscriptions.from_pairs([("#", "x")]), 4).tables) == 1


def test_a_worker_holds_one_shards_matcher_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shard plan's function drops a shard's matcher before it builds the next one, also
    when a batch holds two shards; and its deliveries are the whole table's."""
    pairs = [(f"w{i}.*", f"s{i}") for i in range(6)] + [("#", "all")]
    table = Subscriptions.from_pairs(pairs)
    shards = _plan._shards(table, 3)
    keys = tuple((f"t-shards#{s.version}", s.payload()) for s in shards.tables)
    function = worker.RouteFunction(
        "t-shards",
        "amqp",
        False,
        b"",
        1,
        "subscriber",
        1 << 20,
        subscribers=len(table.subscribers),
        shards=keys,
    )
    alive: list[list[str]] = []
    real = worker.compiled_for

    def recording(key: str, *args: Any) -> worker.Compiled:
        alive.append([k for k, _ in keys if k in worker._COMPILED and k != key])
        return real(key, *args)

    monkeypatch.setattr(worker, "compiled_for", recording)
    shard_of = _shard_of(shards)
    topics = sorted((f"w{i}.x" for i in range(6) for _ in range(3)), key=lambda t: shard_of[t.split(".")[0]])
    batches = []
    for start in (0, 5, 11):  # batches cut across shard boundaries
        part = _batch(topics[start : start + {0: 5, 5: 6, 11: 7}[start]])
        shard = pa.array([shard_of[t.split(".")[0]] for t in part.column("topic").to_pylist()], pa.int32())
        batches.append(pa.RecordBatch.from_arrays([*part.columns, shard], [*part.schema.names, "shard"]))
    got = []
    # A task that ends on the last shard, then one that starts on the first: an earlier task's
    # shard left in the worker's cache goes too.
    last = batches[-1].slice(batches[-1].num_rows - 1, 1)
    for out in function(iter([last])):
        assert out.num_rows == 1
    for out in function(iter(batches)):
        assert out.schema.names == ["offset", "topic", "payload", "subscriber"]  # no shard column out
        got += [
            (t, s)
            for t, subs in zip(
                out.column("topic").to_pylist(), out.column("subscriber").to_pylist(), strict=True
            )
            for s in subs
        ]
    assert len(alive) == 4  # one build per shard and task, in order
    assert alive == [[], [], [], []]  # no other shard's matcher alive at any build
    whole = table.matcher()
    assert sorted(got) == sorted((t, s) for t in topics for s in whole.lookup(t))


def test_a_dropped_shard_gives_its_memory_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """A shard's matcher, once its DFA has learnt, is cyclic garbage when dropped (the DFA's
    states hold the trie's nodes): the worker collects it before it builds the next shard, or a
    worker would hold several shards until the collector's next full pass. Counted in trie nodes
    the collector tracks (not in bytes: a global table of the interpreter, such as the interned
    strings', may grow in between by megabytes), with the automatic collector off, as it mostly
    is in a busy worker."""
    pairs = [(f"w{i % 2}.d{i}.*", f"s{i}") for i in range(6_000)]
    table = Subscriptions.from_pairs(pairs)
    shards = _plan._shards(table, 2)
    keys = tuple((f"t-memory#{s.version}", s.payload()) for s in shards.tables)
    function = worker.RouteFunction(
        "t-memory", "amqp", False, b"", 1, "subscriber", 0, subscribers=len(table.subscribers), shards=keys
    )

    def nodes() -> int:
        return sum(type(o) is Node for o in gc.get_objects())

    held: list[int] = []  # trie nodes alive at each build
    real = worker.compiled_for

    def measuring(key: str, *args: Any) -> worker.Compiled:
        held.append(nodes())
        return real(key, *args)

    monkeypatch.setattr(worker, "compiled_for", measuring)

    def task(word: str, shard: int) -> None:
        topics = [f"{word}.d{i}.x" for i in range(int(word[1]), 6_000, 2)] * 2  # each twice: the DFA learns
        part = _batch(topics)
        column = pa.array([shard] * len(topics), pa.int32())
        batch = pa.RecordBatch.from_arrays([*part.columns, column], [*part.schema.names, "shard"])
        assert sum(out.num_rows for out in function(iter([batch]))) == len(topics)

    shard_of = _shard_of(shards)
    # The worker's matchers of the earlier tests stay out of reach of this one's builds: their
    # versions dropped mid-test would be garbage counted at the first build and collected by
    # the second.
    monkeypatch.setattr(worker, "_COMPILED", {})
    gc.collect()
    gc.disable()
    try:
        task("w0", shard_of["w0"])
        task("w1", shard_of["w1"])
        after = nodes()
    finally:
        gc.enable()
    assert after - held[0] > 3_000  # the second shard's nodes: what one shard holds
    assert held[1] == held[0], (held, after)  # the first shard's all gone at the second's build
