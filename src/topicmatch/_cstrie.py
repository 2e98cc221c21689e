"""The concurrent subscription trie (CS-trie): a Ctrie of topic words.

Structure, after Prokopec et al.'s Ctrie as generalised to topic tries by matchbox:

* An **I-node** (indirection node) has one mutable field, ``main``, and a generation. I-nodes stay
  in place while the nodes above and below them change, so an update at one I-node can never
  orphan a concurrent update below it.
* A **C-node** is immutable once published: literal children (word -> I-node), the ``*`` and
  ``#`` children, and the subscribers of the patterns ending there. A writer copies the C-node,
  changes the copy, and publishes it with a compare-and-set (CAS) on the parent I-node; on
  failure it re-reads and retries.
* A **tomb** (T-node) marks an I-node whose C-node became empty on removal; once tombed, an I-node
  never changes again, so no insert can land in a branch being compacted. Any writer that meets a
  tomb first helps remove it from the parent (the "clean" step), then goes on.
* **Snapshots** are O(1): swap the root I-node for a new one of a new generation, pointing to the
  same C-node. The old root is then frozen forever and is the snapshot. Writers of the new
  generation copy ("renew") any older-generation I-node before writing below it.

The CAS. CPython offers no compare-and-set on an attribute, and the GIL does not make a read
followed by a store atomic (a thread switch may fall between them; free-threaded builds have no
GIL at all). The finest-grained primitive that is atomic everywhere is an uncontended
``threading.Lock``: we hold it for the compare and the store only — a few bytecodes, never during
the speculative copy and never on the read path. One lock for all I-nodes rather than one per
I-node, because the Ctrie's GCAS must also check that the root's generation is unchanged
atomically with the store (otherwise a write could slip into a snapshot taken meanwhile); with
the root swap under the same lock, GCAS and the snapshot's RDCSS become two short critical
sections of one lock, and no node pays ~40 bytes for a lock of its own.

Lookups read ``main`` fields and nothing else; they never take the lock. Because a wildcard
lookup reads several branches, each at its own moment, it also follows the discipline of
:mod:`._versions`: every CAS that changes subscribers brackets its store with the version (odd
before, even after, inside the CAS's critical section), and a lookup keeps its result only if
the version was even and did not move, so a lookup that returns saw one linearizable state. It
retries only because some write published meanwhile, so the system as a whole always progresses
(lock-freedom).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Final

from ._empty import EMPTY
from ._errors import TopicMatchError
from ._index import Index, Item
from ._versions import yield_to_writer
from ._words import HASH, STAR, Token, Tokens

__all__ = ["CSTrieIndex"]


class _Gen:
    """A generation: compared by identity only."""

    __slots__ = ()


class _INode:
    __slots__ = ("gen", "main")

    def __init__(self, main: _CNode, gen: _Gen) -> None:
        self.main = main
        self.gen = gen


class _CNode:
    """Immutable trie node; never modified after it is reachable from an I-node."""

    __slots__ = ("by_pattern", "children", "hash", "is_hash", "star", "subs")

    def __init__(
        self,
        children: dict[str, _INode],
        star: _INode | None,
        hash_: _INode | None,
        is_hash: bool,
        by_pattern: dict[str, frozenset[Hashable]],
    ) -> None:
        self.children = children
        self.star = star
        self.hash = hash_
        self.is_hash = is_hash
        self.by_pattern = by_pattern
        if not by_pattern:
            self.subs: frozenset[Hashable] = EMPTY
        elif len(by_pattern) == 1:
            self.subs = next(iter(by_pattern.values()))
        else:
            self.subs = frozenset().union(*by_pattern.values())

    def child(self, token: Token) -> _INode | None:
        if token is STAR:
            return self.star
        if token is HASH:
            return self.hash
        return self.children.get(token)

    def with_child(self, token: Token, inode: _INode | None) -> _CNode:
        children, star, hash_ = self.children, self.star, self.hash
        if token is STAR:
            star = inode
        elif token is HASH:
            hash_ = inode
        else:
            children = dict(children)
            if inode is None:
                del children[token]
            else:
                children[token] = inode
        return _CNode(children, star, hash_, self.is_hash, self.by_pattern)

    def with_patterns(self, by_pattern: dict[str, frozenset[Hashable]]) -> _CNode:
        return _CNode(self.children, self.star, self.hash, self.is_hash, by_pattern)

    def is_empty(self) -> bool:
        return not self.by_pattern and not self.children and self.star is None and self.hash is None


#: The tomb. An I-node whose main is TOMB is dead for good. Lookups need no special case: the tomb
#: has no children and no subscribers.
TOMB: Final = _CNode({}, None, None, False, {})

#: Returned by a write attempt that must start over from the root.
_RESTART: Final = object()


def _chain(tokens: Tokens, by_pattern: dict[str, frozenset[Hashable]], gen: _Gen) -> _INode:
    """A new branch for ``tokens``, built bottom-up, ending with the patterns of ``by_pattern``."""
    node = _CNode({}, None, None, tokens[-1] is HASH, by_pattern)
    for i in range(len(tokens) - 1, 0, -1):
        inode = _INode(node, gen)
        node = _CNode({}, None, None, tokens[i - 1] is HASH, {}).with_child(tokens[i], inode)
    return _INode(node, gen)


class CSTrieIndex(Index):
    """Concurrent subscription trie: lock-free linearizable lookups, CAS writers, O(1) snapshots.

    Complexity: lookup as the trie; subscribe and unsubscribe O(words x fan-out of the copied
    C-nodes + subscribers of that pattern), plus retries under write contention; snapshot O(1).
    """

    name = "cstrie"

    def __init__(
        self, dollar_rule: bool, _root: _INode | None = None, _counts: tuple[int, int] = (0, 0)
    ) -> None:
        super().__init__(dollar_rule)
        self._readonly = _root is not None
        self._root = _root if _root is not None else _INode(_CNode({}, None, None, False, {}), _Gen())
        self._count, self._hash_pairs = _counts

    # -- the CAS ---------------------------------------------------------------------------
    def _gcas(self, inode: _INode, old: _CNode, new: _CNode, gen: _Gen, delta: int, hashed: bool) -> bool:
        """Store ``new`` in ``inode`` if it still holds ``old`` and no snapshot intervened.

        The CAS's critical section is the writers' lock of :mod:`._versions`. A store that
        changes no lookup's result (``delta`` 0: an I-node renewed into this generation, a
        tomb compacted away) needs no bracket; one that changes subscribers has the version odd
        around it and around the counts that choose a lookup's walk (``_hash_pairs``).
        """
        with self._lock:
            if inode.main is not old or self._root.gen is not gen:
                return False
            if not delta:
                inode.main = new
                return True
            self._version += 1  # odd before the publishing store
            inode.main = new
            self._count += delta
            if hashed:
                self._hash_pairs += delta
            self._version += 1  # even after it
            return True

    # -- writers -------------------------------------------------------------------------
    def add(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        return bool(self._change(((pattern, tokens, frozenset((subscriber,))),), adding=True))

    def remove(self, pattern: str, tokens: Tokens, subscriber: Hashable) -> bool:
        return bool(self._change(((pattern, tokens, frozenset((subscriber,))),), adding=False))

    def add_many(self, items: Iterable[Item]) -> int:
        """The subscribers of every pattern that ends on one node in one C-node and one CAS:
        O(pairs) in all, also when thousands of patterns share a node (one by one, each copied
        the node's patterns and united its subscribers: O(k^2) for k patterns). Lookups running
        meanwhile see the patterns of a node appear together, node after node."""
        return self._change(items, adding=True)

    def remove_many(self, items: Iterable[Item]) -> int:
        """Each node's pairs removed in one C-node and one CAS, as :meth:`add_many` adds them."""
        return self._change(items, adding=False)

    def _change(self, items: Iterable[Item], adding: bool) -> int:
        """Apply ``items`` grouped by the node they end on; the number of pairs changed."""
        if self._readonly:
            raise TopicMatchError("a snapshot is read-only")
        groups: dict[Tokens, dict[str, frozenset[Hashable]]] = {}
        for pattern, tokens, subscribers in items:
            group = groups.setdefault(tokens, {})
            group[pattern] = group.get(pattern, EMPTY) | subscribers
        changed = 0
        for tokens, patterns in groups.items():
            while True:
                result = self._attempt(tokens, patterns, adding)
                if result is not _RESTART:
                    changed += result  # type: ignore[operator]
                    break
        return changed

    def _attempt(self, tokens: Tokens, patterns: dict[str, frozenset[Hashable]], adding: bool) -> object:
        """One try at changing the node of ``tokens``: its pairs changed (an int), or
        :data:`_RESTART` when a CAS failed or a tomb was in the way."""
        root = self._root
        gen = root.gen
        hashed = HASH in tokens
        path: list[_INode] = [root]
        inode = root
        i, n = 0, len(tokens)
        while True:
            main = inode.main
            if main is TOMB:
                # Tombed under us: help compact it out of its parent, then start over.
                self._clean(path[-2], tokens[i - 1], inode, gen)
                return _RESTART
            if i == n:
                break
            token = tokens[i]
            child = main.child(token)
            if child is None:
                if not adding:
                    return 0
                pairs = sum(map(len, patterns.values()))
                new = main.with_child(token, _chain(tokens[i:], dict(patterns), gen))
                return pairs if self._gcas(inode, main, new, gen, pairs, hashed) else _RESTART
            if child.main is TOMB:
                if not self._clean(inode, token, child, gen):
                    return _RESTART
                continue  # re-read this I-node: the tomb is gone
            if child.gen is not gen:
                # Older generation, shared with a snapshot: copy it into ours before writing below.
                renewed = main.with_child(token, _INode(child.main, gen))
                if not self._gcas(inode, main, renewed, gen, 0, False):
                    return _RESTART
                continue
            inode = child
            path.append(inode)
            i += 1
        by_pattern = main.by_pattern
        new_patterns: dict[str, frozenset[Hashable]] | None = None
        delta = 0
        for pattern, subscribers in patterns.items():
            old = by_pattern.get(pattern, EMPTY)
            changed = subscribers - old if adding else subscribers & old
            if not changed:
                continue
            if new_patterns is None:
                new_patterns = dict(by_pattern)  # one copy for all the node's patterns
            if adding:
                new_patterns[pattern] = old | changed
                delta += len(changed)
            else:
                kept = old - changed
                if kept:
                    new_patterns[pattern] = kept
                else:
                    del new_patterns[pattern]
                delta -= len(changed)
        if new_patterns is None:
            return 0
        new = main.with_patterns(new_patterns)
        if not adding and inode is not root and new.is_empty():
            new = TOMB
        if not self._gcas(inode, main, new, gen, delta, hashed):
            return _RESTART
        # Compact upwards while nodes die; failures are harmless (a later writer helps).
        depth = len(path) - 1
        while new is TOMB and depth > 0:
            parent = path[depth - 1]
            if not self._clean(parent, tokens[depth - 1], path[depth], gen):
                break
            new = parent.main
            depth -= 1
        return abs(delta)

    def _clean(self, parent: _INode, token: Token, child: _INode, gen: _Gen) -> bool:
        """Remove the tombed ``child`` from ``parent``; tomb the parent too if it empties."""
        main = parent.main
        if main is TOMB or main.child(token) is not child:
            return main is not TOMB  # someone else already cleaned it
        new = main.with_child(token, None)
        if parent is not self._root and new.is_empty():
            new = TOMB
        return self._gcas(parent, main, new, gen, 0, False)

    # -- readers -------------------------------------------------------------------------
    # The walks mirror the trie's (_engine/trie.py explains them); they differ only in reading each
    # child's C-node through its I-node's ``main``. Kept separate so the plain trie pays no
    # indirection on its hot path.
    def match(self, words: list[str]) -> frozenset[Hashable]:
        while True:
            version = self._version
            if self._hash_pairs or (self.dollar_rule and words and words[0][:1] == "$"):
                result = self._match_general(words)
            else:
                result = self._match_plain(words)
            if self._version == version and not version & 1:
                return result
            yield_to_writer(0)

    def _match_plain(self, words: list[str]) -> frozenset[Hashable]:
        nodes = [self._root.main]
        for word in words:
            nxt: list[_CNode] = []
            for node in nodes:
                child = node.children.get(word)
                if child is not None:
                    nxt.append(child.main)
                child = node.star
                if child is not None:
                    nxt.append(child.main)
            if not nxt:
                return EMPTY
            nodes = nxt
        result = EMPTY
        for node in nodes:
            subs = node.subs
            if subs:
                result = subs if not result else result | subs
        return result

    def _match_general(self, words: list[str]) -> frozenset[Hashable]:
        root = self._root.main
        dollar = self.dollar_rule and bool(words) and words[0][:1] == "$"
        alive: dict[_CNode, None] = {root: None}
        if root.hash is not None and not dollar:
            alive[root.hash.main] = None
        for word in words:
            nxt: dict[_CNode, None] = {}
            for node in alive:
                if node.is_hash:
                    nxt[node] = None
                inode = node.children.get(word)
                if inode is not None:
                    child = inode.main
                    nxt[child] = None
                    if child.hash is not None:
                        nxt[child.hash.main] = None
                inode = node.star
                if inode is not None and not (dollar and node is root):
                    child = inode.main
                    nxt[child] = None
                    if child.hash is not None:
                        nxt[child.hash.main] = None
            if not nxt:
                return EMPTY
            alive = nxt
            dollar = False
        result = EMPTY
        for node in alive:
            subs = node.subs
            if subs:
                result = subs if not result else result | subs
        return result

    # -- snapshots -----------------------------------------------------------------------------
    def snapshot(self) -> CSTrieIndex:
        """O(1): freeze the current root and give the live trie a new-generation root."""
        if self._readonly:
            return self
        with self._lock:
            frozen = self._root
            self._root = _INode(frozen.main, _Gen())
            counts = (self._count, self._hash_pairs)
        return CSTrieIndex(self.dollar_rule, _root=frozen, _counts=counts)

    def items(self) -> list[Item]:
        root = self.snapshot()._root  # a frozen tree: walk it without any lock
        out: list[Item] = []
        stack: list[tuple[_CNode, Tokens]] = [(root.main, ())]
        while stack:
            node, prefix = stack.pop()
            for pattern, subs in node.by_pattern.items():
                out.append((pattern, prefix, subs))
            for word, child in node.children.items():
                stack.append((child.main, (*prefix, word)))
            if node.star is not None:
                stack.append((node.star.main, (*prefix, STAR)))
            if node.hash is not None:
                stack.append((node.hash.main, (*prefix, HASH)))
        return out

    def __len__(self) -> int:
        return self._count
