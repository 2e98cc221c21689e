"""The public facade: one ``Matcher`` over every algorithm and dialect.

The data path is always the same: text -> dialect (validation, canonical tokens) -> index
(the algorithm's structure) -> frozenset of subscribers, with an optional result cache in front
of the index. A lookup takes one path, written out in :meth:`_Reader.lookup`. A failed call
(invalid pattern or topic, unhashable subscriber) raises before anything is changed.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Generic, cast

from ._algebra import covers
from ._by_subscriber import BySubscriber
from ._collector import collector_paused
from ._cstrie import CSTrieIndex
from ._dialects import Dialect, make_dialect, plain
from ._empty import EMPTY
from ._engine.cache import ResultCache
from ._engine.trie import TrieIndex
from ._engine.walk import Unions
from ._errors import (
    ConfigurationError,
    InvalidPairError,
    InvalidPatternError,
    InvalidSubscriberError,
    UnknownTopicError,
    shortened,
)
from ._index import Index, Item
from ._inverted_bitmap import InvertedBitmapIndex
from ._naive import NaiveIndex
from ._optimized_bitmap import OptimizedBitmapIndex
from ._state_file import body_counts, checked_path, read_state, state_error, write_state
from ._typevars import Count, Flag, S, Text
from ._words import Tokens

__all__ = ["ALGORITHMS", "DEFAULT_CACHE_BYTES", "DEFAULT_CACHE_SIZE", "Matcher", "MatcherSnapshot"]

if TYPE_CHECKING:
    from ._captures import Capture  # Matcher.captures
    from ._engine.dfa import BatchWalk

_INDEXES: Final[dict[str, type[Index]]] = {
    "naive": NaiveIndex,
    "inverted_bitmap": InvertedBitmapIndex,
    "optimized_bitmap": OptimizedBitmapIndex,
    "trie": TrieIndex,
    "cstrie": CSTrieIndex,
}

#: Entries of the result cache of the default algorithm: room for the tens of thousands of topics
#: that repeat on the workload matrix's Zipf and unmatched rows (7.8x and 7.1x the rate without
#: the cache, against 1.3x and 1.2x at 16,384: benchmarks/cache_size.py; CHANGELOG.md,
#: "Performance history").
DEFAULT_CACHE_SIZE: Final = 65536
#: Bytes the default may keep of what it learns from lookups (``cache_bytes``): a third each for
#: the result cache, the memo of unions and the DFA of batch walks (32 MiB each: at 16 MiB the
#: memo kept too few of the unions under churn to pay, CHANGELOG.md, "Performance history";
#: at 32, the workload matrix's churn row, *default ÷ no cache*, docs/performance.md).
DEFAULT_CACHE_BYTES: Final = 96 * 1024 * 1024

ALGORITHMS: Final = (*_INDEXES, "default")


class _Reader(Generic[S]):
    """Lookup and whole-state views shared by the live matcher and its snapshots."""

    _index: Index
    _dialect: Dialect
    _parse_topic: Callable[[Text], list[str] | None]
    _cache: ResultCache | None

    @property
    def dialect(self) -> str:
        """The dialect's name: ``"amqp"``, ``"mqtt"`` or ``"nats"``."""
        return self._dialect.name

    def lookup(self, topic: Text) -> frozenset[S]:
        """The subscribers of every pattern that matches ``topic``.

        O(words x wildcard branches alive) for the walk, plus the result's union; a topic the
        result cache holds (the default's): one dict access. Raises
        :class:`~topicmatch.InvalidTopicError` for a topic the dialect rejects, and, on the
        inverted bitmap, :class:`~topicmatch.UnknownTopicError` for a topic outside its space.

        >>> m = Matcher()
        >>> m.subscribe("forex.*", "alice")
        True
        >>> sorted(m.lookup("forex.eur")), sorted(m.lookup("forex"))
        (['alice'], [])
        """
        # The one lookup path of every algorithm (docs/implementation.md draws it): the result
        # cache's two generations, if there is a cache and it holds anything; else, or on a
        # miss, the index's walk, which the cache's admission is told of.
        cache = self._cache
        if cache is not None:
            quiet = cache.quiet
            if quiet:  # never below 0: a reader stores what it read less 1, only when above 0
                # Nothing cached and admission waiting (ResultCache.quiet): the miss is counted,
                # and the walk is all there is to do.
                cache.quiet = quiet - 1
                cache = None
            else:
                # Each generation is probed only when it holds something.
                hot = cache.hot
                try:
                    if hot:
                        result = hot.get(topic)
                        if result is not None:
                            return result  # type: ignore[return-value]
                    version = cache._version  # read before the index: see ResultCache.admit
                    warm = cache.warm
                    if warm:
                        result = warm.get(topic)
                        if result is not None:
                            cache.promote(topic, version)
                            return result  # type: ignore[return-value]
                except TypeError:  # unhashable, so no topic: the parse below raises the typed error
                    cache = None
        words = self._parse_topic(topic)
        if words is None:
            result = EMPTY
        else:
            try:
                result = self._index.match(words)
            except UnknownTopicError:
                raise UnknownTopicError(topic) from None
        if cache is not None:
            admission = cache.admission
            if admission.on:
                cache.admit(topic, words, result, version)
            left = admission.left - 1  # one miss: a trial of admission, or of its wait
            admission.left = left
            if left <= 0:
                cache.expire()
        return result  # type: ignore[return-value]

    def lookup_many(self, topics: Iterable[Text]) -> list[frozenset[S]]:
        """``[lookup(t) for t in topics]``, faster: each distinct topic is matched once, and on
        the default, a run of topics its cache holds is read by one C loop. Raises what
        :meth:`lookup` raises, at the first bad topic."""
        topics = self._dialect.topic_list(topics)
        lookup = self.lookup
        cache = self._cache
        out: list[frozenset[S]] = []
        if cache is not None:
            for start in range(0, len(topics), _CHUNK):
                chunk = topics[start : start + _CHUNK]
                try:
                    found = list(map(cache.hot.__getitem__, chunk))  # raises at the first miss
                except (KeyError, TypeError):  # a topic it does not hold (or no topic at all)
                    found = [lookup(topic) for topic in chunk]
                out += found  # type: ignore[arg-type]
            return out
        seen: dict[Text, frozenset[S]] = {}
        get = seen.get
        for topic in topics:
            try:
                result = get(topic)
            except TypeError:  # unhashable: lookup raises the dialect's typed error
                result = lookup(topic)
            if result is None:
                result = seen[topic] = lookup(topic)
            out.append(result)
        return out

    # -- interest: less than the whole result -------------------------------------------------
    def has_interest(self, topic: Text) -> bool:
        """Whether any subscription matches ``topic`` (NATS's ``HasInterest``): the walk of
        :meth:`lookup` without the union of the sets it gathers (Index.match_parts), nor the
        result cache. O(words x wildcard branches alive). Raises what :meth:`lookup` raises.

        >>> m = Matcher(dialect="mqtt")
        >>> m.subscribe("sensors/#", "log")
        True
        >>> m.has_interest("sensors/k/temp"), m.has_interest("lights/k")
        (True, False)
        """
        return any(self._parts(topic))

    def iter_matches(self, topic: Text) -> Iterator[S]:
        """The subscribers of :meth:`lookup` (``topic``), each once, in no particular order, as
        the walk's sets give them: the first arrive before any union is made. O(the walk) before
        the first; then O(1) each, plus O(1) for each repeat of a subscriber that several sets
        hold (those seen are remembered). Raises what :meth:`lookup` raises, at once."""
        parts = self._parts(topic)
        if len(parts) == 1:
            return iter(cast("frozenset[S]", parts[0]))
        return _each_once(cast("list[frozenset[S]]", parts))

    def count(self, topic: Text) -> int:
        """The number of subscribers of ``topic``: ``len(lookup(topic))``, through the result
        cache; O(lookup). Raises what :meth:`lookup` raises."""
        return len(self.lookup(topic))

    def _parts(self, topic: Text) -> list[frozenset[Hashable]]:
        words = self._parse_topic(topic)
        if words is None:
            return []
        try:
            return self._index.match_parts(words)
        except UnknownTopicError:
            raise UnknownTopicError(topic) from None

    # -- whole-state views ---------------------------------------------------------------------
    def subscriptions(self) -> dict[str, frozenset[S]]:
        """A consistent copy of every subscription: ``{pattern: frozenset(subscribers)}``.

        O(subscriptions). On the trie and the default it walks an O(1) snapshot, so writers are
        not held up meanwhile, and afterwards each write copies the nodes it changes once, as
        after :meth:`Matcher.snapshot`. The cyclic collector is paused meanwhile, as in
        :meth:`Matcher.subscribe_many`: a container per subscription set off collections that
        each traversed the whole matcher (``benchmarks/collector_load.py``, *whole-state*:
        docs/performance.md, "What the cyclic collector walks")."""
        with collector_paused():
            return {pattern: cast("frozenset[S]", subs) for pattern, _tokens, subs in self._index.items()}

    def overlapping(self, pattern: Text) -> dict[str, frozenset[S]]:
        """The subscriptions that could receive a message together with ``pattern``: those whose
        pattern overlaps it (:meth:`Dialect.overlaps <topicmatch.Dialect.overlaps>`), as
        ``{pattern: frozenset(subscribers)}``. On the trie and the default a walk of the
        branches the pattern can reach (a pattern with literal words costs its branch, not the
        table); elsewhere a scan of every pattern. Raises
        :class:`~topicmatch.InvalidPatternError` for an invalid pattern."""
        dialect = self._dialect
        tokens = dialect.parse_pattern(plain(pattern))
        return {
            other: cast("frozenset[S]", subs)
            for other, subs in self._index.overlapping(tokens, dialect.topic_rules())
        }

    def covered(self, pattern: Text) -> dict[str, frozenset[S]]:
        """The subscriptions whose pattern ``pattern`` covers (every topic it matches, ``pattern``
        matches: :meth:`Dialect.covers <topicmatch.Dialect.covers>`), as ``{pattern:
        frozenset(subscribers)}``: what one upstream subscription to ``pattern`` would serve.
        Patterns that match no topic at all are left out. Among :meth:`overlapping`'s results
        (a pattern that ``pattern`` covers and that matches a topic overlaps it), so it costs
        that walk plus a check of each: O(len(pattern) x len(other) x their literals) per
        candidate, at most 50,000 steps each (only AMQP's ``#`` inside a pattern comes near
        it): a bridge that asks about clients' filters pays up to that per stored pattern the
        filter overlaps. Raises
        :class:`~topicmatch.InvalidPatternError`, and :class:`~topicmatch.ComplexityError` for
        a ``pattern`` that Dialect.covers cannot decide in bounded steps.

        >>> m = Matcher(dialect="mqtt")
        >>> for p in ("a/+/c", "a/#", "b/x"):
        ...     _ = m.subscribe(p, p)
        >>> sorted(m.covered("a/+/+")), sorted(m.covering("a/b/c"))
        (['a/+/c'], ['a/#', 'a/+/c'])
        """
        return self._covering(pattern, True)

    def covering(self, pattern: Text) -> dict[str, frozenset[S]]:
        """The subscriptions whose pattern covers ``pattern`` (their subscribers receive every
        message ``pattern`` would), as :meth:`covered` is the other way round, with its costs
        and errors (:class:`~topicmatch.ComplexityError` for a stored pattern that cannot be
        decided in bounded steps). A ``pattern`` that matches no topic gives ``{}``."""
        return self._covering(pattern, False)

    def _covering(self, pattern: Text, inner: bool) -> dict[str, frozenset[S]]:
        dialect = self._dialect
        tokens = dialect.parse_pattern(plain(pattern))
        rules = dialect.topic_rules()
        found: dict[str, frozenset[S]] = {}
        for other, subs in self._index.overlapping(tokens, rules):
            theirs = dialect.parse_pattern(other)
            if covers(tokens, theirs, rules) if inner else covers(theirs, tokens, rules):
                found[other] = cast("frozenset[S]", subs)
        return found

    def batch_walk(self) -> BatchWalk | None:
        """Walk many topics through a DFA of the default's current subscriptions (made on demand),
        for a batch engine that walks topics itself, word by word (the Spark workers walk a
        batch's distinct topics level by level in Arrow); None on the other algorithms or while
        a write is under way. The same object while the subscriptions do not change.

        Its interface (:class:`~topicmatch._engine.dfa.BatchWalk`): ``root``, the initial state;
        ``advance(states, words)``, the state after each (state, word) pair, learnt at once;
        ``subscribers(state)``, a topic's subscribers when its walk ends there. States are
        opaque. Exact only while nobody writes to this matcher: a caller that cannot rule
        writes out must use :meth:`lookup`, which checks. Topics must be split as
        :meth:`Dialect.parse_topic <topicmatch.Dialect.parse_topic>` splits them
        (:meth:`Dialect.plain_topics <topicmatch.Dialect.plain_topics>` picks out those that
        need no more than a split).
        """
        index = self._index  # only the trie behind the default offers a DFA
        dfa = index.stable_dfa() if isinstance(index, TrieIndex) else None
        return None if dfa is None else dfa.batch_walk()

    def patterns(self) -> list[str]:
        """The subscribed patterns, sorted (each appears once, whatever its subscriber count).
        O(subscriptions log subscriptions), the collector paused as in :meth:`subscriptions`."""
        with collector_paused():
            return sorted(pattern for pattern, _tokens, _subs in self._index.items())

    def __len__(self) -> int:
        """The number of (pattern, subscriber) pairs."""
        return len(self._index)


class MatcherSnapshot(_Reader[S]):
    """A read-only view of a matcher at one instant; later writes do not show in it.

    Offers ``lookup``, ``lookup_many``, ``has_interest``, ``iter_matches``, ``count``,
    ``subscriptions``, ``patterns``, ``overlapping``, ``covered``, ``covering``, ``batch_walk``
    and ``len``. A snapshot of the default has no result cache; it shares the
    matcher's memo of unions, whose entries are right for any state.
    """

    def __init__(self, index: Index, dialect: Dialect) -> None:
        self._index = index
        self._dialect = dialect
        self._parse_topic = dialect.topic_parser()
        self._cache = None

    def __repr__(self) -> str:
        return f"<MatcherSnapshot {self._index.name} {self.dialect} pairs={len(self)}>"


class Matcher(_Reader[S]):
    """Find the subscribers of published topics among wildcard subscriptions.

    ``algorithm`` is one of :data:`ALGORITHMS` (``"default"``: the trie with a result cache in
    front and a memo of unions behind, see docs/implementation.md); ``dialect`` one of
    ``"amqp"`` (default), ``"mqtt"``, ``"nats"``. ``pedantic`` (nats only) rejects published
    subjects the server rejects in pedantic mode. ``max_bytes`` and ``max_words`` override the
    dialect's limits on patterns and topics; ``max_hashes`` (amqp only) refuses patterns of
    more ``#`` words, as RabbitMQ 4.3.5 and later do with 2 (:func:`~topicmatch.make_dialect`).
    ``cache_size`` sets the result cache's entries (0
    turns it off; by default on only for ``"default"``, with :data:`DEFAULT_CACHE_SIZE`).
    ``cache_bytes`` bounds everything the default keeps of what it learns from lookups
    (:data:`DEFAULT_CACHE_BYTES`: a third each for the result cache, the memo of unions and the
    DFA of :meth:`batch_walk`; each stays within its share by a charge that
    errs high, traced by tests/test_bounds.py). ``topics`` is the topic space of
    ``"inverted_bitmap"`` (required there, refused elsewhere).

    All methods are thread-safe; lookups take no lock (see docs/implementation.md). They rely on
    CPython's GIL: on a free-threaded CPython running without it, the constructor raises
    :class:`~topicmatch.ConfigurationError` (start Python with ``-X gil=1``).

    >>> m = Matcher(algorithm="trie", dialect="mqtt")
    >>> m.subscribe("sensors/+/temp", 1), m.subscribe("sensors/#", 2)
    (True, True)
    >>> sorted(m.lookup("sensors/kitchen/temp"))
    [1, 2]
    """

    def __init__(
        self,
        algorithm: Text = "default",
        dialect: Text = "amqp",
        *,
        pedantic: Flag = False,
        max_bytes: Count | None = None,
        max_words: Count | None = None,
        max_hashes: Count | None = None,
        cache_size: Count | None = None,
        cache_bytes: Count | None = None,
        topics: Iterable[Text] | None = None,
    ) -> None:
        _require_gil()
        if algorithm not in ALGORITHMS:
            raise ConfigurationError(
                f"unknown algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}"
            )
        self._dialect = make_dialect(
            dialect, max_bytes=max_bytes, max_words=max_words, pedantic=pedantic, max_hashes=max_hashes
        )
        self._parse_topic = self._dialect.topic_parser()
        self.algorithm = algorithm
        dollar = self._dialect.dollar_rule
        # Checked on values typed as whatever a caller passed, so that the compiled build raises
        # these errors too (docs/compiled.md).
        size: object = cache_size
        if size is None:
            size = DEFAULT_CACHE_SIZE if algorithm == "default" else 0
        if not isinstance(size, int) or size < 0:
            raise ConfigurationError(f"cache_size must be an int >= 0, not {size!r}")
        budget: object = cache_bytes
        if budget is None:
            budget = DEFAULT_CACHE_BYTES
        elif algorithm != "default" and not size:
            raise ConfigurationError(
                f"cache_bytes= bounds what the default (or a result cache) keeps; {algorithm} keeps nothing"
            )
        if not isinstance(budget, int) or budget < 0:
            raise ConfigurationError(f"cache_bytes must be an int >= 0, not {budget!r}")
        if algorithm == "inverted_bitmap":
            if topics is None:
                raise ConfigurationError("inverted_bitmap needs its topic space: Matcher(..., topics=[...])")
            self._index: Index = InvertedBitmapIndex(dollar, self._parse_space(topics))
        elif topics is not None:
            raise ConfigurationError(f"topics= is the inverted_bitmap's topic space; {algorithm} takes none")
        elif algorithm == "default":
            # The trie, the fastest correct algorithm on every workload measured, with a memo of
            # its unions (and the result cache below): docs/implementation.md says why.
            self._index = TrieIndex(dollar, Unions(budget // 3), dfa_bytes=budget // 3)
        else:
            self._index = _INDEXES[algorithm](dollar)
        self._cache = None
        if size:
            self._cache = ResultCache(size, budget // 3, self._parse_topic, dollar)
        self._writes = threading.Lock()
        self._by_subscriber = BySubscriber()

    def __repr__(self) -> str:
        cache = f" cache={self._cache.max_size}" if self._cache is not None else ""
        return f"<Matcher {self.algorithm} {self.dialect}{cache} pairs={len(self)}>"

    @property
    def limits(self) -> Mapping[str, int]:
        """The limits in force: ``max_bytes`` and ``max_words`` of a pattern or topic."""
        return MappingProxyType({"max_bytes": self._dialect.max_bytes, "max_words": self._dialect.max_words})

    # -- writes --------------------------------------------------------------------------
    # Writers serialise on self._writes, so that the index and the subscriber index change
    # together; readers never take it.

    def subscribe(self, pattern: Text, subscriber: S) -> bool:
        """Subscribe ``subscriber`` to ``pattern``; True if the pair is new (idempotent).

        O(words) on the trie and the default, whatever the pattern or its trie node already holds
        (plus dropping the cached results the pattern matches: at most 16 steps per word, else
        the result cache is emptied). Raises :class:`~topicmatch.InvalidPatternError` for a
        pattern the dialect rejects and :class:`~topicmatch.InvalidSubscriberError` for an
        unhashable subscriber; nothing changes.
        """
        pattern = plain(pattern)
        tokens = self._dialect.parse_pattern(pattern)
        _check_subscriber(subscriber)
        with self._writes:
            try:
                if self._cache is None:
                    return self._index.add(pattern, tokens, subscriber)
                return self._cache.write((tokens,), self._index.add, pattern, tokens, subscriber)
            finally:  # also if a subscriber's __eq__ raised: the record may hold more, never less
                self._by_subscriber.add(subscriber, pattern)

    def subscribe_many(self, pairs: Iterable[tuple[str, S]]) -> int:
        """Subscribe every (pattern, subscriber) pair; the number of pairs that were new.

        The same result as :meth:`subscribe` on each pair, faster for many: each pattern's
        subscribers are added in one change: O(pairs) on the trie behind ``"default"`` and
        ``"trie"``, also when all the pairs end on one trie node (the other algorithms add them
        one by one). CPython's cyclic collector is paused during the call (it would traverse the
        growing structure again and again: 2x at 1M subscriptions, ``benchmarks/broker_api.py``).
        Every pair is checked first: an invalid pattern or an unhashable subscriber raises
        (:class:`~topicmatch.InvalidPatternError` with the pair's position,
        :class:`~topicmatch.InvalidSubscriberError`; :class:`~topicmatch.InvalidPairError`
        for something that is not a pair) and nothing changes. On the trie and the default,
        lookups running meanwhile see each pattern's new subscribers appear together, pattern
        after pattern (on the other algorithms, pair after pair).
        """
        with collector_paused():
            items = self._grouped(pairs, "subscribe_many")
            with self._writes:
                try:
                    return self._commit_all(items, self._index.add_many)
                finally:  # as in subscribe
                    by_subscriber = self._by_subscriber
                    for pattern, _tokens, subscribers in items:
                        for subscriber in subscribers:
                            by_subscriber.add(subscriber, pattern)

    def unsubscribe(self, pattern: Text, subscriber: S) -> bool:
        """Remove the pair; True if it existed. An unknown pair changes nothing and is no error.

        An invalid pattern still raises :class:`~topicmatch.InvalidPatternError`: it cannot have
        been subscribed, and silence would hide a typo.
        """
        pattern = plain(pattern)
        tokens = self._dialect.parse_pattern(pattern)
        _check_subscriber(subscriber)
        with self._writes:
            if self._cache is None:
                removed = self._index.remove(pattern, tokens, subscriber)
            else:
                removed = self._cache.write((tokens,), self._index.remove, pattern, tokens, subscriber)
            self._by_subscriber.discard(subscriber, pattern)  # after the index: see _remove
        return removed

    def unsubscribe_many(self, pairs: Iterable[tuple[str, S]]) -> int:
        """Remove every (pattern, subscriber) pair; the number that existed.

        The same result as :meth:`unsubscribe` on each pair, checked first as
        :meth:`subscribe_many` checks them (a bad pair raises and nothing changes). O(pairs x
        words). On the trie and the default, lookups running meanwhile see each pattern's
        subscribers go together, pattern after pattern (elsewhere, pair after pair). The
        collector is paused during the call, as in :meth:`subscribe_many` and for the reason
        :meth:`subscriptions` gives.
        """
        with collector_paused():
            items = self._grouped(pairs, "unsubscribe_many")
            with self._writes:
                return self._remove(items)

    def unsubscribe_all(self, subscriber: S) -> int:
        """Remove every subscription of ``subscriber`` (a client that disconnects); how many.

        O(that subscriber's subscriptions x words), whatever the matcher holds: the matcher keeps
        each subscriber's patterns (:meth:`patterns_of`). Lookups running meanwhile see the
        subscriber leave its patterns one after another. An unhashable subscriber raises
        :class:`~topicmatch.InvalidSubscriberError`.

        >>> m = Matcher(dialect="mqtt")
        >>> m.subscribe_many([("a/+", "c1"), ("a/b", "c1"), ("a/#", "c2")])
        3
        >>> m.unsubscribe_all("c1"), sorted(m.lookup("a/b"))
        (2, ['c2'])
        """
        _check_subscriber(subscriber)
        # Each pattern is parsed again, O(words): what keeping its tokens in the subscriber index
        # would save, for about 100 bytes per subscription kept for every subscriber.
        parse = self._dialect.parse_pattern
        with self._writes:
            patterns = self._by_subscriber.of(subscriber)
            return self._remove([(pattern, parse(pattern), frozenset((subscriber,))) for pattern in patterns])

    def patterns_of(self, subscriber: S) -> list[str]:
        """The patterns ``subscriber`` is subscribed to, sorted. O(their number)."""
        _check_subscriber(subscriber)
        with self._writes:
            return self._by_subscriber.of(subscriber)

    def _remove(self, items: list[Item]) -> int:
        """Remove the pairs of ``items`` (one per pattern) from the index and then from the
        subscriber index (not if the index raised: the record may hold more, never less);
        self._writes held. The number of pairs that existed."""
        removed = self._commit_all(items, self._index.remove_many)
        by_subscriber = self._by_subscriber
        for pattern, _tokens, subscribers in items:
            for subscriber in subscribers:
                by_subscriber.discard(subscriber, pattern)
        return removed

    def _commit_all(self, items: list[Item], change: Callable[[Iterable[Item]], int]) -> int:
        """``change(items)`` (the index's add_many or remove_many), all the items in one change
        through the result cache, which forgets the topics each pattern matches first.
        self._writes held."""
        cache = self._cache
        if cache is None:
            return change(items)
        return cache.write([item[1] for item in items], change, items)

    def _grouped(self, pairs: Iterable[tuple[str, S]], method: str) -> list[Item]:
        """Check every pair of a bulk call and group the subscribers by pattern; raises the typed
        error of the first bad pair, before anything changes."""
        if isinstance(pairs, (str, bytes, Mapping)):
            raise InvalidPairError(
                f"{method} takes an iterable of (pattern, subscriber) pairs, not a {type(pairs).__name__}"
                + (" (pass mapping.items())" if isinstance(pairs, Mapping) else "")
            )
        try:
            iterator: Iterator[Any] = iter(pairs)  # each element checked below
        except TypeError:
            raise InvalidPairError(
                f"{method} takes an iterable of (pattern, subscriber) pairs, not a {type(pairs).__name__}"
            ) from None
        groups: dict[str, tuple[Tokens, set[Hashable]]] = {}
        parse = self._dialect.parse_pattern
        for position, pair in enumerate(iterator):
            # A tuple or list of two, or another sequence of two that is not text: a set or a
            # dict of two would unpack too, in an order of its own.
            if (type(pair) is tuple or type(pair) is list or _is_pair_like(pair)) and len(pair) == 2:
                pattern, subscriber = pair
            else:
                shown = shortened(repr(pair))
                raise InvalidPairError(
                    f"pair {position} of {method} is not a (pattern, subscriber) pair: {shown}; "
                    "nothing was changed"
                )
            pattern = plain(pattern)
            group = groups.get(pattern) if type(pattern) is str else None
            if group is None:
                try:
                    tokens = parse(pattern)
                except InvalidPatternError as error:
                    error.add_note(f"pair {position} of {method}; nothing was changed")
                    raise
                group = groups[pattern] = (tokens, set())
            _check_subscriber(subscriber)
            group[1].add(subscriber)
        return [(pattern, tokens, frozenset(subs)) for pattern, (tokens, subs) in groups.items()]

    def extend_topic_space(self, topics: Iterable[Text]) -> int:
        """inverted_bitmap only: add topics to the topic space; returns how many were new."""
        if not isinstance(self._index, InvertedBitmapIndex):
            raise ConfigurationError(f"{self.algorithm} has no topic space to extend")
        return self._index.extend(self._parse_space(topics))

    def _parse_space(self, topics: Iterable[Text]) -> list[tuple[Text, list[str]]]:
        given: object = topics  # checked here, compiled or not
        if isinstance(given, str) or not isinstance(given, Iterable):
            raise ConfigurationError(f"topics= takes an iterable of topics, not a {type(given).__name__}")
        space = []
        for topic in topics:
            words = self._dialect.parse_topic(topic)
            if words is not None:  # a NATS subject with an empty token matches nothing anyway
                space.append((plain(topic), words))
        return space

    # -- reads ---------------------------------------------------------------------------
    def snapshot(self) -> MatcherSnapshot[S]:
        """A read-only view of this instant: O(1) on ``default``, ``trie`` and ``cstrie`` (the
        trie's next writes copy the nodes they change, once each), a copy O(n) elsewhere, the
        collector paused meanwhile as in :meth:`subscriptions` (naive, 200k subscriptions,
        pure: 1.18 s with it running, 0.26 s paused)."""
        with collector_paused():
            return MatcherSnapshot(self._index.snapshot(), self._dialect)

    # -- saving and loading (topicmatch._state_file: the format) ---------------------------------
    def save(self, path: str | os.PathLike[str]) -> int:
        """Write every subscription to the file ``path`` (replaced atomically: a crash mid-write
        leaves the old file whole), for :meth:`load`; the pairs written.

        The format is versioned JSON with a SHA-256 checksum (:mod:`topicmatch._state_file`), not
        pickle: subscribers must be JSON's scalars, ``str``, ``int``, ``float``, ``bool`` or
        ``None`` (exactly those types), else :class:`~topicmatch.StateFileError` names the first
        other one and nothing is written (and for a ``path`` that is not a str or an
        ``os.PathLike`` of one). O(subscriptions), from an O(1) snapshot on the trie
        and the default (writers are not held up meanwhile); the other algorithms' pairs are
        laid out in a trie first. The collector is paused meanwhile, as in :meth:`subscriptions`.
        """
        name = checked_path(path, "save to")
        with collector_paused():
            index = self._index
            if not isinstance(index, TrieIndex):
                trie = TrieIndex(self._dialect.dollar_rule)
                trie.add_many(index.items())
                index = trie
            body = index.records()
            patterns, pairs = body_counts(body)
            dialect = self._dialect
            header = {
                "dialect": dialect.name,
                "max_bytes": dialect.max_bytes,
                "max_words": dialect.max_words,
                "pedantic": dialect.pedantic,
                "max_hashes": dialect.max_hashes,
                "patterns": patterns,
                "pairs": pairs,
            }
            write_state(name, header, body)
        return pairs

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        algorithm: Text = "default",
        *,
        cache_size: Count | None = None,
        cache_bytes: Count | None = None,
    ) -> Matcher[Any]:
        """A matcher of ``algorithm`` holding the subscriptions :meth:`save` wrote to ``path``,
        with the dialect and limits they were saved with (``cache_size`` and ``cache_bytes`` as
        in :class:`Matcher`).

        A file that is not one :meth:`save` wrote, is of another format version, or was
        truncated or changed since raises :class:`~topicmatch.StateFileError` (one line: the
        file and why) before anything is built. On the trie and the default each trie node is
        made once where it belongs, without parsing a pattern or walking from the root:
        O(nodes + pairs); at 1,000,000 subscriptions 1.6x faster than :meth:`subscribe_many`
        of the same pairs, as making the nodes, sets and subscriber index that both build is
        most of either (docs/performance.md, "Saving and loading"). The patterns are not
        validated again: the checksum vouches that they are the ones a matcher of this dialect
        accepted. Other algorithms parse each pattern and add it as :meth:`subscribe_many`
        does. The collector is paused meanwhile, as in :meth:`subscribe_many`.

        >>> import os, tempfile
        >>> m = Matcher(dialect="mqtt")
        >>> m.subscribe_many([("a/+", "c1"), ("a/#", "c2")])
        2
        >>> path = os.path.join(tempfile.mkdtemp(), "subscriptions")
        >>> m.save(path)
        2
        >>> back = Matcher.load(path)
        >>> back.dialect, sorted(back.lookup("a/b")), back.patterns_of("c2")
        ('mqtt', ['c1', 'c2'], ['a/#'])
        """
        name = checked_path(path, "load")
        if algorithm not in ALGORITHMS or algorithm == "inverted_bitmap":
            raise ConfigurationError(
                f"load builds one of {', '.join(a for a in ALGORITHMS if a != 'inverted_bitmap')}, "
                f"not {algorithm!r}"
            )
        with collector_paused():  # the body's JSON makes a container per node, the trie more
            return cls._loaded(name, algorithm, cache_size, cache_bytes)

    @classmethod
    def _loaded(
        cls,
        path: str,
        algorithm: Text,
        cache_size: Count | None,
        cache_bytes: Count | None,
    ) -> Matcher[Any]:
        header, body = read_state(path)
        try:
            dialect = make_dialect(
                header["dialect"],
                max_bytes=header["max_bytes"],
                max_words=header["max_words"],
                pedantic=header["pedantic"],
                max_hashes=header["max_hashes"],
            )
        except ConfigurationError as error:
            raise state_error(path, f"its dialect: {error}") from None
        matcher: Matcher[Any] = cls(
            algorithm,
            dialect.name,
            pedantic=dialect.pedantic,
            max_bytes=dialect.max_bytes,
            max_words=dialect.max_words,
            max_hashes=dialect.max_hashes,
            cache_size=cache_size,
            cache_bytes=cache_bytes,
        )
        index = matcher._index
        trie = index if isinstance(index, TrieIndex) else TrieIndex(dialect.dollar_rule)
        try:
            added = trie.restore(body)
        except (ValueError, TypeError) as error:  # TypeError: an unhashable subscriber
            raise state_error(path, f"its body: {error}") from None
        if len(added) != header["patterns"] or len(trie) != header["pairs"]:
            raise state_error(
                path,
                f"it holds {len(added):,} patterns and {len(trie):,} pairs, its header says "
                f"{header['patterns']:,} and {header['pairs']:,}",
            )
        if trie is not index:
            parse = dialect.parse_pattern
            try:
                items = [(pattern, parse(pattern), subs) for pattern, subs in added]
            except InvalidPatternError as error:  # a file written otherwise than by save
                raise state_error(path, f"its body: {error}") from None
            index.add_many(items)
        by_subscriber = matcher._by_subscriber
        for pattern, subs in added:
            by_subscriber.add_each(subs, pattern)
        return matcher

    # -- captures: a separate block, the one addition of topicmatch._captures to this module ------
    def captures(self, topic: Text) -> list[Capture[S]]:
        """Each pattern that ``topic`` matches, with what each of its wildcards bound and its
        subscribers, sorted by pattern: for routers that dispatch to handlers
        (:mod:`topicmatch._captures` defines the values: a word for ``*``/``+``, a tuple of
        words for ``#``/``>``, in the pattern's order).

        The same verdicts as :meth:`lookup` (it runs it), taken under the writers' lock so that
        a write cannot fall between the lookup and the patterns of its subscribers. O(the lookup
        + the patterns of the subscribers found x tokens x words). Raises what :meth:`lookup`
        raises.

        >>> m = Matcher(dialect="mqtt")
        >>> m.subscribe("sensors/+/temp", "thermo"), m.subscribe("sensors/#", "log")
        (True, True)
        >>> for c in m.captures("sensors/kitchen/temp"):
        ...     print(c.pattern, c.values, sorted(c.subscribers))
        sensors/# (('kitchen', 'temp'),) ['log']
        sensors/+/temp ('kitchen',) ['thermo']
        """
        from ._captures import captures_of  # noqa: PLC0415 - keeps this block separable

        with self._writes:
            found: list[Capture[S]] = captures_of(
                self._dialect, topic, self.lookup(topic), self._by_subscriber.of
            )
            return found

    @property
    def cache_info(self) -> Mapping[str, int]:
        """``size`` and ``max_size`` of the result cache (both 0 without one), and ``bytes``
        charged to it (see docs/implementation.md, "The result cache: three sightings, two
        generations")."""
        cache = self._cache
        if cache is None:
            return MappingProxyType({"size": 0, "max_size": 0, "bytes": 0})
        return MappingProxyType({"size": len(cache), "max_size": cache.max_size, "bytes": cache.bytes})


def _each_once(parts: list[frozenset[S]]) -> Iterator[S]:
    """The members of ``parts``, each once (Matcher.iter_matches)."""
    seen: set[S] = set()
    for part in parts:
        for subscriber in part:
            if subscriber not in seen:
                seen.add(subscriber)
                yield subscriber


def _is_pair_like(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray))


def _check_subscriber(subscriber: object) -> None:
    try:
        hash(subscriber)
    except TypeError:
        raise InvalidSubscriberError(
            f"a subscriber must be hashable; got an unhashable {type(subscriber).__name__}"
        ) from None


def _require_gil() -> None:
    """Refuse to run lock-free readers without the GIL they rely on (docs/implementation.md,
    "Concurrency: what every algorithm guarantees"): a free-threaded CPython that runs without it
    (``sys._is_gil_enabled()`` false) gets :class:`~topicmatch.ConfigurationError`, not wrong answers."""
    gil_enabled = getattr(sys, "_is_gil_enabled", None)  # CPython 3.13 and later
    if gil_enabled is not None and not gil_enabled():
        raise ConfigurationError(
            "topicmatch's lock-free lookups rely on the GIL, and this free-threaded CPython runs "
            "without it; start Python with -X gil=1 (or PYTHON_GIL=1)"
        )


#: Topics per C loop of the default's ``lookup_many``: a miss costs at most this many wasted
#: dict accesses.
_CHUNK: Final = 256
