"""How ``route`` matches: every subscription in the workers' matcher, or the literal ones joined.

Two plans give the same deliveries:

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

:func:`choose` picks ``split`` when the join would take at least :data:`SPLIT_FROM` pairs off
the matcher, else ``matcher``; ``plan=`` forces one. The literal pairs are grouped by pattern
(one row per topic, the array of its subscribers), so the join adds at most one row to each
message and each message is matched once by each side.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]

from ._errors import MessagesError
from ._subscriptions import Subscriptions

__all__ = ["PLANS", "SPLIT_FROM", "Plan", "choose"]

#: The plans ``route`` knows; ``auto`` lets :func:`choose` decide.
PLANS: Final = ("auto", "matcher", "split")
#: ``auto`` joins the literal pairs from this many on: a million distinct ones cost each worker
#: about 1.9 GB in the matcher; below this a worker's matcher stays small. (The
#: command line's ``--plan`` help repeats the number; tests/spark/test_cli.py checks it.)
SPLIT_FROM: Final = 100_000

#: The columns of the literal table the messages are joined with.
PATTERN_COL: Final = "_topicmatch_pattern"
LITERAL_COL: Final = "_topicmatch_literal"


@dataclass(frozen=True)
class Plan:
    """What ``route`` runs: ``matcher`` (what the workers match) and ``literal`` (the joined
    pairs, a table of :data:`PATTERN_COL` and the list of its subscribers, or None)."""

    name: str
    matcher: Subscriptions
    literal: pa.Table | None = None
    literal_pairs: int = 0

    def describe(self) -> dict[str, Any]:
        """The facts the summary prints."""
        return {
            "plan": self.name,
            "matched_in_workers": len(self.matcher),
            "joined_literal": self.literal_pairs,
        }


def choose(table: Subscriptions, plan: str = "auto") -> Plan:
    """The plan for ``table``: ``plan`` if forced, else by :data:`SPLIT_FROM`."""
    if plan not in PLANS:
        raise MessagesError(f"unknown plan {plan!r}: choose {', '.join(PLANS)}")
    if plan == "matcher":
        return Plan("matcher", table)
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
