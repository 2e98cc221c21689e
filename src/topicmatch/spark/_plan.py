"""How ``route`` matches: every subscription in the workers' matcher, the literal ones joined, or
the wildcard ones sharded.

Three plans give the same deliveries:

``matcher``
    Every (pattern, subscriber) pair is in the matcher each Python worker builds. Its cost per
    worker grows with the table: about 650 MB and 3.4 s per million pairs of ``generate``'s table,
    1.9 GB and 5.9 s for 1.1 million distinct patterns of a device fleet (docs/pipeline.md).
``split``
    A *literal* pattern (no wildcard) matches exactly the topic equal to it, so its pairs need no
    matcher: Spark joins the messages with them on the topic, an equi-join it runs itself, with
    no Python and no per-worker copy. The workers' matcher holds the rest. Only the *plain*
    literal patterns are joined (ordinary ASCII words, :meth:`Dialect.plain_topics`: every
    dialect accepts them and matches them as the equal topic only), and only those of
    subscribers that have no pattern in the matcher: such a subscriber's deliveries then come
    from one side only, so no message reaches a subscriber twice and nothing needs to be
    deduplicated. (An MQTT fleet's devices, one or more ``devices/<id>/cmd`` each, and a few
    applications with wildcards: the devices go to the join.)

``shard``
    ``split``, and the pairs left for the workers' matcher cut into shards by the first word of
    their pattern, for tables whose wildcard part alone outgrows a worker. A pattern that starts
    with a literal word ``w`` can only match a topic whose first word is ``w`` (the topic's text
    up to the first separator: a dialect compares words as strings, and no dialect's pattern
    rewriting changes a literal word), so its pairs go to the one shard of ``w``; a pattern
    that starts with a wildcard goes to every shard. First words are dealt to the shards by
    their pairs, the largest first, each to the lightest shard so far. Each message goes to the
    shard of its topic's first word (a word no pattern starts with: any shard, by a hash, since
    only the patterns in every shard can match it), the messages are shuffled so that a task
    sees one shard, or a few next to each other, and a worker holds one shard's matcher at a
    time (:class:`~._worker.RouteFunction`). The cost: one shuffle of the messages (Spark
    samples them first to cut even ranges), and a table whose pairs share one first word
    cannot be cut (the summary gives the largest shard).

:func:`choose` picks ``split`` when the join would take at least :data:`SPLIT_FROM` pairs off
the matcher, and ``shard`` when the workers' part is still :data:`SHARD_FROM` pairs or more,
else ``matcher``; ``plan=`` forces one. The literal pairs are grouped by pattern (one row per
topic, the array of its subscribers), so the join adds at most one row to each message and each
message is matched once by each side.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from .. import Wildcard, make_dialect
from ._errors import MessagesError
from ._subscriptions import Subscriptions

__all__ = ["PLANS", "SHARD_FROM", "SHARD_PAIRS", "SPLIT_FROM", "Plan", "Shards", "choose"]

#: The plans ``route`` knows; ``auto`` lets :func:`choose` decide.
PLANS: Final = ("auto", "matcher", "split", "shard")
#: ``auto`` joins the literal pairs from this many on: a million distinct ones cost each worker
#: about 1.9 GB in the matcher; below this a worker's matcher stays small. (The
#: command line's ``--plan`` help repeats the number; tests/spark/test_cli.py checks it.)
SPLIT_FROM: Final = 100_000

#: ``auto`` shards the pairs left for the workers from this many on (a worker's matcher of them
#: would take about 650 MB to 1.9 GB per million: docs/pipeline.md), into shards of about
#: :data:`SHARD_PAIRS` pairs each. (The command line's ``--plan`` help repeats both numbers;
#: tests/spark/test_cli.py checks it.)
SHARD_FROM: Final = 1_000_000
SHARD_PAIRS: Final = 500_000

#: The columns of the literal table the messages are joined with.
PATTERN_COL: Final = "_topicmatch_pattern"
LITERAL_COL: Final = "_topicmatch_literal"
#: The columns of the shards' table of first words (:attr:`Shards.words`), and of the shard a
#: message goes to.
WORD_COL: Final = "_topicmatch_first_word"
SHARD_COL: Final = "_topicmatch_shard"


@dataclass(frozen=True)
class Shards:
    """The workers' part of a ``shard`` plan, cut by first word.

    ``tables``: one table per shard, each with the pairs of its first words and those of the
    patterns that start with a wildcard (``common`` pairs, in every shard); all share the
    subscribers and ids of the plan's ``matcher`` table, so the workers' figures add up.
    ``words``: each first word some pattern starts with (:data:`WORD_COL`) and its shard
    (:data:`SHARD_COL`).
    """

    tables: tuple[Subscriptions, ...]
    words: pa.Table
    common: int

    @property
    def largest(self) -> int:
        """Pairs in the largest shard (``common`` included)."""
        return max(len(t) for t in self.tables)


@dataclass(frozen=True)
class Plan:
    """What ``route`` runs: ``matcher`` (what the workers match) and ``literal`` (the joined
    pairs, a table of :data:`PATTERN_COL` and the list of its subscribers, or None)."""

    name: str
    matcher: Subscriptions
    literal: pa.Table | None = None
    literal_pairs: int = 0
    shards: Shards | None = None

    def describe(self) -> dict[str, Any]:
        """The facts the summary prints."""
        facts: dict[str, Any] = {
            "plan": self.name,
            "matched_in_workers": len(self.matcher),
            "joined_literal": self.literal_pairs,
        }
        if self.shards is not None:
            facts["shards"] = len(self.shards.tables)
            facts["largest_shard"] = self.shards.largest
            facts["in_every_shard"] = self.shards.common
        return facts


def choose(
    table: Subscriptions, plan: str = "auto", shard_from: int = SHARD_FROM, shard_pairs: int = SHARD_PAIRS
) -> Plan:
    """The plan for ``table``: ``plan`` if forced, else by :data:`SPLIT_FROM` and ``shard_from``
    (shards of about ``shard_pairs`` pairs). O(rows), plus a parse of each pattern the shards
    take (about 2 µs each) under ``shard``."""
    if plan not in PLANS:
        raise MessagesError(f"unknown plan {plan!r}: choose {', '.join(PLANS)}")
    if plan == "matcher":
        return Plan("matcher", table)
    split = _split(table, plan)
    rest = split.matcher
    if plan == "shard" or (plan == "auto" and len(rest) >= shard_from):
        count = max(2, -(-len(rest) // shard_pairs))
        return Plan("shard", rest, split.literal, split.literal_pairs, _shards(rest, count))
    return split


def _split(table: Subscriptions, plan: str) -> Plan:
    """The split of ``table`` (``auto``: only from :data:`SPLIT_FROM` joinable pairs on)."""
    plain = table.plain_rows()
    ids = table.subscriber_ids
    in_matcher = np.zeros(len(table.subscribers), dtype=bool)
    in_matcher[ids[~plain]] = True  # subscribers with a pattern the join cannot take
    joined = plain & ~in_matcher[ids]
    count = int(joined.sum())
    if plan == "auto" and count < SPLIT_FROM:
        return Plan("matcher", table)
    if not count:  # split forced on a table with nothing to join: the matcher does it all
        return Plan("split", table)
    return Plan("split", _part(table, ~joined), _literal_table(table, joined), count)


def _shards(table: Subscriptions, count: int) -> Shards:
    """``table`` cut into at most ``count`` shards by the first word of each pattern (see the
    module docstring); fewer when fewer first words exist. The ids are not renumbered."""
    dialect = make_dialect(table.dialect, pedantic=table.pedantic)
    firsts: list[str | None] = []
    pairs: dict[str, int] = {}
    for pattern in table.patterns:
        tokens = dialect.parse_pattern(pattern)
        # No words (an empty AMQP key): the topic's text up to its first separator is "" too.
        token = tokens[0] if tokens else ""
        if isinstance(token, Wildcard):
            firsts.append(None)
        else:
            firsts.append(token)
            pairs[token] = pairs.get(token, 0) + 1
    count = max(1, min(count, len(pairs)))
    lightest = [(0, shard) for shard in range(count)]  # a heap of (pairs so far, shard)
    shard_of: dict[str, int] = {}
    for word, n in sorted(pairs.items(), key=lambda item: (-item[1], item[0])):
        load, shard = heapq.heappop(lightest)
        shard_of[word] = shard
        heapq.heappush(lightest, (load + n, shard))
    where = np.array([-1 if f is None else shard_of[f] for f in firsts], dtype=np.int32)
    common = where < 0
    tables = tuple(_rows(table, common | (where == shard)) for shard in range(count))
    words = pa.table(
        {
            WORD_COL: pa.array(list(shard_of), pa.string()),
            SHARD_COL: pa.array(list(shard_of.values()), pa.int32()),
        }
    )
    return Shards(tables, words, int(common.sum()))


def _rows(table: Subscriptions, rows: np.ndarray[Any, np.dtype[np.bool_]]) -> Subscriptions:
    """The rows ``rows`` of ``table``, with all of its subscribers and their ids."""
    patterns = [p for p, keep in zip(table.patterns, rows.tolist(), strict=True) if keep]
    return Subscriptions(
        patterns,
        table.subscriber_ids[rows],
        table.subscribers,
        table.dialect,
        table.pedantic,
        table.source,
        table.skipped,
    )


def _part(table: Subscriptions, rows: np.ndarray[Any, np.dtype[np.bool_]]) -> Subscriptions:
    """The rows ``rows`` of ``table``, with the subscribers they use only (still sorted)."""
    ids = table.subscriber_ids[rows]
    used = np.unique(ids)  # sorted, so the subscribers keep their sorted order
    patterns = [p for p, keep in zip(table.patterns, rows.tolist(), strict=True) if keep]
    return Subscriptions(
        patterns,
        np.searchsorted(used, ids).astype(np.int32),
        table.subscribers.take(pa.array(used)),
        table.dialect,
        table.pedantic,
        table.source,
        table.skipped,
    )


def _literal_table(table: Subscriptions, rows: np.ndarray[Any, np.dtype[np.bool_]]) -> pa.Table:
    """The joined pairs grouped by pattern: one row per pattern, its subscribers sorted, distinct."""
    where = np.flatnonzero(rows)
    patterns = pa.array(table.patterns, pa.string()).take(pa.array(where))
    ids = pa.array(table.subscriber_ids[where])
    pairs = pa.table({PATTERN_COL: patterns, "id": ids}).group_by([PATTERN_COL, "id"]).aggregate([])
    pairs = pairs.sort_by([(PATTERN_COL, "ascending"), ("id", "ascending")])
    grouped = pairs.group_by(PATTERN_COL, use_threads=False).aggregate([("id", "list")])
    lists = grouped.column("id_list").combine_chunks()
    values = table.subscribers.take(lists.flatten())
    # No null anywhere, declared so: the output's schema is then the matcher plan's to the
    # nullable flags (Spark reads them from the Arrow fields).
    element = pa.field("element", values.type, nullable=False)
    subscribers = pa.ListArray.from_arrays(lists.offsets, values, type=pa.list_(element))
    schema = pa.schema(
        [
            pa.field(PATTERN_COL, pa.string(), nullable=False),
            pa.field(LITERAL_COL, subscribers.type, nullable=False),
        ]
    )
    return pa.table([grouped.column(PATTERN_COL).combine_chunks(), subscribers], schema=schema)
