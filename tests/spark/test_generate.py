"""The synthetic log: deterministic, shaped as documented, valid (or invalid on purpose) per dialect."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from topicmatch import InvalidTopicError, Matcher
from topicmatch.spark._generate import generate

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("dialect", ["amqp", "mqtt", "nats"])
def test_shape_and_validity(tmp_path: Path, dialect: str) -> None:
    calls: list[tuple[int, int]] = []
    made = generate(
        tmp_path,
        5_000,
        500,
        dialect=dialect,
        invalid_fraction=0.01,
        rows_per_file=2_000,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert (made.messages, made.subscriptions, made.files) == (5_000, 500, 3)
    assert calls == [(2_000, 5_000), (4_000, 5_000), (5_000, 5_000)]
    messages = pq.read_table(made.messages_path)
    assert messages.column_names == ["offset", "timestamp", "topic", "payload"]
    assert messages.column("offset").to_pylist() == list(range(5_000))
    assert {len(p) for p in messages.column("payload").to_pylist()} == {100}
    subs = pq.read_table(made.subscriptions_path).to_pylist()
    matcher = Matcher(dialect=dialect)
    for row in subs:  # every generated pattern is valid for its dialect
        matcher.subscribe(row["pattern"], row["subscriber"])
    separator = "/" if dialect == "mqtt" else "."
    wildcards = {"amqp": "*#", "mqtt": "+#", "nats": "*>"}[dialect]
    assert all(any(w in row["pattern"].split(separator) for row in subs) for w in wildcards)
    invalid = matched = 0
    for topic in messages.column("topic").to_pylist():
        try:
            matched += bool(matcher.lookup(topic))
        except InvalidTopicError:
            invalid += 1
    assert 20 <= invalid <= 90
    assert 0.5 < matched / 5_000 < 1.0
    counts = Counter(messages.column("topic").to_pylist())
    assert counts.most_common(1)[0][1] > 20  # hot topics repeat
    lengths = Counter(len(t.split(separator)) for t in counts)
    assert set(lengths) >= {1, 2, 3, 4, 5}


def test_same_seed_same_data(tmp_path: Path) -> None:
    one = generate(tmp_path / "a", 3_000, 100, seed=3)
    two = generate(tmp_path / "b", 3_000, 100, seed=3)
    other = generate(tmp_path / "c", 3_000, 100, seed=4)
    assert pq.read_table(one.messages_path).equals(pq.read_table(two.messages_path))
    assert pq.read_table(one.subscriptions_path).equals(pq.read_table(two.subscriptions_path))
    assert not pq.read_table(one.messages_path).equals(pq.read_table(other.messages_path))


def test_limits(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--payload-bytes must be between 0 and 65,536"):
        generate(tmp_path, 10, 1, payload_bytes=70_000)
    with pytest.raises(ValueError, match="--invalid-fraction"):
        generate(tmp_path, 10, 1, invalid_fraction=2)
    empty = generate(tmp_path, 0, 0)
    assert empty.files == 1  # an empty file: the log keeps its columns
    assert pq.read_table(empty.messages_path).num_rows == 0
