"""The subscription trie: one node per word, wildcard branches, one lock for writers.

Layout: a node holds a dict of literal children, one ``star`` child (the ``*``/``+`` branch) and
one ``hash`` child (the ``#`` branch), plus the subscribers of the patterns that end there.
Wildcards live in their own slots rather than under a key in the dict, so a published word that
happens to be spelled ``*`` can never walk into a wildcard branch, and the lookup loop needs no
string comparisons to find them.

Lookup is a breadth-first walk that keeps the *set of nodes* still alive after each word (the
states of the equivalent NFA). A ``#`` node stays alive after absorbing a word and also lets its
children continue, which handles "zero or more words" without backtracking: each word costs at
most one step per node of the trie, so any pattern, however many ``#`` it has, matches in
O(words x nodes) — never exponentially. While the trie holds no ``#`` node at all, no node can be
reached twice, so the walk uses plain lists and skips de-duplication (the common, faster case).

Concurrency: writers serialise on one lock. Readers take no lock: every write publishes with a
single store (a fully built branch is linked last; a node's subscriber set is a frozenset
replaced whole), and readers validate a version counter, so a lookup that raced with a write
retries and every result is the state at one instant. The version is odd while a writer works
(a sequence lock's convention): the trie walk does not need it, but the optional DFA
(:mod:`._dfa`, used by the default matcher) caches what it derived from the trie, so it is used
only when no write is under way, and every write replaces it.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable

from ._dfa import DFA
from ._index import EMPTY, Index, Item
from ._words import HASH, STAR, Token, Tokens

__all__ = ["TrieIndex"]


class _Node:
    __slots__ = ("by_pattern", "children", "hash", "is_hash", "star", "subs")

    def __init__(self, is_hash: bool = False) -> None:
        self.children: dict[str, _Node] = {}
        self.star: _Node | None = None
        self.hash: _Node | None = None
        self.is_hash = is_hash
        # Readers look only at ``subs`` (the union over patterns ending here, replaced whole on
        # every change); ``by_pattern`` is the writers' own record, guarded by the lock.
        self.subs: frozenset[Hashable] = EMPTY
        self.by_pattern: dict[str, frozenset[Hashable]] = {}

    def child(self, token: Token) -> _Node | None:
        if token is STAR:
            return self.star
        if token is HASH:
            return self.hash
        return self.children.get(token)  # type: ignore[arg-type]

    def link(self, token: Token, node: _Node | None) -> None:
        if token is STAR:
            self.star = node
        elif token is HASH:
            self.hash = node
        elif node is None:
            del self.children[token]  # type: ignore[arg-type]
        else:
            self.children[token] = node  # type: ignore[index]

    def is_empty(self) -> bool:
        return not self.by_pattern and not self.children and self.star is None and self.hash is None


def step(alive: Iterable[_Node], word: str, dollar_root: _Node | None = None) -> dict[_Node, None]:
    """One word of the NFA walk: the nodes alive after ``word``, given those alive before it.

    A dict is an ordered set: a node reached twice is kept once, which is what keeps ``#``
    polynomial. A ``#`` node stays alive (it absorbs the word too), and reaching a node also
    reaches its ``#`` child (zero words). ``dollar_root`` is MQTT's ``$`` rule for the first
    word: only the literal branch of that root is taken, no leading wildcard.
    """
    out: dict[_Node, None] = {}
    if dollar_root is not None:
        child = dollar_root.children.get(word)
        if child is not None:
            out[child] = None
            if child.hash is not None:
                out[child.hash] = None
        return out
    for node in alive:
        if node.is_hash:
            out[node] = None
        child = node.children.get(word)
        if child is not None:
            out[child] = None
            if child.hash is not None:
                out[child.hash] = None
        child = node.star
        if child is not None:
            out[child] = None
            if child.hash is not None:
                out[child.hash] = None
    return out


def _union(by_pattern: dict[str, frozenset[Hashable]]) -> frozenset[Hashable]:
    if len(by_pattern) == 1:
        return next(iter(by_pattern.values()))
    return frozenset().union(*by_pattern.values())


class TrieIndex(Index):
    """Trie with lock-free, version-validated lookups and a global writer lock.

    Complexity: subscribe and unsubscribe O(words + subscribers of that pattern); lookup
    O(words x nodes alive per word), which is O(words) for literal-heavy subscriptions.
    """

    name = "trie"

    def __init__(self, dollar_rule: bool, dfa: bool = False) -> None:
        super().__init__(dollar_rule)
        self._root = _Node()
        self._lock = threading.Lock()
        self._version = 0  # odd while a writer changes the trie
        self._use_dfa = dfa
        self._dfa: DFA | None = DFA(self._root, dollar_rule, step) if dfa else None
        self._hash_nodes = 0
        self._count = 0

    # -- writers -------------------------------------------------------------------------
    def add(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        with self._lock:
            added = self._add(pattern, tokens, frozenset((subscriber,)))
            if added:
                self._changed()
            return bool(added)

    def add_many(self, items: Iterable[Item]) -> int:
        """Each pattern's subscribers in one change: O(pairs) in all.

        Adding k subscribers to one pattern one by one costs O(k^2), as every add replaces the
        pattern's frozenset with a copy one larger; here each pattern's set is replaced once.
        The DFA is dropped for the whole call and built once at the end (empty: it learns from
        lookups). Concurrent readers see each pattern's new subscribers appear together, one
        pattern after another: while the call runs the version stays odd (so no DFA is used)
        and moves on with every pattern, so a lookup that overlapped a change retries.
        """
        added = 0
        with self._lock:
            dfa = self._dfa
            self._version += 1  # odd until the end
            self._dfa = None
            try:
                for pattern, tokens, subscribers in items:
                    new = self._add(pattern, tokens, frozenset(subscribers))
                    if new:
                        self._version += 2  # still odd, but moved: overlapping lookups retry
                        added += new
            finally:
                if added:
                    self._changed()
                else:  # nothing changed: the DFA is still exact, and keeps what it learnt
                    self._dfa = dfa
                    self._version += 1
        return added

    def _add(self, pattern: str, tokens: Tokens, subscribers: frozenset[Hashable]) -> int:
        """Add ``subscribers`` to ``pattern``, the lock held; how many were new.

        A change makes the version odd first (unless the caller has), and the caller ends it
        with :meth:`_changed`. The readers see it as one store: a new branch is built off to
        the side and linked last; an existing node gets a new frozenset.
        """
        node = self._root
        i, n = 0, len(tokens)
        while i < n:
            token = tokens[i]
            # node.child(token), inlined: writes walk every level of the pattern.
            nxt = node.star if token is STAR else node.hash if token is HASH else node.children.get(token)  # type: ignore[arg-type]
            if nxt is None:
                break
            node = nxt
            i += 1
        old = node.by_pattern.get(pattern, EMPTY) if i == n else EMPTY
        added = len(subscribers - old) if old else len(subscribers)
        if not added:
            return 0
        self._version |= 1  # odd: a change is under way
        if i < n:
            head = tail = _Node(tokens[i] is HASH)
            for token in tokens[i + 1 :]:
                new = _Node(token is HASH)
                tail.link(token, new)
                tail = new
            tail.by_pattern[pattern] = tail.subs = subscribers
            self._hash_nodes += tokens[i:].count(HASH)
            node.link(tokens[i], head)
        else:
            node.by_pattern[pattern] = old | subscribers if old else subscribers
            node.subs = _union(node.by_pattern)
        self._count += added
        return added

    def remove(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        with self._lock:
            node = self._root
            path: list[_Node] = [node]
            for token in tokens:
                nxt = node.star if token is STAR else node.hash if token is HASH else node.children.get(token)  # type: ignore[arg-type]
                if nxt is None:
                    return False
                path.append(nxt)
                node = nxt
            old = node.by_pattern.get(pattern)
            if old is None or subscriber not in old:
                return False
            self._version += 1  # odd: a change is under way
            left = old - {subscriber}
            if left:
                node.by_pattern[pattern] = left
            else:
                del node.by_pattern[pattern]
            node.subs = _union(node.by_pattern) if node.by_pattern else EMPTY
            self._count -= 1
            # Prune branches left empty; this changes no lookup result, only memory.
            for depth in range(len(tokens), 0, -1):
                node = path[depth]
                if not node.is_empty():
                    break
                path[depth - 1].link(tokens[depth - 1], None)
                if node.is_hash:
                    self._hash_nodes -= 1
            self._changed()
            return True

    def _changed(self) -> None:
        """End a change: discard the DFA derived from the old trie, then make the version even."""
        if self._use_dfa:
            self._dfa = DFA(self._root, self.dollar_rule, step)
        self._version += 1

    # -- readers -------------------------------------------------------------------------
    def stable_dfa(self) -> DFA | None:
        """The DFA of the current version, for a caller that walks it directly; None when there
        is none or a write is under way. It stays exact only while nobody writes: a caller that
        cannot rule out writers must use :meth:`match`, which validates the version."""
        dfa = self._dfa
        return dfa if dfa is not None and not self._version & 1 else None

    def match(self, words: list[str]) -> frozenset[Hashable]:
        while True:
            version = self._version
            dfa = self._dfa
            if dfa is not None and not version & 1:
                # No write under way: the DFA of this version is exact. A write that starts
                # before we finish changes the version, and we retry.
                result = dfa.match(words)
            elif self._hash_nodes or (self.dollar_rule and words and words[0][:1] == "$"):
                result = self._match_general(words)
            else:
                result = self._match_plain(words)
            if self._version == version:
                return result

    def _match_plain(self, words: list[str]) -> frozenset[Hashable]:
        # No '#' anywhere: a frontier never holds the same node twice. Hot path: locals only;
        # binding ``nxt.append`` to a local measured slower than calling it on these short lists.
        nodes = [self._root]
        for word in words:
            nxt: list[_Node] = []
            for node in nodes:
                child = node.children.get(word)
                if child is not None:
                    nxt.append(child)
                child = node.star
                if child is not None:
                    nxt.append(child)
            if not nxt:
                return EMPTY
            nodes = nxt
        result = EMPTY
        for node in nodes:
            subs = node.subs
            if subs:
                # Most lookups match one node: return its frozenset itself, allocate nothing.
                result = subs if not result else result | subs
        return result

    def _match_general(self, words: list[str]) -> frozenset[Hashable]:
        root = self._root
        dollar = self.dollar_rule and bool(words) and words[0][:1] == "$"
        alive: dict[_Node, None] = {root: None}
        if root.hash is not None and not dollar:
            alive[root.hash] = None
        for word in words:
            alive = step(alive, word, root if dollar else None)
            if not alive:
                return EMPTY
            dollar = False  # the rule concerns the first level only
        result = EMPTY
        for node in alive:
            subs = node.subs
            if subs:
                result = subs if not result else result | subs
        return result

    # -- whole-state views ---------------------------------------------------------------------
    def items(self) -> list[Item]:
        with self._lock:
            out: list[Item] = []
            stack: list[tuple[_Node, Tokens]] = [(self._root, ())]
            while stack:
                node, prefix = stack.pop()
                for pattern, subs in node.by_pattern.items():
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

    def _empty_like(self) -> Index:
        return TrieIndex(self.dollar_rule, dfa=self._use_dfa)
