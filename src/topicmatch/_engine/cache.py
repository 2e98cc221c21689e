"""The default's result cache: topics that come back are answered by one dict access.

Keys are topics as published (strings), values the frozensets a lookup returned. The lookup path
that reads it is written out once, in :meth:`topicmatch.Matcher.lookup`:

1. while ``quiet`` counts down (nothing cached, admission waiting: :meth:`expire`), the index's
   walk and nothing else;
2. else ``hot.get(topic)``: a hit is one dict access, no lock, no parse;
3. else ``warm.get(topic)``: a hit there *promotes* the topic into ``hot`` (:meth:`promote`);
4. else the index's walk; while admission is on, :meth:`admit` is told of the miss.

**A topic earns its place in three sightings.** Its first miss records its hash in ``seen`` (the
"doorkeeper" of TinyLFU: a one-off topic costs an int in a dict, not a store); its second stores
it in ``warm`` (a dict insert); a third lookup finds it there and moves it to ``hot``, where it is
indexed for invalidation (below). So the dearer step, indexing, is paid only by topics that came
back twice, and a topic seen once or twice costs little.

**Admission has a governor** (:class:`~.governor.Governor`): every :data:`ADMIT_WINDOW` misses
it judges whether the stores paid, that is, whether at least one in :data:`ADMIT_PAYS` of them
was followed by a promotion. If not (topics that never repeat, or repeat once and no more),
misses record and store nothing for :data:`ADMIT_BACKOFF` misses, doubling up to
:data:`ADMIT_MAX_BACKOFF`; then admission is on again for a window. Probes go on whatever
admission does: topics in ``hot`` before a burst of new ones are answered from it during and
after the burst, which stores nothing in ``hot``. A wait that begins while nothing is cached,
or the rest of one that a write leaves with nothing cached (under churn, writes empty ``warm``),
is counted in ``quiet`` instead, where a miss costs a count and no probe (:meth:`expire`): on
traffic where nothing repeats, after the first window, the default adds one attribute test and
a count to the trie's walk.

**Eviction: whole generations.** ``hot`` holds at most half of ``max_size`` topics, ``warm`` the
other half. When ``hot`` is full, a promotion first makes it ``warm`` (the old ``warm`` goes):
topics still hot come back by promotion at their next lookup, the others go with their
generation. When ``warm`` is full, a store empties it. Both are O(1) (a new dict, and CPython
frees the old one), and no lookup pays a bookkeeping cost for recency: a hit stays one dict
access.

**Bounded in bytes.** Each topic is charged its text and entry, each distinct result object once
per generation by ``sys.getsizeof`` (the topics of a fan-out share one set; the shared empty set
is never charged), and a ``hot`` topic the nodes it adds to the index. A result charged more
than a quarter of ``max_bytes`` is never stored. A store or promotion that would take the charge
past ``max_bytes`` first empties ``warm``, then ``hot``. So the cache holds at most ``max_bytes``
by its charge, which errs high (``tests/test_bounds.py`` traces what it keeps with
``tracemalloc``), plus the admission record: the hashes of at most ``max_size`` topics (4.7 MB at
the default 65,536 entries). Topics longer than :data:`MAX_TOPIC_CHARS` characters or
:data:`MAX_TOPIC_WORDS` words are never stored.

**Nothing for the collector.** A store creates no object that CPython's cyclic collector tracks:
the index of the ``hot`` topics is :mod:`.topic_trie`'s, and the bookkeeping dicts hold strings
and integers only (stores that made tracked objects put a third of the lookups' time into
collections where topics come and go: ``benchmarks/cache_collector.py``).

**Invalidation: exact for hot, wholesale for warm, bounded.** Before a write commits, the cache
drops exactly the ``hot`` topics the written pattern matches, found by a walk of their index
(:class:`~.topic_trie.TopicTrie`) with the roles of a lookup swapped, taking at most
:data:`WALK_STEPS` steps per token of the pattern (plus one); past that budget ``hot`` is emptied
instead. ``warm``, which is not indexed, is emptied by every write. So a write costs
O(len(pattern) x WALK_STEPS) whatever is cached (``tests/test_bounds.py`` counts the steps), and
topics that stay hot across writes stay cached.

**No stale store, no stale hit.** The discipline of :mod:`._versions`: the drop and the commit are
one change under the cache's lock, with its version odd from before the drop until the commit is
done, and a lookup stores or promotes only if the version it read before it began was even and
has not moved (checked under the same lock). From the drop until the commit is visible, affected
topics miss and read the index itself; a result computed from a superseded state is never stored,
and a cached answer never contradicts a write that has happened.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Iterable
from typing import Final, TypeVar

from .._empty import EMPTY
from .._versions import Versioned
from .._words import Tokens
from .governor import Governor
from .topic_trie import NODE_BYTES, TopicTrie

__all__ = ["ResultCache"]

_T = TypeVar("_T")

#: Steps the invalidation walk may take per token of the written pattern (plus one), before
#: the write empties ``hot`` instead.
WALK_STEPS: Final = 16
#: Longest topic stored, in characters and in words.
MAX_TOPIC_CHARS: Final = 256
MAX_TOPIC_WORDS: Final = 16
#: Misses per judgement of admission, and the share of stores that must be followed by a
#: promotion for admission to pay (1 in ADMIT_PAYS). On topics seen once a window is pure cost:
#: a record per miss (a hash and a dict insert, about 0.2 µs: a fifth of the walk of a topic that
#: matches nothing). It is long enough for topics that come round in a cycle of up to 1,024 to
#: repeat within it, which passes it (a window that stores anything passes: :meth:`_paid`).
#: What it costs on topics seen once: the workload matrix's distinct rows, *default ÷ no cache*
#: (docs/performance.md); against 2,048 and a first wait of 8,192: CHANGELOG.md, "Performance history".
ADMIT_WINDOW: Final = 1024
ADMIT_PAYS: Final = 8
#: Misses that admission stays off after a window that did not pay, first and at most.
ADMIT_BACKOFF: Final = 16384
ADMIT_MAX_BACKOFF: Final = 65536
#: The most misses of a wait that ``quiet`` counts at a time (expire): CPython makes the ints up
#: to 256 once, so a count within them makes no object, and the quiet path of a pure lookup
#: costs ~100 instructions less than one counting down from 65,536, which made and freed an
#: int per miss (benchmarks/instructions.py; the compiled build counts in a C integer).
QUIET_CHUNK: Final = 256
#: Topics promoted since the last write that the next write indexes, at most; with more, it
#: empties ``hot`` instead (a write's cost stays bounded: tests/test_bounds.py).
INDEX_BUDGET: Final = 1024
#: Charge per dict entry (key and value pointers, hash, index slot, growth slack).
_ENTRY_BYTES: Final = 64
#: A str's header: what sys.getsizeof says of an empty one of the widest kind (4 bytes a
#: character) and then some. Text is charged by this and 4 bytes a character, which errs high
#: for ASCII and is a call cheaper than sys.getsizeof (on a promotion, half its cost).
_STR_BYTES: Final = 80
#: A topic in either generation is charged this and 4 bytes a character (its entry and its
#: text), its result apart. Written out where a topic is charged, not called, and the bytes and
#: a generation's size read from attributes, not a property or max(): with these, a pure
#: fresh matcher runs the unmatched row's first 10,000 lookups 6 % faster, zipf's 4 %, the
#: study's 8 % (CHANGELOG.md, "Performance history"; the rows' rates now: the workload
#: matrix, docs/performance.md).
_TOPIC_BYTES: Final = _ENTRY_BYTES + _STR_BYTES


class ResultCache(Versioned):
    """Lookup results by topic: three-sighting admission, two generations, exact invalidation.

    ``max_size`` bounds the entries (half per generation) and the admission record; ``max_bytes``
    the charge of what is stored; ``parse`` gives a topic's words (the dialect's parser: a
    promotion indexes the topic). ``hot``, ``warm``, ``admission`` and the version are read by
    :meth:`topicmatch.Matcher.lookup`; everything else goes through the methods here.
    """

    __slots__ = (
        "_generation",
        "_hot_bytes",
        "_hot_results",
        "_parse",
        "_quiet_rest",
        "_stored_before",
        "_trie",
        "_unindexed",
        "_warm_bytes",
        "_warm_results",
        "admission",
        "dollar_rule",
        "hot",
        "last_walk",
        "max_bytes",
        "max_size",
        "promotions",
        "quiet",
        "seen",
        "stores",
        "walk_budget",
        "warm",
    )

    def __init__(
        self,
        max_size: int,
        max_bytes: int,
        parse: Callable[[str], list[str] | None],
        dollar_rule: bool = False,
    ) -> None:
        super().__init__()
        self.max_size = max_size
        self._generation = max(1, max_size // 2)  # entries of each generation, at most
        self.max_bytes = max_bytes
        self.dollar_rule = dollar_rule
        self._parse = parse
        self.hot: dict[str, frozenset[Hashable]] = {}
        self.warm: dict[str, frozenset[Hashable]] = {}
        self._trie = TopicTrie()  # the hot topics (those with words), for invalidation
        self._unindexed: list[str] = []  # topics promoted since the last write: not indexed yet
        self._hot_bytes = self._warm_bytes = 0
        # Ids of the result objects charged in each generation: each is charged once.
        self._hot_results: dict[int, None] = {}
        self._warm_results: dict[int, None] = {}
        self.seen: dict[int, None] = {}  # admission: hashes of topics that missed once
        self.admission = Governor(ADMIT_WINDOW, ADMIT_BACKOFF, ADMIT_MAX_BACKOFF, self._paid)
        self.quiet = 0  # misses left of admission's wait while nothing is cached: see expire
        self._quiet_rest = 0  # and the wait's misses after those (expire)
        self.stores = 0  # in the admission's current window
        self.promotions = 0
        self._stored_before = 0  # stores of the window before
        self.walk_budget = WALK_STEPS
        self.last_walk = 0  # steps of the last invalidation walk (for the tests)

    @property
    def bytes(self) -> int:
        """What the cache is charged now (both generations)."""
        return self._hot_bytes + self._warm_bytes

    def __len__(self) -> int:
        return len(self.hot) + len(self.warm)

    # -- the lookup path's calls ---------------------------------------------------------------
    def admit(self, topic: str, words: list[str] | None, result: frozenset[Hashable], version: int) -> None:
        """A lookup of ``topic`` missed both generations and walked the index while admission
        was on (``version``: the cache's, read before the walk): record its first miss, store
        its second in ``warm``. O(1) (the store empties ``warm`` when full: O(1) too).

        The record holds hashes, not topics: it keeps no topic alive, and at most ``max_size``
        integers (about 100 bytes each with their dict slots) before it starts over. Two topics
        of one hash share a record: the second is stored on its first miss. A topic that is
        never stored (too long, or not a str) is recorded all the same: :meth:`_store` refuses
        it, so the record of a one-off topic, the commonest miss, tests nothing else.
        """
        seen = self.seen
        key = hash(topic)  # computed once per str and kept in it: no cost on a repeat
        if key in seen:
            self._store(topic, words, result, version)
        else:
            if len(seen) >= self.max_size:
                seen.clear()
            seen[key] = None

    def promote(self, topic: str, version: int) -> None:
        """``topic`` was found in ``warm``: move it into ``hot``, unless a write was under way when
        ``version`` was read or began since. O(1); a full ``hot`` is emptied first (O(1)). The
        next write indexes it (:meth:`write`)."""
        with self._lock:
            if self._version != version:
                return
            result = self.warm.pop(topic, None)
            if result is None:
                return
            entry = _TOPIC_BYTES + 4 * len(topic)
            self._warm_bytes -= entry  # its result stays charged there
            if len(self.hot) >= self._generation:
                self._rotate()
            while True:  # ends: each turn empties warm or turns hot into warm, until both are empty
                charge = entry  # and its result, unless that object is charged in hot already
                if result is not EMPTY and id(result) not in self._hot_results:
                    charge += sys.getsizeof(result)
                fits = self._hot_bytes + self._warm_bytes + charge <= self.max_bytes
                if fits or not (self.hot or self.warm):
                    break
                if self.warm:
                    self._empty_warm()
                else:
                    self._rotate()
            self.hot[topic] = result
            self._unindexed.append(topic)
            if result is not EMPTY:
                self._hot_results[id(result)] = None
            self._hot_bytes += charge
            self.promotions += 1

    def expire(self) -> None:
        """Admission's count ran out (the lookup path counts its misses): its governor judges the
        window, or ends the wait. If admission is now waiting and neither generation holds
        anything, the wait is handed to ``quiet``, which the lookup path reads first: until it
        runs out, a miss costs one count and no probe. Nothing is stored meanwhile (only
        admission stores, and a promotion needs a stored topic; a store by a lookup that read
        admission on before the wait began lands in ``warm``, and is probed once ``quiet`` runs
        out), so this changes no answer and no decision, only the cost of a miss where nothing
        repeats (docs/performance.md). O(1) but for the governor's test, O(1) too. Readers
        count ``quiet`` down without a lock: a count lost to a race moves the end of the wait
        by a miss, as with the governor's own count.

        ``quiet`` takes the wait :data:`QUIET_CHUNK` misses at a time, the rest held in
        ``_quiet_rest``: at the end of each chunk one miss takes the whole path (it probes
        both generations) and comes here, counted as one of the wait, for the next chunk. So the
        wait has as many misses as the governor gave it, whether handed to ``quiet`` or not.
        """
        admission = self.admission
        rest = self._quiet_rest  # 0, or a chunk ran out and this miss was one of the wait
        self._quiet_rest = 0
        if rest > 1:
            admission.left = rest - 1  # the rest of the wait: to quiet below, or the governor's
        else:
            admission.expire()  # judge the window, or end the wait (rest 1: this was its last)
        self._quiet_if_idle()

    def _quiet_if_idle(self) -> None:
        """Hand the rest of admission's wait to ``quiet`` (:meth:`_quiet`) if nothing is cached,
        admission waits and ``quiet`` is not counting it already: at the end of a window
        (:meth:`expire`), and after a write (under churn, writes empty ``warm`` during the
        waits, whose misses would otherwise probe two empty generations each). A wait of one
        miss is left to the governor."""
        admission = self.admission
        idle = not (self.hot or self.warm or admission.on or self.quiet or self._quiet_rest)
        if idle and admission.left > 1:
            self._quiet(admission.left)

    def _quiet(self, wait: int) -> None:
        """Hand ``wait`` misses of admission's wait to ``quiet``: a chunk of at most
        :data:`QUIET_CHUNK` - 1 there, then one miss through the whole path (``left`` of 1),
        the rest in ``_quiet_rest``."""
        chunk = min(wait - 1, QUIET_CHUNK - 1)
        self._quiet_rest = wait - chunk
        self.admission.left = 1  # the miss after the quiet ones comes back to expire
        self.quiet = chunk

    # -- writes ----------------------------------------------------------------------------------
    def write(self, patterns: Iterable[Tokens], commit: Callable[..., _T], *args: object) -> _T:
        """Drop every ``hot`` topic that one of ``patterns`` matches and all of ``warm``, then run
        ``commit(*args)`` (which changes the index for all of them: the matcher passes the
        index's method and its arguments, which costs less than binding them in a
        ``functools.partial`` first: CHANGELOG.md, "Performance history"). O(len(pattern) x
        WALK_STEPS) per pattern whatever is cached, and O(1) per pattern once ``hot`` is empty: a
        bulk write through one call here, not one per pattern, pays the lock and the version
        once (a fresh matcher's bulk subscribe costs no more than the trie's).

        One change of :mod:`._versions`: the version is odd from before the first drop and moves
        again *after* the commit: a lookup that read it at any moment before the commit became
        visible may have matched the old state, and its store must be refused. Moving it before
        the commit only would let a lookup read the new version, then the old index, and store
        a stale result (pinned by tests/test_cache.py). Stores take the lock, so none lands
        mid-write; every drop is done before the commit begins, so what ``hot`` holds while it
        runs no pattern of the write matches.
        """
        with self._lock:
            self._version += 1  # odd before the drop
            try:
                if self._unindexed:
                    self._index_new()
                for tokens in patterns:
                    if not self.hot:
                        break
                    found = self._matching(tokens)
                    if found is None:
                        self._empty_hot()
                    else:
                        for topic in found:
                            del self.hot[topic]
                            self._trie.remove(topic)
                            # Its result stays charged until hot is emptied: the charge errs high.
                            self._hot_bytes -= _TOPIC_BYTES + 4 * len(topic)
                if self.warm:
                    self._empty_warm()
                self._quiet_if_idle()
                return commit(*args)
            finally:
                self._version += 1  # even after the commit

    def empty(self) -> None:
        """Drop every entry; lookups running meanwhile cannot store what they computed before."""
        with self._lock:
            self._version += 1  # odd before the first store (._versions, rule 2)
            try:
                self._empty_hot()
                self._empty_warm()
            finally:
                self._version += 1

    # -- internals ---------------------------------------------------------------------------
    def _store(self, topic: str, words: list[str] | None, result: frozenset[Hashable], version: int) -> None:
        """Put ``topic`` in ``warm``, unless a write was under way when ``version`` was read or
        began since, or it is there already, or its result would take more than a quarter of
        ``max_bytes``. A full ``warm`` is emptied first; if the charge would pass ``max_bytes``,
        ``warm`` is emptied and the topic not stored."""
        if type(topic) is not str:  # a str subclass may hash or compare unlike its value
            return
        if len(topic) > MAX_TOPIC_CHARS or (words is not None and len(words) > MAX_TOPIC_WORDS):
            return
        with self._lock:
            if self._version != version or topic in self.warm or topic in self.hot:
                return
            charge = _TOPIC_BYTES + 4 * len(topic)
            new_result = result is not EMPTY and id(result) not in self._warm_results
            if new_result:
                size = sys.getsizeof(result)
                if size > self.max_bytes >> 2:
                    return
                charge += size
            over = self._hot_bytes + self._warm_bytes + charge > self.max_bytes
            if over or len(self.warm) >= self._generation:
                self._empty_warm()
                if self._hot_bytes + charge > self.max_bytes:
                    return  # hot holds the budget: it makes room when it is emptied
                if result is not EMPTY and not new_result:
                    charge += sys.getsizeof(result)  # its earlier charge went with warm
                new_result = result is not EMPTY
            self.warm[topic] = result
            if new_result:
                self._warm_results[id(result)] = None
            self._warm_bytes += charge
            self.stores += 1

    def _index_new(self) -> None:
        """Index the topics promoted since the last write (the lock held), so that the write can
        find those it matches: O(their words), at most :data:`INDEX_BUDGET` topics, else ``hot``
        is emptied instead (O(1)). Indexing at the first write rather than at the promotion
        leaves traffic without writes the cost of none (a promotion indexed at once cost as
        much as four lookups of a topic nobody subscribed to)."""
        pending = self._unindexed
        if len(pending) > INDEX_BUDGET:
            self._empty_hot()
            return
        hot, trie, parse = self.hot, self._trie, self._parse
        for topic in pending:
            words = parse(topic) if topic in hot else None  # None: a topic no pattern matches
            if words is not None:
                made = trie.add(topic, words)
                if made:
                    # The index's nodes the topic adds are the last ones of its branch: once a
                    # word is new, so are the words below it. Their text as a topic's.
                    charge = made * (NODE_BYTES + _STR_BYTES) + 4 * sum(map(len, words[-made:]))
                    self._hot_bytes += charge
        self._unindexed = []
        if self.bytes > self.max_bytes:
            self._empty_warm()
            if self.bytes > self.max_bytes:
                self._empty_hot()

    def _paid(self) -> bool:
        """The admission governor's test of a window: did the stores of the window before come
        back? At least one in :data:`ADMIT_PAYS` of them must have been promoted in this one (a
        stored topic's third sighting comes a while after its second), and something must have
        been stored lately (else nothing repeats). So the first window that stores passes, and
        topics seen twice and no more cost two windows of stores."""
        stored = self._stored_before
        pays = stored + self.stores > 0 and ADMIT_PAYS * self.promotions >= stored
        self._stored_before = self.stores
        self.stores = self.promotions = 0
        return pays

    def _matching(self, tokens: Tokens) -> list[str] | None:
        """The hot topics that ``tokens`` matches (a walk of their index), or None if finding
        them would take more than the walk's budget of steps (the lock held)."""
        # MQTT: a pattern starting with a wildcard never matches a topic whose first word
        # starts with '$'.
        dollar = self.dollar_rule and bool(tokens) and type(tokens[0]) is not str
        found = self._trie.matching(tokens, dollar, self.walk_budget * (len(tokens) + 1))
        self.last_walk = self._trie.last_walk
        return found

    def _rotate(self) -> None:
        """``hot`` becomes ``warm`` (the lock held; the old ``warm`` goes): topics still hot come
        back by promotion, one lookup each, the rest go with the generation. O(1). Its index is
        not needed in ``warm``, which every write empties: a new one starts."""
        self.warm = self.hot
        self._warm_results = self._hot_results
        self._warm_bytes = self._hot_bytes
        self.hot = {}
        self._trie = TopicTrie()
        self._unindexed = []
        self._hot_results = {}
        self._hot_bytes = 0

    def _empty_hot(self) -> None:
        """A new, empty ``hot`` and index (the lock held): O(1), CPython frees the old ones."""
        self.hot = {}
        self._trie = TopicTrie()
        self._unindexed = []
        self._hot_results = {}
        self._hot_bytes = 0

    def _empty_warm(self) -> None:
        """A new, empty ``warm`` (the lock held)."""
        self.warm = {}
        self._warm_results = {}
        self._warm_bytes = 0
