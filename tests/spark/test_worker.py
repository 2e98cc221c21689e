"""The worker side without a JVM: the cross-batch cache, versions, and bounded output batches."""

from __future__ import annotations

import gc
import pickle
from typing import Any

import pyarrow as pa
import pytest

from topicmatch.spark import Subscriptions
from topicmatch.spark import _worker as worker
from topicmatch.spark._levels import LevelWalker
from topicmatch.spark._stats import Counts, StatsParam

pytestmark = pytest.mark.spark


def _batch(topics: list[str | None], payload: int = 10) -> pa.RecordBatch:
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
    out = []
    for piece in worker.route_batch(batch, 1, compiled, schema, 1 << 20, counts):
        assert piece.schema == schema
        rows = zip(piece.column("offset").to_pylist(), piece.column("subscriber").to_pylist(), strict=True)
        for offset, subscribers in rows:
            out.extend((offset, subscriber) for subscriber in subscribers)
    return out


def test_what_a_worker_learns_lives_across_batches() -> None:
    table = Subscriptions.from_pairs([("a.*", "x"), ("#", "y")])
    first = worker.compiled_for("t-cache", "amqp", False, table.payload())
    dfa = first.matcher._index.stable_dfa()  # type: ignore[attr-defined]
    _route(table, _batch(["a.b", "a.b", "c", "a b"]), "t-cache")
    learnt = dfa.transitions
    assert worker.compiled_for("t-cache", "amqp", False, b"not even decoded on a hit") is first
    assert set(first._cache.entries) == {"a b"}  # plain topics need no cache: the DFA is one
    assert _route(table, _batch(["a.b", None, "a.c.d", "a b"]), "t-cache") == [
        (0, "x"),
        (0, "y"),
        (2, "y"),
        (3, "y"),
    ]
    assert dfa.transitions == learnt + 2  # only "a.c.d" was new: c, then d
    assert first.matcher._index.stable_dfa() is dfa  # type: ignore[attr-defined]


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


def test_cold_lookups_run_with_the_cyclic_collector_paused_and_restore_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    table = Subscriptions.from_pairs([("a.*", "x")])
    compiled = worker.Compiled("amqp", False, table.payload())
    walked: list[bool] = []
    states = LevelWalker.states

    def recording_states(self: LevelWalker, topics: pa.Array) -> Any:
        walked.append(gc.isenabled())
        return states(self, topics)

    monkeypatch.setattr(LevelWalker, "states", recording_states)
    compiled.matcher = recording = _Recording(fail_on="a boom")  # type: ignore[assignment]
    assert gc.isenabled()
    # "a b" and "a c" are valid but not plain (a space): they go one by one to the matcher.
    ids, reasons = compiled.entries(pa.array(["a b", "a.b", "a c"]))
    assert recording.collector_on == [False, False]
    assert walked == [False]
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


def test_big_lists_are_cut_into_bounded_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    table = Subscriptions.from_pairs(
        [(p, f"s{i}") for i, p in enumerate(["a.b", "a.*", "#", "*.b", "a.#"] * 3)]
    )
    batch = _batch(["a.b"] * 50)
    whole = _route(table, batch, "t-whole")
    assert len(whole) == len(set(whole)) == 50 * 15
    monkeypatch.setattr(worker, "MAX_LIST_VALUES", 40)  # 2 rows of 15 subscribers per batch
    compiled = worker.compiled_for("t-whole", "amqp", False, table.payload())
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
