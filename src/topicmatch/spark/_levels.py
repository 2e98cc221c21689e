"""The distinct topics of a batch walked through the matcher's DFA together, one word position at a time.

Looking topics up one by one costs a few microseconds of interpreter work per topic (parse,
a dict access per word, cache upkeep), and the pipeline's batches hold mostly topics seen for
the first time: 417,000 distinct topics in the 1M x 1k benchmark case. Here the per-topic work
runs in Arrow instead, and Python only handles each distinct (state, word) *pair* of a level:

1. :meth:`LevelWalker.plain` picks, with one vectorised regular expression, the topics made of
   ordinary words only (letters, digits, ``_``, ``-``, no empty word), short enough and with
   few enough words: for those every dialect's parser would simply split on the separator.
   The others (empty, wildcards, ``$``, spaces, non-ASCII, too long...) take the exact
   per-topic path, which also gives the reason of an invalid topic.
2. :meth:`LevelWalker.states` splits the plain topics into words (``split_pattern``), then, for
   word position 0, 1, 2...: dictionary-encodes the words at that position, forms one integer
   key per topic from its current state and its word, and :func:`factorize` leaves the
   distinct pairs; each pair takes one DFA transition (a dict access once the DFA knows it),
   and each topic's index into the pairs carries the new states back to the topics.

Topics sharing a prefix share the pairs of that prefix, and a pair already in the DFA costs a
dict access: the DFA is the cache across batches. The result is the same as the DFA's own
``match`` (the tests check it against the :class:`~topicmatch.Matcher`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped, unused-ignore]

from .. import Dialect

if TYPE_CHECKING:
    from .. import BatchWalk

__all__ = ["LevelWalker", "factorize", "plain_mask"]

Int64Array = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
IntArray = np.ndarray[Any, np.dtype[np.signedinteger[Any]]]


def factorize(keys: IntArray) -> tuple[IntArray, IntArray]:
    """The distinct values of an integer array (in order of first appearance) and each key's
    index into them (int32).

    What ``np.unique(keys, return_inverse=True)`` gives, without its sort: one pass through
    Arrow's hash table. No copy on the way in or out: the keys and both results share Arrow's
    buffers.
    """
    encoded = pc.dictionary_encode(pa.array(keys))
    return encoded.dictionary.to_numpy(), encoded.indices.to_numpy()


def plain_mask(texts: pa.Array, dialect: Dialect) -> BoolArray:
    """Which texts (a string array, nulls allowed) are *plain* for ``dialect``, as
    :meth:`~topicmatch.Dialect.plain_topics` defines it, within the word limit: topics its
    parser would simply split, and patterns without wildcards whose tokens are their words (the
    subscription table validates and joins such patterns in bulk)."""
    regex, max_chars = dialect.plain_topics()
    ok = pc.and_(
        pc.match_substring_regex(texts, regex),
        pc.less_equal(pc.binary_length(texts), max_chars),  # plain texts are ASCII: bytes = chars
    )
    ok = pc.and_(ok, pc.less_equal(pc.count_substring(texts, dialect.separator), dialect.max_words - 1))
    return np.asarray(ok.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


class LevelWalker:
    """Walks many topics through one DFA at once (its matcher must not change meanwhile), by
    the core's :class:`~topicmatch._engine.dfa.BatchWalk` (``Matcher.batch_walk``) only."""

    __slots__ = ("_dialect", "_separator", "_walk", "subscribers")

    def __init__(self, dialect: Dialect, walk: BatchWalk) -> None:
        self._walk = walk
        #: The subscribers of a topic whose walk ends in the given state.
        self.subscribers = walk.subscribers
        self._dialect = dialect
        self._separator = dialect.separator

    def plain(self, topics: pa.Array) -> BoolArray:
        """Which topics (a string array, nulls allowed) are plain: valid, words = split(separator)."""
        return plain_mask(topics, self._dialect)

    def states(self, topics: pa.Array) -> tuple[Int64Array, list[Any]]:
        """The DFA state each topic ends in: an index per topic into the returned list of states.

        ``topics`` must all be plain (see :meth:`plain`).
        """
        walk = self._walk
        count = len(topics)
        words = pc.split_pattern(topics, self._separator)
        offsets = words.offsets.to_numpy().astype(np.int64)
        lengths = np.diff(offsets)
        flat = words.flatten()
        starts = offsets[:-1] - offsets[0]
        table: list[Any] = [walk.root]
        index: dict[Any, int] = {walk.root: 0}
        state = np.zeros(count, dtype=np.int64)
        active = np.arange(count, dtype=np.int64)
        advance = walk.advance
        level = 0
        while True:
            active = active[lengths[active] > level]
            if not active.size:
                return state, table
            encoded = pc.dictionary_encode(flat.take(pa.array(starts[active] + level)))
            names: list[str] = encoded.dictionary.to_pylist()
            width = len(names)
            keys = state[active] * width + encoded.indices.to_numpy(zero_copy_only=False)
            pairs, inverse = factorize(keys)
            targets = np.empty(len(pairs), dtype=np.int64)
            sources = [table[source] for source in (pairs // width).tolist()]
            for j, target in enumerate(advance(sources, [names[w] for w in (pairs % width).tolist()])):
                position = index.get(target)
                if position is None:
                    position = index[target] = len(table)
                    table.append(target)
                targets[j] = position
            state[active] = targets[inverse]
            level += 1
