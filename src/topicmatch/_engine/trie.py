"""The subscription trie: one node per word, wildcard branches, one lock for writers.

The nodes and the lookup walks live in :mod:`.walk`; this module holds the writers and the
concurrency around them.

Concurrency: the discipline of :mod:`._versions`. Writers serialise on the lock; each
pattern's change is one store (a fully built branch is linked last; a node's subscriber set is a
frozenset replaced whole) with the version odd around it, and readers keep a result only if the
version was even and did not move, so a lookup that raced with a write retries and every result
is the state at one instant. The optional DFA (:mod:`.dfa`, used by the default matcher) caches
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
from typing import Final

from .._algebra import TopicRules, overlapping_in_trie
from .._errors import TopicMatchError, shortened
from .._index import Index, Item
from .._versions import yield_to_writer
from .._words import HASH, STAR, Token, Tokens
from .dfa import DFA
from .walk import SMALL, Node, Union, Unions, union_of, walk_general, walk_leaves

__all__ = ["TrieIndex"]

#: What match_parts's union answers: a set no walk returns otherwise.
_KEPT: Final = frozenset([object()])
#: One change of a pattern's subscribers (TrieIndex._add or _remove): the pairs changed.
_Change = Callable[[str, Tokens, frozenset[Hashable]], int]


class TrieIndex(Index):
    """Trie with lock-free, version-validated lookups and a global writer lock.

    ``memo``: a memo of the walks' unions (:class:`~.walk.Unions`, the default's; snapshots
    share it, as its entries are right for any state of the trie). ``dfa_bytes``: the trie
    offers a DFA of its current version for batch walks (:meth:`stable_dfa`, the default's),
    bounded at that many bytes; None for none.

    Complexity: subscribe and unsubscribe O(words + subscribers added or removed); lookup
    O(words x nodes alive per word), which is O(words) for literal-heavy subscriptions;
    snapshot O(1). The first write after a snapshot through a node copies it: O(its children and
    pairs), once per node and snapshot.
    """

    name = "trie"

    def __init__(self, dollar_rule: bool, memo: Unions | None = None, dfa_bytes: int | None = None) -> None:
        super().__init__(dollar_rule)
        self._gen = object()  # nodes of this generation are this trie's to change in place
        self._root = Node(gen=self._gen)
        self._readonly = False  # a snapshot
        self._memo = memo
        # The function the walks unite with, bound once: the memo's, or the plain union.
        self._union: Union = union_of if memo is None else memo.of
        # '#' nodes followed by a word (AMQP's 'a.#.b'); while there are none, lookups take the
        # faster walk of a trie whose '#' nodes are leaves (walk_leaves). Raised before such a
        # node is linked and lowered after it is unlinked, so a reader never takes the leaf walk
        # through one: the general walk is right for every trie.
        self._inner_hash = 0
        self._dfa_bytes = dfa_bytes
        self._dfa: DFA | None = None  # made by stable_dfa for the version it describes
        self._count = 0
        #: Pairs above which a node is *big* (its union made by readers, :class:`~.walk.Node`);
        #: set before the first write (tests make every node big with 1).
        self.small = SMALL

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
                self._dfa = None  # it describes a version that has ended: its bytes go now
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
            nxt = node.star if token is STAR else node.hash if token is HASH else node.children.get(token)
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
            added = node.add(pattern, subscribers, self.small)
        else:
            head = tail = Node(tokens[i] is HASH, gen)
            for token in tokens[i + 1 :]:
                new = Node(token is HASH, gen)
                tail.link(token, new)
                tail = new
            added = tail.add(pattern, subscribers, self.small)
            self._version += 1  # odd before the publishing store (and _inner_hash, read by lookups)
            # Raised before the link: a lookup must never take the leaf walk through the new
            # branch's inner '#' (see __init__).
            self._inner_hash += tokens[i:-1].count(HASH) + (node.is_hash and not node.children)
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
            nxt = node.star if token is STAR else node.hash if token is HASH else node.children.get(token)
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
        removed = node.remove(pattern, subscribers, self.small)
        self._count -= removed
        # Prune branches left empty; this changes no lookup result, only memory. _inner_hash is
        # lowered after the unlink, so a lookup never takes the leaf walk through an inner '#'.
        for depth in range(len(tokens), 0, -1):
            node = path[depth]
            if not node.is_empty():
                break
            parent = path[depth - 1]
            parent.link(tokens[depth - 1], None)
            if parent.is_hash and not parent.children:
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
            child = node.star if token is STAR else node.hash if token is HASH else node.children[token]
            assert child is not None, "the caller walked this path"
            if child.gen is not gen:
                child = child.copy_for(gen)
                node.link(token, child)
            path.append(child)
            node = child
        return path

    # -- readers -------------------------------------------------------------------------
    def match(self, words: list[str]) -> frozenset[Hashable]:
        while True:
            version = self._version
            if not version & 1:
                if self._inner_hash:
                    result = walk_general(self._root, words, self.dollar_rule, self._union)
                else:
                    result = walk_leaves(self._root, words, self.dollar_rule, self._union)
                # Even and unchanged: no change was published during the walk, so the result
                # is the state of one instant (._versions, rule 3).
                if self._version == version:
                    return result
            yield_to_writer(0)

    def match_parts(self, words: list[str]) -> list[frozenset[Hashable]]:
        """The subscriber sets the walk gathers (Index.match_parts): the walk of :meth:`match`,
        retried as it is, with a union that keeps them instead and answers :data:`_KEPT`. A
        walk that found nothing may end without its union: then the walk that counted is not
        the one whose sets were kept, and there are none. (Its own loop: :meth:`match` calling
        one shared with it cost 4 % more instructions per lookup of a topic nobody subscribed
        to, pure build, callgrind.)"""
        parts: list[frozenset[Hashable]] = []

        def keep(found: list[frozenset[Hashable]]) -> frozenset[Hashable]:
            parts[:] = found  # the last walk's: the one that counts, if it called keep
            return _KEPT

        while True:
            version = self._version
            if not version & 1:
                if self._inner_hash:
                    result = walk_general(self._root, words, self.dollar_rule, keep)
                else:
                    result = walk_leaves(self._root, words, self.dollar_rule, keep)
                if self._version == version:
                    return parts if result is _KEPT else []
            yield_to_writer(0)

    def stable_dfa(self) -> DFA | None:
        """The DFA of the current version, for a caller that walks many topics itself
        (:meth:`~topicmatch.Matcher.batch_walk`); None when the trie offers none or a write is
        under way. The same object while the trie does not change; a write drops it. It stays
        exact only while nobody writes: a caller that cannot rule out writers must use
        :meth:`match`, which validates the version."""
        version = self._version
        if self._dfa_bytes is None or version & 1:
            return None
        dfa = self._dfa
        if dfa is None or dfa.version != version:
            dfa = DFA(self._root, self.dollar_rule, version, self._dfa_bytes)
            self._dfa = dfa
        return dfa

    # -- saving and restoring (Matcher.save, Matcher.load) ----------------------------------
    def records(self) -> list[object]:
        """The trie as one flat list, for a file (:mod:`topicmatch._state_file`): the root's
        patterns, then for each node below it, depth first, three values: its depth (1 for the
        root's children), its token (the word; 0 for the one-word wildcard, 1 for ``#``) and its
        patterns (``[pattern, [subscriber, ...], ...]``, or 0 for none). Of an O(1) snapshot, so
        a consistent state; O(nodes + pairs)."""
        root = self._frozen_root()
        out: list[object] = [_patterns_record(root)]
        stack: list[tuple[Node, int, object]] = [(child, 1, token) for token, child in _children(root)]
        while stack:
            node, depth, token = stack.pop()
            out += (depth, token, _patterns_record(node))
            stack += [(child, depth + 1, word) for word, child in _children(node)]
        return out

    def restore(self, records: list[object]) -> list[tuple[str, frozenset[Hashable]]]:
        """Fill this empty trie from a list :meth:`records` made; the (pattern, subscribers) it
        added. Each node is made once where it belongs, with no walk from the root and no parse:
        O(nodes + pairs). Raises :class:`ValueError` naming the first record that is not well
        formed (a depth that skips a level, a token twice under one node, a pattern or a
        subscriber twice), and :class:`TypeError` for an unhashable subscriber; the trie is
        then left empty.

        A new trie that no reader holds yet (:meth:`Matcher.load`): the nodes are linked as
        they are made, and the root published once at the end.
        """
        if self._count or self._readonly:
            raise TopicMatchError("restore fills an empty, writable trie")
        gen = self._gen
        root = Node(gen=gen)
        added: list[tuple[str, frozenset[Hashable]]] = []
        count = _fill(root, records[0], added, self.small)
        stack = [root]
        inner_hash = 0
        for i in range(1, len(records) - 2, 3):
            depth, word, patterns = records[i], records[i + 1], records[i + 2]
            if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= len(stack):
                raise ValueError(f"record {i // 3}: depth {depth!r} after depth {len(stack) - 1}")
            del stack[depth:]
            parent = stack[-1]
            if type(word) is str:
                token: Token = word
                taken = word in parent.children
            elif _is_int(word) and word == 0:
                token, taken = STAR, parent.star is not None
            elif _is_int(word) and word == 1:
                token, taken = HASH, parent.hash is not None
            else:
                raise ValueError(f"record {i // 3}: token {shortened(repr(word))} is neither a word, 0 nor 1")
            if taken:
                raise ValueError(f"record {i // 3}: token {shortened(repr(word))} twice under one node")
            node = Node(token is HASH, gen)
            if parent.is_hash and not parent.children:
                inner_hash += 1  # as _add counts it: a '#' node's first child of a kind
            parent.link(token, node)
            count += _fill(node, patterns, added, self.small)
            stack.append(node)
        if len(records) % 3 != 1:
            raise ValueError(f"{len(records)} values: not the root's patterns and records of three")
        with self._lock:
            self._version += 1
            self._root, self._count, self._inner_hash = root, count, inner_hash
            self._dfa = None
            self._version += 1
        return added

    # -- whole-state views ---------------------------------------------------------------------
    def snapshot(self) -> TrieIndex:
        """A read-only trie of this instant, in O(1): it takes the root, and this trie starts a
        new generation, so its writers copy what they change from then on (module docstring)."""
        with self._lock:
            frozen = TrieIndex(self.dollar_rule, self._memo, self._dfa_bytes)
            frozen._root, frozen._count, frozen._inner_hash = self._root, self._count, self._inner_hash
            frozen.small = self.small
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
            for word, child in node.children.items():
                stack.append((child, (*prefix, word)))
            if node.star is not None:
                stack.append((node.star, (*prefix, STAR)))
            if node.hash is not None:
                stack.append((node.hash, (*prefix, HASH)))
        return out

    def __len__(self) -> int:
        return self._count


def _is_int(value: object) -> bool:
    """An int and not a bool (JSON's ``true``), in both builds: compiled, ``type(x) is int``
    holds for a bool too (restore's depth is checked the same way, inline)."""
    return isinstance(value, int) and not isinstance(value, bool)


def _children(node: Node) -> list[tuple[object, Node]]:
    """A node's children with their tokens as a file writes them (0: ``*``/``+``, 1: ``#``)."""
    out: list[tuple[object, Node]] = list(node.children.items())
    if node.star is not None:
        out.append((0, node.star))
    if node.hash is not None:
        out.append((1, node.hash))
    return out


def _patterns_record(node: Node) -> object:
    """A node's patterns as a file writes them: ``[pattern, [subscriber, ...], ...]``, or 0."""
    if not node.by_pattern:
        return 0
    out: list[object] = []
    for pattern, subs in node.by_pattern.items():
        out += (pattern, list(subs))
    return out


def _fill(node: Node, record: object, added: list[tuple[str, frozenset[Hashable]]], small: int) -> int:
    """Give ``node`` the patterns of its file record (:func:`_patterns_record`); the pairs."""
    if _is_int(record) and record == 0:
        return 0
    if type(record) is not list or not record or len(record) % 2:
        raise ValueError(
            f"patterns {shortened(repr(record))} are neither 0 nor [pattern, [subscriber, ...], ...]"
        )
    count = 0
    for j in range(0, len(record), 2):
        pattern, subs = record[j], record[j + 1]
        if type(pattern) is not str or type(subs) is not list or not subs:
            raise ValueError(f"pattern {shortened(repr(pattern))}: not a pattern and its subscribers")
        if pattern in node.by_pattern:
            raise ValueError(f"pattern {shortened(pattern)!r} twice")
        subscribers = frozenset(subs)
        if len(subscribers) != len(subs):
            raise ValueError(f"pattern {shortened(pattern)!r}: a subscriber twice")
        count += node.add(pattern, subscribers, small)
        added.append((pattern, subscribers))
    return count
