"""A bounded cache of lookup results that measures its own worth, with exact, bounded invalidation.

Keys are topics as published (strings), values the frozensets a lookup returned. A hit is one
dict access and takes no lock.

**Admission and eviction.** A topic is stored on its second miss, not its first (the "doorkeeper" of
TinyLFU): topics seen once do not pay for a store nor push out hot ones. Topics longer than
:data:`MAX_TOPIC_CHARS` characters or :data:`MAX_TOPIC_WORDS` words are never stored (they would
make the cache big), nor results of more than 1/64 of ``max_bytes`` (such a set is held by a trie
node or a DFA state already, and a few of them would fill the cache). Entries live in two
generations: when the current one holds half of ``max_size`` topics or the two have been charged
``max_bytes`` together (each stored topic, its index nodes and its result but the shared empty set,
by ``sys.getsizeof``), it becomes the older one and the older one is dropped; a lookup that finds
its topic in the older generation moves it back. Hot topics thus survive, one-off ones go with their
generation, at amortised O(1) per store and no per-entry bookkeeping (a hit stays one dict access;
only misses look at the older generation). A store creates no object that CPython's cyclic collector
tracks (the index below is :mod:`._topic_trie`'s): stores that made eight each put over a third of
the lookups' time into collections where topics come and go (docs/performance.md, "The result cache
and the collector"). So the cache holds at most ``max_bytes`` by its charge (which errs high:
``tests/test_bounds.py`` traces what it keeps), plus the admission record: the hashes of at most
``max_size`` topics seen once (4.7 MB at the default 65,536 entries; the same test traces it).

**On and off.** The cache weighs what it saves against what it costs. A new cache starts off
for :data:`MEASURE` lookups, timing one in eight of the last :data:`WINDOW` of them: the mean
cost of a lookup of this traffic without the cache. While on, the lookup functions
(:func:`cached_lookups`) count hits and misses and time one miss in eight (its parse and the
index's lookup); the cache times its own upkeep (stores, invalidation walks). Every
:data:`WINDOW` misses (but the first window after the cache went on, which only fills it), the
saving is the window's lookups at the mean without the cache less its misses at their own mean
(the hits may be the cheap topics: under subscription churn they were), at most each hit at the
dearer mean; if it is below the upkeep and the admission of the misses, the cache switches itself
off: it is emptied, and for the next ``backoff`` lookups (:data:`FIRST_BACKOFF` the first time,
four times longer each time it switches off again, at most :data:`MAX_BACKOFF`) lookups go
straight to the index, paying one dict access, and the last of them re-measure the mean without
the cache. Then it switches itself on and measures again. Means leave out their longest eighth
and a store is charged at most :data:`STORE_NS`, so that a pause of the collector or the
scheduler does not decide. Topics that never repeat (one per device, a log replayed once) and
writes so frequent that entries die before they are read thus cost the index's lookup and
little more.

**Exact invalidation, bounded.** Before a write commits, the cache drops exactly the entries the
written pattern matches, and nothing else. To find them without testing every entry, the cached
topics are also indexed in a trie of their words (:class:`~._topic_trie.TopicTrie`); the written pattern
walks it like a lookup walks the subscription trie, with the roles swapped (the pattern's ``*``
visits every child, its ``#`` every descendant), keeping a set of visited (node, position) pairs
so that many ``#`` stay polynomial. The walk (one index holds both generations) may take at most
:data:`WALK_STEPS` steps per token of the pattern (plus one); past that budget the whole cache is
emptied instead. So a write costs O(len(pattern) x WALK_STEPS) for the walks, or emptying a cache
whose size is bounded as above, whatever is cached (``tests/test_bounds.py`` counts the steps).

**No stale store, no stale hit.** The discipline of :mod:`._versions`: the drop and the commit
are one change under the cache's lock, with its version odd from before the drop until the
commit is done, and a lookup that missed stores its result only if the version it read before
it began was even and has not moved (checked under the same lock). From the
drop until the commit is visible, affected topics miss and read the index itself; a result
computed from a superseded state is never stored, and a cached answer never contradicts a write
that has happened.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Final, TypeVar

from ._errors import UnknownTopicError
from ._index import EMPTY
from ._topic_trie import NODE_BYTES, TopicTrie
from ._versions import Versioned
from ._words import Tokens

__all__ = ["ResultCache", "cached_lookups"]

_T = TypeVar("_T")

#: Steps the invalidation walk may take per token of the written pattern (plus one), before
#: the write empties the cache instead.
WALK_STEPS: Final = 16
#: Longest topic stored, in characters and in words.
MAX_TOPIC_CHARS: Final = 256
MAX_TOPIC_WORDS: Final = 16
#: Bytes the cache may be charged before it is emptied (topics, index nodes, results).
MAX_BYTES: Final = 32 * 1024 * 1024
#: Misses per measurement window; the admission's cost per miss (a dict insert), in ns.
WINDOW: Final = 1024
ADMIT_NS: Final = 100
#: Lookups a new cache stays off, timing the index alone (the cost a hit saves on this traffic).
MEASURE: Final = 2 * WINDOW
#: The off count of a cache that stepped out of the lookup path (see cached_lookups): too big to
#: run down before the index calls back, and below 2**30, so that a kept closure counting it
#: down does CPython's one-digit int arithmetic, not the slower arithmetic of bigger ints.
OUT: Final = (1 << 30) - 1
#: Lookups the cache stays off the first time it switches itself off, and at most.
FIRST_BACKOFF: Final = 16 * WINDOW
MAX_BACKOFF: Final = 1 << 22
#: The most one store is charged, in ns: several times the cost of storing a topic of
#: MAX_TOPIC_WORDS words; what a store takes beyond that is a pause that is not the cache's.
STORE_NS: Final = 50_000
_clock = time.perf_counter_ns
_ENTRY_BYTES: Final = 64


class ResultCache(Versioned):
    __slots__ = (
        "_cost",
        "_trie",
        "bytes",
        "dollar_rule",
        "entries",
        "last_walk",
        "max_bytes",
        "max_size",
        "older",
        "seen",
        "spent_ns",
        "walk_budget",
    )

    def __init__(self, max_size: int, dollar_rule: bool = False, max_bytes: int = MAX_BYTES) -> None:
        super().__init__()
        self.max_size = max_size
        self.max_bytes = max_bytes
        self.dollar_rule = dollar_rule
        # Never replaced, only emptied: the lookup functions hold its ``get``.
        self.entries: dict[str, frozenset[Hashable]] = {}
        # The previous generation of entries (see _rotate); one topic index holds both.
        self.older: dict[str, frozenset[Hashable]] = {}
        self._trie = TopicTrie()  # both generations' topics (with words: None is never indexed)
        self._cost: dict[str, int] = {}  # each stored topic: the bytes it was charged
        self.bytes = 0
        # Admission: topics that missed once, cleared when full.
        self.seen: dict[int, None] = {}
        self.spent_ns = 0  # time spent storing and invalidating, since the lookups last looked
        self.walk_budget = WALK_STEPS
        self.last_walk = 0  # steps of the last invalidation walk (for the tests)

    def admit(self, topic: str, words: list[str] | None, result: frozenset[Hashable], version: int) -> None:
        """A miss of ``topic``: remember it the first time, store it the second.

        The record holds the topics' hashes, not the topics: it keeps no topic alive, and at most
        ``max_size`` integers (about 100 bytes each with their dict slots) before it starts
        over. Two topics of one hash share a record: the second is stored on its first miss.
        """
        seen = self.seen
        key = hash(topic)  # computed once per str and kept in it: no cost on a repeat
        if key in seen:
            if sys.getsizeof(result) <= self.max_bytes >> 6:
                self.store(topic, words, result, version)
        elif len(topic) <= MAX_TOPIC_CHARS and (words is None or len(words) <= MAX_TOPIC_WORDS):
            if len(seen) >= self.max_size:
                seen.clear()
            seen[key] = None

    def store(self, topic: str, words: list[str] | None, result: frozenset[Hashable], version: int) -> None:
        """Cache ``result`` unless a write was under way when ``version`` was read or began since.

        ``words`` None means the topic can match no pattern at all (a NATS subject with an
        empty token): it is cached but never needs invalidating, so it is not indexed.
        """
        start = _clock()
        with self._lock:
            entries = self.entries
            if self._version != version or topic in entries or topic in self.older:
                return
            if len(entries) >= max(1, self.max_size // 2) or self.bytes >= self.max_bytes:
                # Not charged: a rotation forgets a whole generation at once, and charging that
                # to the one window it falls in switched the cache off where it doubled the rate
                # (the unmatched row of `topicmatch bench workloads`).
                rotation = _clock()
                self._rotate()
                start += _clock() - rotation
            entries[topic] = result
            # Charged: the entry and its key, the result (counted per entry: a result several
            # topics share is counted several times, which only errs on the safe side), and the
            # words and the index nodes the topic adds (the last ones of its branch: once a word
            # is new, so are the words below it).
            charge = 2 * _ENTRY_BYTES + sys.getsizeof(topic)
            if result is not EMPTY:  # the one empty set every miss of every topic shares
                charge += sys.getsizeof(result)
            if words is not None:
                made = self._trie.add(topic, words)
                if made:
                    charge += made * NODE_BYTES + sum(map(sys.getsizeof, words[-made:]))
            self._cost[topic] = charge
            self.bytes += charge
        # At most STORE_NS: a longer store was paused (the cyclic collector, the scheduler),
        # and one such pause switched the cache off where it paid.
        self.spent_ns += min(_clock() - start, STORE_NS)

    def promote(self, topic: str, version: int) -> None:
        """Move ``topic`` from the older generation back into the current one (a dict move: it
        stays indexed), unless a write was under way when ``version`` was read or began since."""
        with self._lock:
            if self._version == version:
                result = self.older.pop(topic, None)
                if result is not None:
                    if len(self.entries) >= max(1, self.max_size // 2):
                        self._rotate()
                    self.entries[topic] = result

    def _forget(self, topic: str) -> None:
        """Take ``topic`` out of the index and refund its charge (the lock held)."""
        self.bytes -= self._cost.pop(topic)
        self._trie.remove(topic)

    def _rotate(self) -> None:
        """The current generation becomes the older one, and the older one goes (the lock held).

        A lookup that misses the current generation but finds its topic in the older one moves
        it back (:meth:`promote`): hot topics survive every rotation, one-off ones go with their
        generation. Amortised O(1) per store: each topic is indexed once and forgotten once.
        """
        for topic in self.older:
            self._forget(topic)
        self.older = self.entries.copy()
        self.entries.clear()

    def _empty(self) -> None:
        """Drop every entry (the lock held); the admission record stays."""
        self.entries.clear()
        self.older = {}
        self._trie = TopicTrie()
        self._cost = {}
        self.bytes = 0

    def empty(self) -> None:
        """Drop every entry; lookups running meanwhile cannot store what they computed before."""
        with self._lock:
            self._version += 1  # odd before the first store (._versions, rule 2)
            try:
                self._empty()
            finally:
                self._version += 1

    def _matching(self, tokens: Tokens) -> list[str] | None:
        """The cached topics that ``tokens`` matches (a walk of the topic index), or None if
        finding them would take more than the walk's budget of steps."""
        # MQTT: a pattern starting with a wildcard never matches a topic whose first word
        # starts with '$'.
        dollar = self.dollar_rule and bool(tokens) and type(tokens[0]) is not str
        found = self._trie.matching(tokens, dollar, self.walk_budget * (len(tokens) + 1))
        self.last_walk = self._trie.last_walk
        return found

    def write(self, tokens: Tokens, commit: Callable[[], _T]) -> _T:
        """Drop every cached topic the pattern ``tokens`` matches, then run ``commit``.

        One change of :mod:`._versions`: the version is odd from before the drop and moves
        again *after* the commit: a lookup that read it at any moment before the commit became
        visible may have matched the old state, and its store must be refused. Moving it before
        the commit only would let a lookup read the new version, then the old index, and store
        a stale result (found by tests/test_concurrency.py on CI; pinned by tests/test_cache.py).
        That move after the commit is the one correctness rests on here: stores take the lock,
        so none lands mid-write; the odd move before the drop keeps the one rule of
        :mod:`._versions` (a miss that read the version during the drop is refused either way).
        """
        with self._lock:
            self._version += 1  # odd before the drop
            try:
                if self.entries or self.older:
                    start = _clock()
                    found = self._matching(tokens)
                    if found is None:
                        self._empty()
                    else:
                        for topic in found:
                            if self.entries.pop(topic, None) is None:
                                self.older.pop(topic)
                            self._forget(topic)
                    self.spent_ns += _clock() - start
                return commit()
            finally:
                self._version += 1  # even after the commit

    def __len__(self) -> int:
        return len(self.entries) + len(self.older)


def cached_lookups(
    cache: ResultCache,
    parse: Callable[[str], list[str] | None],
    match: Callable[[list[str]], frozenset[Hashable]],
    direct: Callable[[str], frozenset[Hashable]],
    topic_list: Callable[[Iterable[str]], list[str]] = list,
    after: Callable[[int, Callable[[], None]], bool] | None = None,
    step: Callable[[Callable[[str], frozenset[Hashable]] | None], None] | None = None,
) -> tuple[Callable[[str], frozenset[Hashable]], Callable[[Iterable[str]], list[frozenset[Hashable]]]]:
    """``lookup`` and ``lookup_many`` through ``cache``, switching it off while it does not pay.

    ``parse`` turns a topic into its words (None: it matches nothing; raises for a bad topic),
    ``match`` looks words up in the index, ``direct`` does both for one topic, ``topic_list``
    makes ``lookup_many``'s argument a list (the dialect's, which refuses one str). Closures rather
    than methods: the hit path is then one dict access and a counter in a cell, and
    ``lookup_many`` looks a chunk of topics up in one C loop when they are all cached (both
    measured in docs/performance.md, "The default engine").

    **Stepping out.** With ``after`` (the trie's :meth:`~._trie.TrieIndex.after`) and ``step``
    (``step(None)`` takes this closure out of the matcher's lookup path, ``step(lookup)`` puts it
    back), a cache that switches itself off leaves the path altogether: the index counts the
    backoff in its own count of lookups and calls back for the last :data:`WINDOW` of it, which
    this closure counts and times as before. So while off, a lookup costs the index's lookup and
    nothing of the cache's, not even a call, which on distinct topics was a few percent of a
    lookup (docs/performance.md, "One frame, one count"). Where the index cannot count
    (``after`` says False: an index that counts nothing), the cache stays in the path and counts
    itself. A caller who kept this closure keeps using it (while out, ``off`` is :data:`OUT`:
    each topic goes to ``direct``), and one who kept the function of the path without the cache
    is sent back here once the cache is in again (the trie's redirecting reader);
    ``lookup_many`` stays this closure's.
    """
    get = cache.entries.get
    getitem = cache.entries.__getitem__
    hits = misses = 0  # of the current window
    timed: list[int] = []  # the times of the misses timed in the window (parse and index)
    off = MEASURE  # lookups left with the cache off: it starts off, to time lookups without it
    off_timed: list[int] = []  # the times of the lookups timed while off
    base_ns = 0  # the mean time of a lookup without the cache, as last measured while off
    backoff = FIRST_BACKOFF
    warming = True  # the first window after the cache went on

    def step_in() -> None:
        # Called back by the index (``after``): the last WINDOW lookups of the backoff are this
        # closure's again, timed as any measurement while off.
        nonlocal off
        off = WINDOW
        if step is not None:
            step(lookup)

    def measure(topic: str) -> frozenset[Hashable]:
        # One lookup in 8 of the last WINDOW while off is timed: what a lookup of this traffic
        # costs without the cache, whichever topics it would hit (see the decision in miss).
        # Not the first ones: a new matcher's first lookups teach its DFA, and timing them
        # made lookups look three times dearer than they then were.
        nonlocal base_ns
        start = _clock()
        result = direct(topic)
        off_timed.append(_clock() - start)
        if not off:
            base_ns = _typical(off_timed)
            off_timed.clear()
        return result

    def miss(topic: str) -> frozenset[Hashable]:
        nonlocal hits, misses, off, backoff, warming
        if type(topic) is not str:
            return direct(topic)  # never a key: a str subclass may hash or compare unlike its value
        version = cache._version  # read before the index: see ResultCache.store
        older = cache.older.get(topic)
        if older is not None:  # cached in the older generation: back into the current one
            hits += 1
            cache.promote(topic, version)
            return older
        misses += 1
        # One miss in 8 is timed: what a hit saves, the topic's parse and the index's lookup
        # (timing the lookup alone undervalued hits on topics that match nobody, whose walk
        # ends at the first word, and switched the cache off where it doubled the rate).
        timing = not misses & 7
        if timing:
            start = _clock()
        words = parse(topic)
        try:
            result = EMPTY if words is None else match(words)
        except UnknownTopicError:
            raise UnknownTopicError(topic) from None
        if timing:
            timed.append(_clock() - start)
        if misses >= WINDOW:
            # What the cache saved against what keeping it cost (stores, invalidations, and the
            # admission of each miss). Saved: these lookups' time without the cache (the mean
            # measured while it was off) less the misses' time with it. Valuing each hit at the
            # mean miss instead overrated the cache where the topics that repeat are the cheap
            # ones (subscription churn: it kept the cache on at 0.8x the rate without it). The
            # first window after the cache went on only fills it: hits come once topics are in.
            # At most each hit valued at the dearer of the two means (and nothing without hits):
            # the mean without the cache is not re-measured while the cache stays on, and a
            # stale one must not make misses look like savings.
            miss_ns = _typical(timed)
            base = base_ns or miss_ns
            saved = min(max((hits + misses) * base - misses * miss_ns, 0), hits * max(base, miss_ns))
            if warming:
                warming = False
            elif saved < cache.spent_ns + misses * ADMIT_NS:
                cache.empty()
                off, backoff, warming = backoff, min(4 * backoff, MAX_BACKOFF), True
                if step is not None and after is not None:
                    # Out of the path (see the docstring); OUT never runs down to a measurement.
                    wait, off = off - WINDOW, OUT
                    step(None)
                    if not after(wait, step_in):  # the index cannot count: the closure counts
                        off = wait + WINDOW
                        step(lookup)
            else:
                backoff = FIRST_BACKOFF
            hits = misses = cache.spent_ns = 0
            timed.clear()
        if not off:
            cache.admit(topic, words, result, version)
        return result

    def lookup(topic: str) -> frozenset[Hashable]:
        nonlocal hits, off
        if off:  # switched off (or measuring): the cache is empty, straight to the index
            off -= 1
            if off & 7 or off > WINDOW:
                # A cache switched off costs a lookup a check of this counter and no more (with
                # the check before the dict access, fan-out went from 0.85x to 0.95x of the
                # uncached matcher: docs/performance.md, "The workload matrix"). ``direct`` is
                # the index's reader where it has one (the trie's: parse and walk in one frame).
                return direct(topic)
            return measure(topic)
        try:
            result = get(topic)
        except TypeError:  # unhashable: let the dialect raise its typed error
            return direct(topic)
        if result is not None:
            hits += 1
            return result
        return miss(topic)

    def lookup_many(topics: Iterable[str]) -> list[frozenset[Hashable]]:
        nonlocal hits
        topics = topic_list(topics)
        out: list[frozenset[Hashable]] = []
        for start in range(0, len(topics), _CHUNK):
            chunk = topics[start : start + _CHUNK]
            try:
                found = list(map(getitem, chunk))  # all cached: one C loop; raises at a miss
            except (KeyError, TypeError):
                out += [lookup(t) for t in chunk]
            else:
                hits += len(found)
                out += found
        return out

    return lookup, lookup_many


def _typical(times: list[int]) -> int:
    """The mean of ``times`` without its longest eighth, 0 if empty: a lookup that the collector
    or the scheduler paused, once in a window, made misses look 30x dearer and switched off a
    cache that doubled the rate."""
    kept = sorted(times)  # a copy first: other threads append to and clear ``times``
    n = len(kept) - len(kept) // 8
    return sum(kept[:n]) // n if n else 0


#: Topics per C loop of ``lookup_many``: a miss costs at most this many wasted dict accesses.
_CHUNK: Final = 256
