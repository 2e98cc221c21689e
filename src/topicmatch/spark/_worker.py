"""What runs inside the Python workers: matchers per subscriptions version, and the expansion.

Per Arrow batch (``mapInArrow`` hands the worker an iterator of them):

1. ``dictionary_encode`` the topic column: the distinct topics, and one code per row.
2. Match each *distinct* topic once, with the :class:`~topicmatch.Matcher` of that
   subscriptions version, built once per worker process from the shipped pairs: per topic a
   sorted int32 array of subscriber ids, or the reason the topic is invalid. Ordinary topics go
   through the matcher's DFA all together, one word position at a time, in Arrow
   (:mod:`._levels`); the DFA keeps what it learnt across batches and tasks (Spark reuses its
   Python workers). The rest go one by one through ``Matcher.lookup``, with the matcher's own
   result cache. Equal results share one array (the DFA often ends many topics in the same
   state).
3. Expand without a loop per row, piece by piece of bounded size (:func:`route_batch`): the
   distinct topics of a piece become a small list array of their subscribers, and one Arrow
   ``take`` of it by the rows' topic codes is the piece's list column. Each message goes back
   to the JVM once, with the list of its subscribers, and ``route`` explodes the list into one
   row per delivery.

Why explode in the JVM rather than build the delivery rows here (``RecordBatch.take`` of every
column, once per subscriber): the message columns then cross the Python boundary once instead
of once per delivery; on the 1M x 1k benchmark this took 11 % less CPU in total
(docs/pipeline.md). The JVM generates the delivery rows one at a time, and the worker cuts its
output at :data:`MAX_LIST_VALUES` values (and :data:`MAX_LIST_BYTES` bytes) per batch, building
nothing larger meanwhile: a big fan-out never builds a big batch on either side.

**What a worker process keeps across batches and tasks**, each bounded:

* per subscriptions version (:class:`Compiled`, :data:`KEEP_VERSIONS` of them): the library's
  caches, as any :class:`~topicmatch.Matcher` has them with its defaults (the DFA that
  :meth:`~topicmatch.Matcher.batch_walk` walks, for the plain topics; the result cache in
  front of :meth:`~topicmatch.Matcher.lookup`, for the others; the memo of unions; together
  within :data:`~topicmatch.DEFAULT_CACHE_BYTES`), and one cache of the worker's own,
  :attr:`Compiled.arrays`: for each distinct result, the sorted int32 array that
  :func:`route_batch` concatenates, found by the result (a frozenset) and by each DFA state a
  walk ended in. The library's caches answer with frozensets, by topic; an array costs a sort
  and is shared by result (many topics end in one), which no cache of the library's is keyed
  by. The state keys are there because a DFA out of room (its third of the cache bytes spent,
  as on the pipeline benchmark's 100k x 10k case) keeps no set it unites from then on, and
  ``BatchWalk.subscribers`` unites a state's set again at every call (tests/spark/test_caches.py
  counts the calls). States are opaque to the worker: a state key is charged its entry only,
  and a state the DFA had no room to keep lives on through it until the cache is emptied;
* per dialect (:class:`Validator`, for the quarantine): why each topic seen is invalid, or that
  it is valid. The library caches results of valid topics only (a topic that raises is never
  stored), and the quarantine asks nothing else;
* the subscriber values cast to each Arrow string type the topics came in (``string``,
  ``large_string``: one entry each).

Both caches of the worker's own are a :class:`Bounded`, with one eviction rule: a store that
would take it past :data:`CACHE_ENTRIES` entries or :data:`CACHE_BYTES` bytes (by its charge)
empties it first, O(1), as the library's result cache empties a generation. A topic that is
invalid and not plain is parsed again in each batch it comes in: the result cache does not
keep it, and a batch's distinct topics are matched once each.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Hashable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped, unused-ignore]
from pyspark import TaskContext

from .. import InvalidTopicError, Matcher, collector_paused, make_dialect
from ._levels import LevelWalker, factorize
from ._stats import Counts
from ._subscriptions import unpack_payload

__all__ = [
    "CACHE_BYTES",
    "CACHE_ENTRIES",
    "MAX_LIST_VALUES",
    "NULL_REASON",
    "Bounded",
    "Compiled",
    "QuarantineFunction",
    "RouteFunction",
    "Validator",
    "compiled_for",
    "forget_old_versions",
    "quarantine_batch",
    "route_batch",
    "validator_for",
]

#: Most subscriber values in the list column of one output batch (Arrow lists hold < 2**31).
MAX_LIST_VALUES = 1 << 22
#: Most bytes of subscriber values in one output batch (Arrow strings hold < 2 GiB): with long
#: subscriber names, a batch holds fewer values (see :attr:`Compiled.values_per_piece`).
MAX_LIST_BYTES = 1 << 30
#: The bounds of a :class:`Bounded` (the worker's own caches: module docstring): entries, and
#: bytes by its charge (twice the DFA's third of the default ``cache_bytes``).
CACHE_ENTRIES = 1 << 18
CACHE_BYTES = 64 << 20
#: Charge per dict entry (key and value pointers, hash, index slot, growth slack), as the core's.
_ENTRY_BYTES = 64
#: Subscriptions versions kept per worker process (a stream moves from one version to the next).
KEEP_VERSIONS = 3

IntArray = np.ndarray[Any, np.dtype[np.int64]]
IdArray = np.ndarray[Any, np.dtype[np.int32]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]
_EMPTY = np.zeros(0, dtype=np.int32)
#: The quarantine reason of a message without a topic (the summary counts them apart).
NULL_REASON = "the topic is null"


class Bounded:
    """A dict bounded in entries and in bytes: the worker's one kind of cache of its own.

    Readers read :attr:`entries` directly (``cache.entries.get(key)``: a dict access); stores go
    through :meth:`store`, which charges each entry what the caller says it holds plus
    :data:`_ENTRY_BYTES`, and empties the dict first (a new one, O(1)) when the store would take
    it past ``max_entries`` entries or ``max_bytes`` bytes. So ``len(entries) <= max_entries``
    and ``bytes <= max_bytes`` always; an entry charged more than ``max_bytes`` alone is not
    stored.
    """

    __slots__ = ("bytes", "entries", "max_bytes", "max_entries")

    def __init__(self, max_entries: int = CACHE_ENTRIES, max_bytes: int = CACHE_BYTES) -> None:
        self.entries: dict[Any, Any] = {}
        self.bytes = 0
        self.max_entries = max_entries
        self.max_bytes = max_bytes

    def store(self, key: Any, value: Any, size: int) -> None:
        """``entries[key] = value``, charged ``size`` bytes and an entry. O(1)."""
        charge = size + _ENTRY_BYTES
        if len(self.entries) >= self.max_entries or self.bytes + charge > self.max_bytes:
            self.entries = {}
            self.bytes = 0
        if charge <= self.max_bytes:
            self.entries[key] = value
            self.bytes += charge


class Validator:
    """Topic validation only (the quarantine needs no subscriptions), with its own cache.

    :attr:`cache` (a :class:`Bounded`): topic -> why it is invalid, or None; each topic charged
    its text and its reason (``sys.getsizeof``).
    """

    __slots__ = ("_parse", "cache")

    def __init__(self, dialect: str, pedantic: bool) -> None:
        self._parse = make_dialect(dialect, pedantic=pedantic).parse_topic
        self.cache = Bounded()

    def reasons(self, topics: list[str | None]) -> list[str | None]:
        """Per topic, why the dialect rejects it, or None when it is valid."""
        cache = self.cache
        out: list[str | None] = []
        for topic in topics:
            if topic is None:
                out.append(NULL_REASON)
                continue
            entry = cache.entries.get(topic, False)
            if entry is False:
                try:
                    self._parse(topic)
                    entry = None
                except InvalidTopicError as error:
                    entry = error.reason
                size = sys.getsizeof(topic) + (0 if entry is None else sys.getsizeof(entry))
                cache.store(topic, entry, size)
            out.append(entry)
        return out


class Compiled:
    """The matcher of one subscriptions version in one worker process, and its caches."""

    __slots__ = (
        "_longest",
        "_typed",
        "_walker",
        "arrays",
        "matcher",
        "max_bytes",
        "max_values",
        "subscribers",
    )

    def __init__(self, dialect: str, pedantic: bool, payload: bytes) -> None:
        patterns, ids, subscribers = unpack_payload(payload)
        # The library's defaults, its result cache included (module docstring).
        self.matcher = Matcher("default", dialect, pedantic=pedantic)
        with collector_paused():
            # Each pattern's subscribers in one step: one by one, k of them would cost O(k^2).
            self.matcher.subscribe_many(zip(patterns, ids.tolist(), strict=True))
        self.subscribers: pa.Array = subscribers
        self._longest = _longest_value(subscribers)
        # The bounds of an output batch (values_per_piece): the module's, unless a test sets less.
        self.max_values = MAX_LIST_VALUES
        self.max_bytes = MAX_LIST_BYTES
        self._typed: dict[pa.DataType, pa.Array] = {}
        #: The sorted int32 array of each result, by the result (a frozenset, charged with its
        #: array) and by each DFA state a walk ended in (charged its entry): module docstring.
        self.arrays = Bounded()
        # Nothing writes to this matcher any more, so its DFA stays exact: walk it directly.
        walk = self.matcher.batch_walk()
        self._walker = LevelWalker(make_dialect(dialect, pedantic=pedantic), walk) if walk else None

    @property
    def values_per_piece(self) -> int:
        """Most subscriber values per output batch: within both :attr:`max_values` values and
        :attr:`max_bytes` bytes (:data:`MAX_LIST_VALUES`, :data:`MAX_LIST_BYTES`) even when
        every value is the longest subscriber."""
        return max(1, min(self.max_values, self.max_bytes // self._longest))

    def subscribers_as(self, string_type: pa.DataType) -> pa.Array:
        """The subscriber values, with strings in the same Arrow type as the topics."""
        values = self.subscribers
        if not pa.types.is_string(values.type):
            return values
        typed = self._typed.get(string_type)
        if typed is None:
            typed = self._typed[string_type] = values.cast(string_type)
        return typed

    def entries(self, topics: pa.Array) -> tuple[list[IdArray], list[str | None]]:
        """Per distinct topic (a string array; nulls allowed): the sorted subscriber ids (empty
        when invalid) and the reason it is invalid (None when valid). The collector is paused
        meanwhile, as while building: what a cold pass allocates (DFA states, cache entries)
        lives on, so a collection would find nothing to free (see topicmatch._collector)."""
        with collector_paused():
            walker = self._walker
            if walker is None:
                return self._each(topics.to_pylist())
            plain = walker.plain(topics)
            if plain.all():
                return self._walk(walker, topics), [None] * len(topics)
            ids, reasons = self._each(topics.filter(pa.array(~plain)).to_pylist())
            if not plain.any():
                return ids, reasons
            # Put the two parts back in order: the plain topics' results in their places.
            walked = iter(self._walk(walker, topics.filter(pa.array(plain))))
            others, other_reasons = iter(ids), iter(reasons)
            out_ids: list[IdArray] = []
            out_reasons: list[str | None] = []
            for is_plain in plain.tolist():
                if is_plain:
                    out_ids.append(next(walked))
                    out_reasons.append(None)
                else:
                    out_ids.append(next(others))
                    out_reasons.append(next(other_reasons))
            return out_ids, out_reasons

    def _walk(self, walker: LevelWalker, topics: pa.Array) -> list[IdArray]:
        """The ids of each plain topic, from the DFA state its words lead to."""
        where, states = walker.states(topics)
        cache, subscribers, array_of = self.arrays, walker.subscribers, self._array_of
        known = cache.entries
        arrays: dict[int, IdArray] = {}
        for i in pc.unique(pa.array(where)).to_pylist():  # the states some topic ends in, not those passed
            state = states[i]
            entry: IdArray | None = known.get(state)
            if entry is None:
                # By the state too, not only by its set: a DFA out of room keeps no set it
                # unites, and would unite it again at each call (module docstring).
                entry = array_of(subscribers(state))
                cache.store(state, entry, 0)  # the array is charged under its set
                known = cache.entries
            arrays[i] = entry
        return [arrays[i] for i in where.tolist()]

    def _array_of(self, found: frozenset[Hashable]) -> IdArray:
        """``found`` as a sorted int32 array, one array per distinct set (:attr:`arrays`)."""
        cache = self.arrays
        entry: IdArray | None = cache.entries.get(found)
        if entry is None:
            if not found:
                return _EMPTY
            entry = np.fromiter(sorted(found), np.int32, len(found))  # type: ignore[type-var]
            cache.store(found, entry, sys.getsizeof(entry) + found.__sizeof__())
        return entry

    def _each(self, topics: list[str | None]) -> tuple[list[IdArray], list[str | None]]:
        """``entries`` one topic at a time, through ``Matcher.lookup`` (and its result cache)."""
        array_of, lookup = self._array_of, self.matcher.lookup
        ids: list[IdArray] = []
        reasons: list[str | None] = []
        add_ids, add_reason = ids.append, reasons.append  # locals: once per distinct topic of a batch
        for topic in topics:
            if topic is None:
                add_ids(_EMPTY)
                add_reason(NULL_REASON)
                continue
            try:
                found = lookup(topic)
            except InvalidTopicError as error:
                add_ids(_EMPTY)
                add_reason(error.reason)
                continue
            add_ids(array_of(found))
            add_reason(None)
        return ids, reasons


def _is_bytes(kind: pa.DataType) -> bool:
    """Strings and binaries, of either offset width: the types whose values have a length."""
    return bool(
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
    )


def _longest_value(values: pa.Array) -> int:
    """Bytes of the longest value (strings and binaries), or 8 (integers); at least 1."""
    if not _is_bytes(values.type):
        return 8
    longest = pc.max(pc.binary_length(values)).as_py() if len(values) else 0
    return max(1, longest or 0)


_COMPILED: dict[str, Compiled] = {}
_VALIDATORS: dict[tuple[str, bool], Validator] = {}


def compiled_for(key: str, dialect: str, pedantic: bool, payload: bytes) -> Compiled:
    """This worker's matcher for subscriptions version ``key``, built on first use.

    The versions past :data:`KEEP_VERSIONS` stay until :func:`forget_old_versions`.
    """
    found = _COMPILED.pop(key, None)
    if found is None:
        found = Compiled(dialect, pedantic, payload)
    _COMPILED[key] = found  # most recently used last
    return found


def forget_old_versions() -> None:
    """Drop the least recently used versions past :data:`KEEP_VERSIONS`.

    A task calls it after its last output batch, not when it picks its matcher: freeing a
    matcher frees every trie node, DFA state and cache entry it grew, one by one, and before
    its first batch that would keep Spark waiting.
    """
    while len(_COMPILED) > KEEP_VERSIONS:
        del _COMPILED[next(iter(_COMPILED))]


def validator_for(dialect: str, pedantic: bool) -> Validator:
    validator = _VALIDATORS.get((dialect, pedantic))
    if validator is None:
        validator = _VALIDATORS[dialect, pedantic] = Validator(dialect, pedantic)
    return validator


def _distinct(column: pa.Array) -> tuple[pa.Array, IdArray]:
    """The distinct values (a null last when there are nulls) and each row's index into them."""
    encoded = pc.dictionary_encode(column)
    values = encoded.dictionary
    indices = encoded.indices
    if indices.null_count:
        indices = indices.fill_null(len(values))
        values = pa.concat_arrays([values, pa.nulls(1, values.type)])
    return values, indices.to_numpy(zero_copy_only=False).astype(np.int32, copy=False)


def row_sizes(batch: pa.RecordBatch) -> IntArray:
    """Bytes of each row: its string and binary values, plus 8 per other column."""
    sizes = np.zeros(batch.num_rows, dtype=np.int64)
    fixed = 0
    for column in batch.columns:
        if _is_bytes(column.type):
            sizes += pc.binary_length(column).fill_null(0).to_numpy(zero_copy_only=False)
        else:
            fixed += 8
    return sizes + fixed


def _oversize_reason(size: int, limit: int) -> str:
    return f"the message is {size:,} bytes; the limit is {limit:,} (max_message_bytes)"


def route_batch(
    batch: pa.RecordBatch,
    topic_index: int,
    compiled: Compiled,
    out_schema: pa.Schema,
    max_message_bytes: int,
    counts: Counts | None = None,
    keep_valid: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Each message of the batch with the list of its subscribers (the new last column).

    Messages without subscribers (unmatched, invalid, over ``max_message_bytes``; 0 means no
    limit) get an empty list, and when they are the majority they are left out here already.
    With ``keep_valid`` (the split plan, where a join adds the literal subscriptions' subscribers
    after this), every valid message within the limit comes out, and only the others are left
    out. ``counts`` (optional) is updated with the figures.

    The rows go out in pieces of at most :meth:`Compiled.values_per_piece` subscriber values
    (at least one row each), and nothing here grows with more than one piece: per piece, the
    distinct topics of its rows form a small list array (each topic's subscribers once), and one
    Arrow ``take`` of that array by the rows' topic codes builds the piece's list column. Every
    distinct topic in a piece has at least one row there, so that small array is never larger
    than the piece. (Expanding the whole batch first, as this did before, held arrays of one
    entry per delivery: 20,000 messages with 10,000 subscribers each is 200 M entries.)
    """
    n = batch.num_rows
    if n == 0:
        return
    topics, codes = _distinct(batch.column(topic_index))
    arrays, reasons = compiled.entries(topics)
    lengths = np.fromiter(map(len, arrays), np.int64, len(arrays))
    per_row = lengths[codes]
    oversize = row_sizes(batch) > max_message_bytes if max_message_bytes else None
    if oversize is not None and oversize.any():
        per_row[oversize] = 0
        # An oversize row points at an extra, empty entry: it keeps its place with no subscriber.
        codes = np.where(oversize, len(arrays), codes).astype(np.int32)
        arrays = [*arrays, _EMPTY]
        lengths = np.append(lengths, 0)
    total = int(per_row.sum())
    invalid = _invalid_rows(reasons, codes) if counts is not None or keep_valid else None
    if counts is not None and invalid is not None:
        counts.add_batch(n, total, int(np.count_nonzero((per_row == 0) & ~invalid)), int(invalid.sum()))
    if keep_valid and invalid is not None:
        if invalid.any():
            kept = np.flatnonzero(~invalid)
            batch, per_row, codes = batch.take(pa.array(kept)), per_row[kept], codes[kept]
            n = len(kept)
        if n == 0:
            return
    elif total == 0:
        return
    elif np.count_nonzero(per_row) * 2 < n:  # mostly empty lists: not worth sending back
        kept = np.flatnonzero(per_row)
        batch, per_row, codes = batch.take(pa.array(kept)), per_row[kept], codes[kept]
        n = len(kept)
    ends = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(per_row, out=ends[1:])
    values = compiled.subscribers_as(batch.column(topic_index).type)
    list_type = out_schema.field(len(out_schema) - 1).type
    limit = compiled.values_per_piece
    first = 0
    while first < n:
        # The rows [first, last) hold at most `limit` values (at least one row).
        last = int(np.searchsorted(ends, ends[first] + limit, side="right")) - 1
        last = min(n, max(last, first + 1))
        used, local = factorize(codes[first:last])
        used_lengths = lengths[used]
        ids = np.concatenate([arrays[i] for i in used.tolist()])
        if counts is not None:
            rows_per_topic = np.bincount(local, minlength=len(used))
            counts.add_subscribers(ids, np.repeat(rows_per_topic, used_lengths))
        offsets = np.zeros(len(used) + 1, dtype=np.int32)
        np.cumsum(used_lengths, out=offsets[1:])
        per_topic = pa.ListArray.from_arrays(pa.array(offsets), values.take(pa.array(ids)), type=list_type)
        lists = per_topic.take(pa.array(local.astype(np.int32, copy=False)))
        piece = batch.slice(first, last - first)
        yield pa.RecordBatch.from_arrays([*piece.columns, lists], schema=out_schema)
        first = last


def _invalid_rows(reasons: list[str | None], codes: IdArray) -> BoolArray:
    """Per row: its topic is invalid, or it is over the size limit (its code is then the extra
    entry past the topics, see :func:`route_batch`)."""
    invalid = np.ones(len(reasons) + 1, dtype=bool)
    invalid[:-1] = np.fromiter((r is not None for r in reasons), bool, len(reasons))
    return invalid[codes]


def quarantine_batch(
    batch: pa.RecordBatch,
    topic_index: int,
    validator: Validator,
    out_schema: pa.Schema,
    max_message_bytes: int,
) -> pa.RecordBatch | None:
    """The rows of ``batch`` that get no delivery because they are invalid, with the reason."""
    if batch.num_rows == 0:
        return None
    topics, codes = _distinct(batch.column(topic_index))
    reasons = validator.reasons(topics.to_pylist())
    bad = np.fromiter((r is not None for r in reasons), bool, len(reasons))[codes]
    sizes = row_sizes(batch) if max_message_bytes else None
    oversize = sizes > max_message_bytes if sizes is not None else None
    if oversize is not None:
        bad |= oversize
    if not bad.any():
        return None
    (where,) = np.nonzero(bad)
    row_reasons = [reasons[codes[i]] for i in where.tolist()]
    if oversize is not None and sizes is not None:
        for j, i in enumerate(where.tolist()):
            if row_reasons[j] is None:
                row_reasons[j] = _oversize_reason(int(sizes[i]), max_message_bytes)
    taken = batch.take(pa.array(where))
    reason = pa.array(row_reasons, type=out_schema.field(out_schema.names[-1]).type)
    return pa.RecordBatch.from_arrays([*taken.columns, reason], schema=out_schema)


def _batch_id() -> int | None:
    """The streaming micro-batch this task belongs to (None in a batch job)."""
    context = TaskContext.get()
    value = context.getLocalProperty("streaming.sql.batchId") if context is not None else None
    return int(value) if value is not None else None


class RouteFunction:
    """The function given to ``mapInArrow``: the subscriptions travel inside it, as data.

    Pickled with the plan, so it needs no SparkContext and no broadcast (Spark Connect works);
    the worker decodes the pairs only when its cache has no matcher for ``key`` yet.

    ``shards`` (the ``shard`` plan, :mod:`._plan`): a ``(key, payload)`` per shard instead of
    ``payload``, and each input row's shard in the input's last column, which does not go out.
    The rows come sorted by shard; the worker holds one shard's matcher at a time (it drops the
    last one before building the next), so its memory is that of the largest shard.
    ``subscribers``: with ``shards``, how many subscribers the figures count (every shard shares
    the ids of the whole table).
    """

    def __init__(
        self,
        key: str,
        dialect: str,
        pedantic: bool,
        payload: bytes,
        topic_index: int,
        subscriber_col: str,
        max_message_bytes: int,
        stats: Any = None,
        keep_valid: bool = False,
        subscribers: int = 0,
        shards: tuple[tuple[str, bytes], ...] = (),
    ) -> None:
        self.key = key
        self.dialect = dialect
        self.pedantic = pedantic
        self.payload = payload
        self.topic_index = topic_index
        self.subscriber_col = subscriber_col
        self.max_message_bytes = max_message_bytes
        self.stats = stats  # a Spark accumulator of {Key: Counts}, or None
        self.keep_valid = keep_valid  # see route_batch
        self.subscribers = subscribers
        self.shards = shards

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        if self.shards:
            parts, size = self._by_shard(batches), self.subscribers
        else:
            only = compiled_for(self.key, self.dialect, self.pedantic, self.payload)
            parts, size = ((only, batch) for batch in batches), len(only.subscribers)
        counts = Counts(size) if self.stats is not None else None
        schema: pa.Schema | None = None
        try:
            for compiled, batch in parts:
                if schema is None:
                    values = compiled.subscribers_as(batch.schema.field(self.topic_index).type)
                    item = pa.field("element", values.type, nullable=False)
                    schema = batch.schema.append(
                        pa.field(self.subscriber_col, pa.list_(item), nullable=False)
                    )
                yield from route_batch(
                    batch, self.topic_index, compiled, schema, self.max_message_bytes, counts, self.keep_valid
                )
                del compiled  # the next shard's matcher is built in next(parts), not beside this one
        finally:
            forget_old_versions()
        if counts is not None:
            self.stats.add({(_batch_id(), self.key.partition("+")[0]): counts})

    def _by_shard(self, batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[Compiled, pa.RecordBatch]]:
        """The rows of each batch by shard, without the shard column, each with its matcher."""
        current: int | None = None
        compiled: Compiled | None = None
        for batch in batches:
            column = batch.column(batch.num_columns - 1)
            batch = batch.drop_columns([batch.schema.names[-1]])
            shards = pc.unique(column).to_pylist()
            for shard in sorted(shards):
                part = batch if len(shards) == 1 else batch.filter(pc.equal(column, shard))
                if shard != current or compiled is None:
                    # One shard's matcher at a time in this process: every other shard of the
                    # table goes before this one is built (or reused, when an earlier task of
                    # this worker ended on it), also those that earlier tasks left cached.
                    compiled = None
                    key, payload = self.shards[shard]
                    # Counted, not kept: a list of them would keep them alive through the collection.
                    dropped = sum(
                        _COMPILED.pop(other, None) is not None for other, _ in self.shards if other != key
                    )
                    if dropped:
                        # A dropped matcher's DFA is cyclic, and its states hold the trie's nodes:
                        # without a collection the whole shard stays until the collector's next
                        # full pass, and the next shard is built beside it: a full collection here
                        # frees it first.
                        gc.collect()
                    current = shard
                    compiled = compiled_for(key, self.dialect, self.pedantic, payload)
                yield compiled, part


class QuarantineFunction:
    """The function given to ``mapInArrow`` for the quarantine: invalid messages and the reason."""

    def __init__(
        self, dialect: str, pedantic: bool, topic_index: int, reason_col: str, max_message_bytes: int
    ) -> None:
        self.dialect = dialect
        self.pedantic = pedantic
        self.topic_index = topic_index
        self.reason_col = reason_col
        self.max_message_bytes = max_message_bytes

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        validator = validator_for(self.dialect, self.pedantic)
        schema: pa.Schema | None = None
        for batch in batches:
            if schema is None:
                kind = batch.schema.field(self.topic_index).type
                schema = batch.schema.append(pa.field(self.reason_col, kind, nullable=False))
            out = quarantine_batch(batch, self.topic_index, validator, schema, self.max_message_bytes)
            if out is not None:
                yield out
