"""A realistic synthetic message log and subscription table, written as Parquet.

Shape of the data (deterministic for a given seed):

* Topics have 1-5 words (lengths 1..5 with probabilities 10/25/30/20/15 %). The first word is
  one of 24 domains (``orders``, ``stock``, ``sensors``...); deeper words come from a vocabulary
  of 2,000 pseudo-words per level. Every word is drawn from a Zipf law (exponent
  :data:`ZIPF_EXPONENT`), so a few words are everywhere and most are rare, as in real traffic.
* :data:`HOT_FRACTION` of the messages repeat one of :data:`HOT_TOPICS` hot topics.
* Patterns are drawn the same way, then each word becomes the one-word wildcard with
  probability :data:`STAR_P` (the first word: :data:`STAR_FIRST_P`), and with probability
  :data:`TAIL_P` the pattern ends in the many-words wildcard (``#``; NATS ``>``) after its
  first 2-4 words. In AMQP :data:`FRONT_P` of them are ``#.word``, and one pattern in 2,000 is
  a lone ``#`` (NATS ``>``). Subscribers (``sub-0042``) have four patterns on average, and 1 %
  of the rows repeat an earlier row. With seed 7, a message then has 5.7 subscribers on
  average at 1,000 subscriptions (15 % have none) and 70 at 10,000: the fan-out grows with the
  table, as it does when more consumers subscribe to the same traffic.
* Each message has an offset (0, 1, ...), a timestamp (one every 10 ms from 2024-01-01 UTC) and a
  payload of ``--payload-bytes`` random letters and digits (incompressible: the worst case for
  the writer). ``invalid_fraction`` of the topics are made invalid for the dialect.

Topics are built column-wise with Arrow (one ``binary_join_element_wise`` per message chunk),
so a million messages take a couple of seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped, unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped, unused-ignore]

__all__ = ["MAX_PAYLOAD_BYTES", "Generated", "generate"]

#: The columns of a generated message log.
MESSAGE_SCHEMA: Final = pa.schema(
    [
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")),
        ("topic", pa.string()),
        ("payload", pa.string()),
    ]
)

ZIPF_EXPONENT = 1.1
HOT_TOPICS = 64
HOT_FRACTION = 0.2
STAR_P = 0.1
STAR_FIRST_P = 0.02
TAIL_P = 0.15
FRONT_P = 0.01
LENGTH_P = (0.10, 0.25, 0.30, 0.20, 0.15)
VOCABULARY = 2_000
ROWS_PER_FILE = 1 << 17
#: Rows per Parquet row group: Spark splits a file only between row groups, so a file of one
#: row group is read by one task. A 100,000-message log in one such file kept one of two cores
#: idle in the benchmark; 32,768 rows (about 4 MB here) lets every file spread over the cores.
ROW_GROUP_ROWS = 1 << 15
#: The largest payload the generator writes (the routing limit is 1 MiB per message by default).
MAX_PAYLOAD_BYTES = 1 << 16
_DOMAINS = (
    *("orders", "stock", "forex", "sensors", "users", "payments", "logs", "metrics", "inventory"),
    *("shipping", "news", "weather", "trades", "quotes", "alerts", "devices", "auth", "billing"),
    *("search", "chat", "video", "games", "ads", "fleet"),
)
_SEPARATOR = {"amqp": ".", "mqtt": "/", "nats": "."}
_STAR = {"amqp": "*", "mqtt": "+", "nats": "*"}
_TAIL = {"amqp": "#", "mqtt": "#", "nats": ">"}
_ALPHABET = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz0123456789", dtype=np.uint8)
_EPOCH_US = 1_704_067_200_000_000  # 2024-01-01T00:00:00Z


@dataclass(frozen=True)
class Generated:
    """Where the data went and what it holds."""

    messages_path: Path
    subscriptions_path: Path
    messages: int
    subscriptions: int
    subscribers: int
    files: int


def _vocabulary(level: int) -> list[str]:
    """Level 0: the domains; deeper levels: pronounceable pseudo-words (the same for every seed)."""
    if level == 0:
        return list(_DOMAINS)
    rng = np.random.default_rng(1000 + level)
    syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
    words: dict[str, None] = {}
    while len(words) < VOCABULARY:
        count = int(rng.integers(1, 4))
        words["".join(syllables[i] for i in rng.integers(0, len(syllables), count))] = None
    return list(words)


def _zipf(rng: np.random.Generator, size: int, count: int) -> np.ndarray[Any, Any]:
    weights = 1.0 / np.arange(1, size + 1) ** ZIPF_EXPONENT
    return rng.choice(size, count, p=weights / weights.sum())


class _Words:
    """Per level, the vocabulary as an Arrow array, and Zipf draws of word indexes."""

    def __init__(self) -> None:
        self.levels = [_vocabulary(level) for level in range(len(LENGTH_P))]
        self.arrays = [pa.array(words, pa.string()) for words in self.levels]

    def draw(
        self, rng: np.random.Generator, count: int
    ) -> tuple[np.ndarray[Any, Any], list[np.ndarray[Any, Any]]]:
        lengths = rng.choice(np.arange(1, len(LENGTH_P) + 1), count, p=LENGTH_P)
        return lengths, [_zipf(rng, len(words), count) for words in self.levels]

    def topics(self, rng: np.random.Generator, count: int, separator: str) -> pa.Array:
        lengths, indexes = self.draw(rng, count)
        columns = []
        for level, (array, index) in enumerate(zip(self.arrays, indexes, strict=True)):
            column = array.take(pa.array(index))
            columns.append(pc.if_else(pa.array(lengths > level), column, pa.scalar(None, pa.string())))
        return pc.binary_join_element_wise(*columns, separator, null_handling="skip")


def _patterns(rng: np.random.Generator, words: _Words, count: int, dialect: str) -> list[str]:
    lengths, indexes = words.draw(rng, count)
    star, tail, sep = _STAR[dialect], _TAIL[dialect], _SEPARATOR[dialect]
    stars = rng.random((count, len(LENGTH_P))) < STAR_P
    stars[:, 0] = rng.random(count) < STAR_FIRST_P
    tails = rng.random(count) < TAIL_P
    kept = rng.integers(2, 5, count)  # words before a trailing '#'
    front = rng.random(count) < (FRONT_P if dialect == "amqp" else 0.0)
    lone = rng.random(count) < 0.0005
    out = []
    for i in range(count):
        if lone[i]:
            out.append(tail)
            continue
        n = int(min(lengths[i], kept[i])) if tails[i] else int(lengths[i])
        parts = [star if stars[i, j] else words.levels[j][indexes[j][i]] for j in range(n)]
        if front[i]:
            parts = [tail, words.levels[n - 1][indexes[n - 1][i]]]
        elif tails[i]:
            parts.append(tail)
        out.append(sep.join(parts))
    return out


def _invalid_topic(dialect: str, i: int) -> str:
    if dialect == "mqtt":
        return f"sensors/+/bad{i}"  # wildcards are not allowed in a published topic
    if dialect == "nats":
        return f"orders.bad {i}"  # whitespace cannot be carried by the protocol
    return "orders." + "x" * 256 + str(i)  # over AMQP's 255 bytes


def _payloads(rng: np.random.Generator, count: int, size: int) -> pa.Array:
    data = _ALPHABET[rng.integers(0, len(_ALPHABET), count * size, dtype=np.uint8)]
    offsets = np.arange(0, (count + 1) * size, size, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def generate(
    out: str | Path,
    messages: int,
    subscriptions: int,
    *,
    dialect: str = "amqp",
    payload_bytes: int = 100,
    seed: int = 7,
    invalid_fraction: float = 0.0,
    rows_per_file: int = ROWS_PER_FILE,
    progress: Callable[[int, int], None] | None = None,
) -> Generated:
    """Write ``out/messages/part-NNNNN.parquet`` and ``out/subscriptions.parquet``.

    ``progress(done, total)`` is called after each file of messages. Raises ValueError for
    sizes out of range (negative counts, payloads over :data:`MAX_PAYLOAD_BYTES`).
    """
    if dialect not in _SEPARATOR:
        raise ValueError(f"unknown dialect {dialect!r}; choose one of {', '.join(_SEPARATOR)}")
    if messages < 0 or subscriptions < 0:
        raise ValueError("--messages and --subscriptions must be >= 0")
    if not 0 <= payload_bytes <= MAX_PAYLOAD_BYTES:
        raise ValueError(
            f"--payload-bytes must be between 0 and {MAX_PAYLOAD_BYTES:,}, not {payload_bytes:,}"
        )
    if not 0.0 <= invalid_fraction <= 1.0:
        raise ValueError(f"--invalid-fraction must be between 0 and 1, not {invalid_fraction}")
    out = Path(out)
    messages_dir = out / "messages"
    messages_dir.mkdir(parents=True, exist_ok=True)
    for stale in messages_dir.glob("part-*.parquet"):
        stale.unlink()
    rng = np.random.default_rng(seed)
    words = _Words()
    separator = _SEPARATOR[dialect]

    patterns = _patterns(rng, words, subscriptions, dialect)
    holders = max(1, subscriptions // 4)
    width = len(str(holders - 1))
    owners = [f"sub-{i:0{width}d}" for i in rng.integers(0, holders, subscriptions).tolist()]
    for i in np.nonzero(rng.random(subscriptions) < 0.01)[0].tolist():
        if i:
            j = int(rng.integers(0, i))
            patterns[i], owners[i] = patterns[j], owners[j]
    table = pa.table(
        {"pattern": pa.array(patterns, pa.string()), "subscriber": pa.array(owners, pa.string())}
    )
    pq.write_table(table, out / "subscriptions.parquet")

    hot = words.topics(rng, HOT_TOPICS, separator)
    starts = range(0, messages, rows_per_file)
    for file, start in enumerate(starts):
        count = min(rows_per_file, messages - start)
        topics = words.topics(rng, count, separator)
        is_hot = rng.random(count) < HOT_FRACTION
        if is_hot.any():
            hot_topics = hot.take(pa.array(rng.integers(0, HOT_TOPICS, count)))
            topics = pc.if_else(pa.array(is_hot), hot_topics, topics)
        if invalid_fraction:
            (bad,) = np.nonzero(rng.random(count) < invalid_fraction)
            if len(bad):
                values = topics.to_pylist()
                for i in bad.tolist():
                    values[i] = _invalid_topic(dialect, start + i)
                topics = pa.array(values, pa.string())
        offsets = np.arange(start, start + count, dtype=np.int64)
        chunk = pa.table(
            {
                "offset": offsets,
                "timestamp": pa.array(_EPOCH_US + offsets * 10_000, pa.timestamp("us", tz="UTC")),
                "topic": topics,
                "payload": _payloads(rng, count, payload_bytes),
            },
            schema=MESSAGE_SCHEMA,
        )
        pq.write_table(chunk, messages_dir / f"part-{file:05d}.parquet", row_group_size=ROW_GROUP_ROWS)
        if progress is not None:
            progress(start + count, messages)
    if not messages:  # one empty file, so that the log still has its columns (a quiet hour's)
        pq.write_table(MESSAGE_SCHEMA.empty_table(), messages_dir / "part-00000.parquet")
    files = max(1, len(starts))
    subscribers = len(set(owners))
    return Generated(messages_dir, out / "subscriptions.parquet", messages, subscriptions, subscribers, files)
