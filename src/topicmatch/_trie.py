"""The subscription trie: one node per word, wildcard branches, one lock for writers.

The nodes and the lookup walks live in :mod:`._walk`; this module holds the writers and the
concurrency around them.

Concurrency: the discipline of :mod:`._versions`. Writers serialise on the lock; each
pattern's change is one store (a fully built branch is linked last; a node's subscriber set is a
frozenset replaced whole) with the version odd around it, and readers keep a result only if the
version was even and did not move, so a lookup that raced with a write retries and every result
is the state at one instant. The optional DFA (:mod:`._dfa`, used by the default matcher) caches
what it derived from one version of the trie, so it is used only at that version, and every
write replaces it.

Snapshots are O(1), by copy-on-write: every node carries the *generation* of the trie that may
change it in place. ``snapshot`` hands the current root to a read-only trie and starts a new
generation, so from then on every node reachable from that root belongs to the snapshot, and a
writer copies (:meth:`Node.copy_for`) each node of an older generation on its path before changing
it, linking the copy into its (already copied) parent. Each node is copied at most once per
snapshot; a copy has the same content as its original, so readers may meet either.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass

from ._algebra import TopicRules, overlapping_in_trie
from ._dfa import DFA, LEARN_AFTER, MAX_BYTES, PROBATION
from ._errors import TopicMatchError
from ._index import EMPTY, Index, Item
from ._versions import yield_to_writer
from ._walk import Node, Union, Unions, finish_leaves, subs_of, union_of, walk_general, walk_leaves
from ._words import HASH, STAR, Tokens

__all__ = ["QUIET_LOOKUPS", "DFASettings", "TrieIndex"]

#: One change of a pattern's subscribers (TrieIndex._add or _remove): the pairs changed.
_Change = Callable[[str, Tokens, frozenset[Hashable]], int]

#: Lookups one version of the trie must last before it gets a DFA (see TrieIndex._settle), and
#: the longest wait after DFAs were retired.
QUIET_LOOKUPS = 64
MAX_QUIET = 1 << 20
#: The countdown when nothing is due (a DFA serves, no alarm): below 2**30, so that counting
#: it down stays CPython's one-digit int arithmetic.
IDLE = (1 << 30) - 1


@dataclass(frozen=True, slots=True)
class DFASettings:
    """When a trie with a DFA (the default's) builds one, and how the DFA learns: one immutable
    object per trie, which its snapshots share. The defaults are the measured choices
    (docs/performance.md, "The default engine"); ``benchmarks/default_engine.py`` compares others.
    """

    quiet_lookups: int = QUIET_LOOKUPS  # lookups a version of the trie lasts before it gets a DFA
    learn_after: int = LEARN_AFTER  # a transition is learnt the time it is taken this often
    probation: int = PROBATION  # lookups that teach a new DFA, and as many that judge it
    max_bytes: int = MAX_BYTES  # what the DFA may grow to (Matcher's ``dfa_bytes``)


class TrieIndex(Index):
    """Trie with lock-free, version-validated lookups and a global writer lock.

    Complexity: subscribe and unsubscribe O(words + subscribers added or removed); lookup
    O(words x nodes alive per word), which is O(words) for literal-heavy subscriptions;
    snapshot O(1). The first write after a snapshot through a node copies it: O(its children and
    pairs), once per node and snapshot.
    """

    name = "trie"

    def __init__(self, dollar_rule: bool, dfa: bool = False, union_bytes: int | None = None) -> None:
        super().__init__(dollar_rule)
        self._gen = object()  # nodes of this generation are this trie's to change in place
        self._root = Node(gen=self._gen)
        self._readonly = False  # a snapshot
        self._use_dfa = dfa
        # The memo of the walks' unions (the default's, bounded at union_bytes; _walk.Unions):
        # snapshots share it, as its entries are right for any state of the trie. ``_union`` is
        # the function a walk unites with, its bound method made once here so that a lookup
        # does not make one.
        self._unions = None if union_bytes is None else Unions(union_bytes)
        self._union: Union = union_of if self._unions is None else self._unions.of
        if self._unions is not None:
            self._unions.step_out = self._memo_out
        # '#' nodes followed by a word (AMQP's 'a.#.b'); while there are none, lookups take the
        # faster walk of a trie whose '#' nodes are leaves (walk_leaves). Raised before such a
        # node is linked and lowered after it is unlinked, so a reader never takes the leaf walk
        # through one: the general walk is right for every trie.
        self._inner_hash = 0
        self._dfa: DFA | None = None  # made by readers once a version has lasted (_settle)
        # The one count of lookups behind the default's self-judging parts (_settle): the
        # reader's lookups (walked or served by the DFA) and match's walks, as ``_walked`` (up
        # to the last time the countdown was set) plus ``_armed - _countdown`` (since then).
        # The countdown runs out when something is due: the DFA (at ``_dfa_at``) or an alarm
        # (``after``: the result cache's and the union memo's return).
        self._countdown = 0  # lookups before _settle looks again
        self._armed = 0  # what _countdown was last set to
        self._walked = 0
        self._quiet_version = -1  # the version whose quiet wait _dfa_at ends
        self._dfa_at = 0  # the count at which the version gets its DFA
        self._backoff = 0  # lookups added to the wait for a DFA while DFAs get retired
        self._alarms: dict[Callable[[], None], int] = {}  # callback -> the count it is due at
        # The lookup a redirecting reader hands topics to (see reader), or None.
        self.front: Callable[[str], frozenset[Hashable]] | None = None
        self.dfa_settings = DFASettings()
        self._count = 0

    # -- writers -------------------------------------------------------------------------
    def add(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        return bool(self._change(self._add, ((pattern, tokens, frozenset((subscriber,))),)))

    def add_many(self, items: Iterable[Item]) -> int:
        """Each pattern's subscribers in one change: O(pairs) in all.

        Adding k subscribers to one pattern one by one costs O(k^2), as every add replaces the
        pattern's frozenset with a copy one larger; here each pattern's set is replaced once.
        Concurrent readers see each pattern's new subscribers appear together, one pattern after
        another (:meth:`_change`).
        """
        return self._change(self._add, items)

    def remove_many(self, items: Iterable[Item]) -> int:
        """Each pattern's subscribers removed in one change, as :meth:`add_many` adds them."""
        return self._change(self._remove, items)

    def _change(self, change: _Change, items: Iterable[Item]) -> int:
        """Apply ``change`` (:meth:`_add` or :meth:`_remove`) to each item under the writers' lock;
        the number of pairs changed.

        Concurrent readers see each item's change at once: ``change`` brackets its one
        publishing store with the version (odd before, even after), so a lookup that overlapped
        it retries, and lookups between two items see the state after the first. The lock is
        held for the whole call; its ``finally`` makes the version even if ``change`` raises (a
        subscriber's ``__eq__`` may).
        """
        if self._readonly:
            raise TopicMatchError("a snapshot is read-only")
        changed = 0
        with self._lock:
            try:
                for pattern, tokens, subscribers in items:
                    changed += change(pattern, tokens, subscribers)
            finally:
                if self._version & 1:  # a change raised between its two moves
                    self._version += 1
                self._settle_soon()  # the next counted lookup sees the new version
        return changed

    def _add(self, pattern: str, tokens: Tokens, subscribers: frozenset[Hashable]) -> int:
        """Add ``subscribers`` to ``pattern``, the lock held; how many were new.

        The readers see it as one store, with the version odd around it (:mod:`._versions`): a
        new branch is built off to the side (no bracket needed: no reader reaches it) and
        linked last; an existing node publishes its new subscribers (:meth:`Node.add`).
        """
        node = self._root
        i, n = 0, len(tokens)
        while i < n:
            token = tokens[i]
            # node.child(token), inlined: writes walk every level of the pattern.
            nxt = node.star if token is STAR else node.hash if token is HASH else node.get(token)
            if nxt is None:
                break
            node = nxt
            i += 1
        gen = self._gen
        if node.gen is not gen:
            # A snapshot holds it: change copies (also when the write turns out to add nothing;
            # the copies are then made one write early).
            node = self._own(tokens, i)[-1]
        if i == n:
            old = node.by_pattern.get(pattern)
            if old is not None and subscribers.issubset(old):
                return 0
            self._version += 1  # odd before the publishing store
            added = node.add(pattern, subscribers)
        else:
            head = tail = Node(tokens[i] is HASH, gen)
            for token in tokens[i + 1 :]:
                new = Node(token is HASH, gen)
                tail.link(token, new)
                tail = new
            added = tail.add(pattern, subscribers)
            self._version += 1  # odd before the publishing store (and _inner_hash, read by lookups)
            # Raised before the link: a lookup must never take the leaf walk through the new
            # branch's inner '#' (see __init__).
            self._inner_hash += tokens[i:-1].count(HASH) + (node.is_hash and not len(node))
            node.link(tokens[i], head)
        self._version += 1  # even after it
        self._count += added
        return added

    def remove(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        return bool(self._change(self._remove, ((pattern, tokens, frozenset((subscriber,))),)))

    def _remove(self, pattern: str, tokens: Tokens, subscribers: frozenset[Hashable]) -> int:
        """Remove ``subscribers`` from ``pattern``, the lock held; how many were there. Brackets
        its store with the version, as :meth:`_add`, and prunes the branches left empty."""
        node = self._root
        path: list[Node] = [node]
        for token in tokens:
            nxt = node.star if token is STAR else node.hash if token is HASH else node.get(token)
            if nxt is None:
                return 0
            path.append(nxt)
            node = nxt
        old = node.by_pattern.get(pattern)
        if old is None or old.isdisjoint(subscribers):
            return 0
        if node.gen is not self._gen:
            path = self._own(tokens, len(tokens))
            node = path[-1]
        self._version += 1  # odd before the publishing store
        removed = node.remove(pattern, subscribers)
        self._count -= removed
        # Prune branches left empty; this changes no lookup result, only memory. _inner_hash is
        # lowered after the unlink, so a lookup never takes the leaf walk through an inner '#'.
        for depth in range(len(tokens), 0, -1):
            node = path[depth]
            if not node.is_empty():
                break
            parent = path[depth - 1]
            parent.link(tokens[depth - 1], None)
            if parent.is_hash and not len(parent):
                self._inner_hash -= 1
        self._version += 1  # even after the last store
        return removed

    def _own(self, tokens: Tokens, depth: int) -> list[Node]:
        """Make the root and the nodes of ``tokens[:depth]`` below it nodes this generation may
        change (a node a snapshot holds is replaced by its copy, top down); that path.

        Needed only when the last node is of an older generation: a node of this generation was
        made by a write of this generation, which had made every node above it this
        generation's first (and a snapshot makes every node older at once).
        """
        gen = self._gen
        node = self._root
        if node.gen is not gen:
            node = self._root = node.copy_for(gen)
        path = [node]
        for token in tokens[:depth]:
            child = node.star if token is STAR else node.hash if token is HASH else node[token]
            assert child is not None, "the caller walked this path"
            if child.gen is not gen:
                child = child.copy_for(gen)
                node.link(token, child)
            path.append(child)
            node = child
        return path

    # -- readers -------------------------------------------------------------------------
    def stable_dfa(self) -> DFA | None:
        """The DFA of the current version, for a caller that walks it directly; None when the
        trie has none or a write is under way. It stays exact only while nobody writes: a caller
        that cannot rule out writers must use :meth:`match`, which validates the version."""
        version = self._version
        if not self._use_dfa or version & 1:
            return None
        dfa = self._dfa
        if dfa is None or dfa.version != version:
            dfa = self._dfa = self._new_dfa(version)
            self._settle_soon()  # the next lookup re-arms the countdown for a serving DFA
        return dfa

    def match(self, words: list[str]) -> frozenset[Hashable]:
        while True:
            version = self._version
            dfa = self._dfa
            if dfa is not None and dfa.version == version and not dfa.retired:
                # The DFA learnt from this version, always an even one, and no write has begun
                # since (a write makes the version odd first): it is exact. A write that starts
                # before we finish moves the version, and we retry.
                result = dfa.lookup(words)
                if self._version == version:
                    return result
            else:
                if self._inner_hash:
                    result = walk_general(self._root, words, self.dollar_rule, self._union)
                else:
                    result = walk_leaves(self._root, words, self.dollar_rule, self._union)
                if self._use_dfa and not version & 1:
                    # A counter in the common case, the bookkeeping of _settle when it runs out
                    # (where the DFA is retired, topics seen once, every lookup walks, and a call
                    # per lookup was part of the default's gap to the plain trie there), or at
                    # once when there is a DFA that cannot serve: retired, or its version ended.
                    self._countdown -= 1
                    if self._countdown < 0 or dfa is not None:
                        self._settle(version, dfa)
                # Even and unchanged: no change was published during the walk, so the result
                # is the state of one instant (._versions, rule 3).
                if self._version == version and not version & 1:
                    return result
            yield_to_writer(0)

    def reader(
        self, parse: Callable[[str], list[str] | None], redirect: bool = False
    ) -> Callable[[str], frozenset[Hashable]]:
        """``lookup(topic)``: ``parse`` then :meth:`match`, the common case in one Python frame.

        The common cases: a DFA of the current version serves the lookup (:meth:`match`'s DFA
        branch, inlined); or there is no DFA (the plain trie; the default's once its DFA has
        retired itself, as on topics that do not repeat) and the ``#`` nodes are leaves: the
        lookup reads the version, walks from the root (:func:`walk_leaves` inlined, but for
        MQTT's ``$`` rule), counts down to what is due next (:meth:`match` does the same) and
        reads the version again. Anything else (a stale or retired DFA, an inner ``#``, a ``$``
        topic, a write under way) goes to :meth:`match`. Two frames fewer than the facade's
        ``lookup`` calling ``match`` calling ``walk_leaves`` (what that saves:
        docs/performance.md, "One frame, one count"). ``_union`` is read per
        lookup: a benchmark may swap it.

        ``redirect``: the lookup first hands the topic to ``front`` when it is set (the result
        cache, while in the lookup path: :func:`._cache.cached_lookups`), so that a caller who
        kept this function keeps the cache too.
        """
        match = self.match
        dollar_rule = self.dollar_rule
        index = self

        def lookup(topic: str) -> frozenset[Hashable]:
            if redirect:
                front = index.front
                if front is not None:
                    return front(topic)
            words = parse(topic)
            if words is None:
                return EMPTY
            version = index._version
            dfa = index._dfa
            if dfa is not None:
                # match's DFA branch, inlined: where the DFA serves, one frame as well. Counted,
                # so that the alarms of after() come due while a DFA serves too.
                if dfa.version == version and not dfa.retired:
                    result = dfa.lookup(words)
                    index._countdown -= 1
                    if index._countdown < 0:
                        index._settle(version, dfa)
                    if index._version == version:
                        return result
            elif not index._inner_hash and not version & 1:
                root = index._root
                if root.star is None and root.hash is None:
                    result = finish_leaves([root], [], words, index._union)
                elif dollar_rule and words and words[0][:1] == "$":
                    return match(words)
                else:
                    found = [] if root.hash is None else [subs_of(root.hash)]
                    result = finish_leaves([root], found, words, index._union)
                if index._use_dfa:
                    index._countdown -= 1
                    if index._countdown < 0:
                        index._settle(version, None)
                if index._version == version:
                    return result
            return match(words)

        return lookup

    def after(self, lookups: int, callback: Callable[[], None]) -> bool:
        """Call ``callback`` once, from a lookup's thread, after ``lookups`` more lookups of the
        trie's reader (walked or served by the DFA; :meth:`match` counts its walks only). False,
        and nothing registered, when the trie counts nothing: it has no DFA to schedule (a plain
        trie).

        The result cache uses it to step out of the lookup path while it is switched off (no
        call of its own per lookup: :func:`._cache.cached_lookups`), the memo of unions to leave
        the walks (no call of its own per union: :meth:`_memo_out`); both come back when their
        wait is over. The alarms map callback -> due: registering is one store and firing pops
        first, so a callback is never lost and never fires twice for one registration, without
        a lock on the read path.
        """
        if not self._use_dfa:
            return False
        self._alarms[callback] = self._walked + self._armed - self._countdown + lookups
        self._settle_soon()
        return True

    def _memo_out(self, lookups: int) -> None:
        """The memo of unions switched itself off for ``lookups`` unions: the walks unite without
        it (not even a call of the memo's) until the trie's count of lookups brings it back, or,
        where the trie counts nothing, through the memo, which counts its wait."""
        unions = self._unions
        assert unions is not None, "only a trie with a memo is told"
        self._union = union_of
        if not self.after(lookups, self._memo_in):
            self._union = unions.of

    def _memo_in(self) -> None:
        """The memo's wait is over: the walks unite through it again, and it judges anew."""
        unions = self._unions
        assert unions is not None, "only a trie with a memo is told"
        unions.off = 0
        self._union = unions.of

    def _settle_soon(self) -> None:
        """Fold the lookups counted since the countdown was last set into ``_walked``, and make
        the next counted lookup run :meth:`_settle` (after a write, a new DFA or a new alarm)."""
        self._walked += self._armed - self._countdown
        self._countdown = self._armed = -1

    def _settle(self, version: int, dfa: DFA | None) -> None:
        """What is due once the countdown of lookups has run out, or a lookup found a DFA that
        cannot serve (``dfa``: retired, or its version ended): the version's DFA, and the
        alarms of :meth:`after`.

        A DFA pays for itself only over many lookups of one version of the trie (it learns a
        transition the :data:`~._dfa.LEARN_AFTER`-th time it is taken), and every write ends
        a version. So after a write, lookups walk the trie until the version has lasted
        ``dfa_settings.quiet_lookups`` of them: under a steady stream of writes (subscription
        churn) no DFA is built at all. After a DFA was retired by its probation (topics that do
        not repeat), the next one waits four times as long as the last, up to :data:`MAX_QUIET`
        more lookups (the traffic may have changed); a DFA that passes resets the wait. The
        counts are heuristics; a race that loses a decrement only delays what is due.
        """
        walked = self._walked = self._walked + self._armed - self._countdown  # this lookup included
        quiet = self.dfa_settings.quiet_lookups
        if self._quiet_version != version:
            if dfa is not None and not dfa.retired and dfa.lookups >= 2 * dfa.probation:
                self._backoff = 0  # the last version's DFA passed its probation
            self._quiet_version = version
            self._dfa_at = walked + quiet + self._backoff
        if dfa is not None and dfa is self._dfa:
            if dfa.version != version:
                # Its version has ended: it will never be used again. Dropped now, so that its
                # bytes go, and lookups take the reader's one-frame walk (:meth:`reader`) until
                # this version gets its own DFA.
                self._dfa = None
            elif dfa.retired:
                # Retired by its probation: dropped at once, so that its bytes go now rather
                # than when the next DFA is made (up to a million lookups later). A race that
                # applies the wait twice only delays the next DFA.
                self._dfa = None
                self._backoff = min(4 * max(self._backoff, dfa.lookups), MAX_QUIET)
                self._dfa_at = walked + quiet + self._backoff
        if self._dfa is None and walked >= self._dfa_at:
            self._dfa = self._new_dfa(version)
        alarms = self._alarms
        for callback, at in list(alarms.items()):
            if at <= walked and alarms.pop(callback, None) is not None:  # popped first: once
                callback()
        # Armed for the next thing due; nothing due (a DFA serves, no alarm): IDLE, which runs
        # out only after a billion lookups, and then only re-arms.
        nexts = list(alarms.values())
        if self._dfa is None:
            nexts.append(self._dfa_at)
        self._countdown = self._armed = min(nexts) - walked - 1 if nexts else IDLE

    def _new_dfa(self, version: int) -> DFA:
        settings = self.dfa_settings
        dfa = DFA(self._root, self.dollar_rule, not self._inner_hash, version, settings.max_bytes)
        dfa.learn_after, dfa.probation = settings.learn_after, settings.probation
        return dfa

    # -- whole-state views ---------------------------------------------------------------------
    def snapshot(self) -> TrieIndex:
        """A read-only trie of this instant, in O(1): it takes the root, and this trie starts a
        new generation, so its writers copy what they change from then on (module docstring)."""
        with self._lock:
            frozen = TrieIndex(self.dollar_rule, dfa=self._use_dfa)
            frozen._root, frozen._count, frozen._inner_hash = self._root, self._count, self._inner_hash
            frozen.dfa_settings = self.dfa_settings
            # The memo's own method, even while this trie unites without it (_memo_out): the
            # snapshot has no alarm to bring it back, and the memo counts its own wait.
            frozen._unions = self._unions
            frozen._union = union_of if self._unions is None else self._unions.of
            frozen._readonly = True
            self._gen = object()
        return frozen

    def _frozen_root(self) -> Node:
        """The root of a state no writer will change: this one's if a snapshot, else a new
        snapshot's (O(1))."""
        return self._root if self._readonly else self.snapshot()._root

    def overlapping(self, tokens: Tokens, rules: TopicRules) -> list[tuple[str, frozenset[Hashable]]]:
        """The patterns that overlap ``tokens``, by a walk of an O(1) snapshot's branches that the
        pattern can reach (:func:`._algebra.overlapping_in_trie`), not a scan."""
        return [
            item
            for node in overlapping_in_trie(self._frozen_root(), tokens, rules)
            for item in node.patterns()
        ]

    def items(self) -> list[Item]:
        """A consistent copy, walked outside the writers' lock: from an O(1) snapshot."""
        out: list[Item] = []
        stack: list[tuple[Node, Tokens]] = [(self._frozen_root(), ())]
        while stack:
            node, prefix = stack.pop()
            for pattern, subs in node.patterns():
                out.append((pattern, prefix, subs))
            for word, child in node.items():
                stack.append((child, (*prefix, word)))
            if node.star is not None:
                stack.append((node.star, (*prefix, STAR)))
            if node.hash is not None:
                stack.append((node.hash, (*prefix, HASH)))
        return out

    def __len__(self) -> int:
        return self._count
