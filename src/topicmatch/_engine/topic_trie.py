"""Concrete topics in a trie of their words, walked by a pattern: which stored topics match it?

The one structure behind :class:`~topicmatch.TopicIndex` (retained messages) and the result
cache's index of the topics it holds (a write drops exactly the cached topics its pattern
matches). A pattern walks it the way a topic walks the subscription trie, with the roles
swapped: a literal follows one child, ``*`` every child of the nodes reached, ``#`` every node
below them (zero words included). The walk visits the nodes on the way to the matches and those
a wildcard fans out over, never the rest of the store.

**Invisible to the cyclic collector.** Node ``n`` is a number: ``kids[n]`` is its dict of
word -> child number, ``up[n]`` and ``word[n]`` its parent and the word leading to it,
``topic_at`` maps a node to the topic ending there and ``leaf`` a topic to its node. CPython's
collector does not track a dict that holds only strings and integers, so the store holds four
lists for it to traverse whatever its size, and adding a topic creates no object it tracks. A node
object with a dict of node objects made two per node: the result cache's stores then put over a
third of the lookups' time into collections on the workload matrix's *unmatched* row, whose
topics come and go through the cache (``benchmarks/cache_collector.py``). Numbers of removed
nodes are reused (``free``).

Not thread-safe: its owners hold their lock around every call.
"""

from __future__ import annotations

from typing import Final

from .._words import HASH, STAR, Tokens

__all__ = ["NODE_BYTES", "TopicTrie"]

#: Bytes a node costs beyond its word: its dict while small, its slot in three lists, its number,
#: and its entry in the parent's dict (the result cache charges this per node it makes).
NODE_BYTES: Final = 64 + 3 * 8 + 32 + 64


class TopicTrie:
    """Topics (with their words) in a trie; :meth:`matching` is the reverse lookup."""

    __slots__ = ("free", "kids", "last_walk", "leaf", "topic_at", "up", "word")

    def __init__(self) -> None:
        self.kids: list[dict[str, int]] = [{}]  # node 0 is the root
        self.up: list[int] = [-1]
        self.word: list[str] = [""]
        self.free: list[int] = []  # numbers of removed nodes, for reuse
        self.topic_at: dict[int, str] = {}
        self.leaf: dict[str, int] = {}
        self.last_walk = 0  # (node, position) pairs the last walk visited: its cost, for tests

    def __len__(self) -> int:
        return len(self.leaf)

    def add(self, topic: str, words: list[str]) -> int:
        """Store ``topic``, whose words are ``words``; the number of nodes made. O(words).

        Different topics have different words in every dialect (a topic is its words joined by
        the separator), so one node holds at most one topic.
        """
        kids = self.kids
        node = made = 0
        for word in words:
            child = kids[node].get(word)
            if child is None:
                child = self._new_node(node, word)
                made += 1
            node = child
        self.topic_at[node] = topic
        self.leaf[topic] = node
        return made

    def _new_node(self, parent: int, word: str) -> int:
        free = self.free
        if free:
            node = free.pop()
            self.kids[node], self.up[node], self.word[node] = {}, parent, word
        else:
            node = len(self.kids)
            self.kids.append({})
            self.up.append(parent)
            self.word.append(word)
        self.kids[parent][word] = node
        return node

    def remove(self, topic: str) -> bool:
        """Forget ``topic`` and prune the branch it leaves empty; False if it was not stored.
        O(words)."""
        node = self.leaf.pop(topic, None)
        if node is None:
            return False
        topic_at, kids, up = self.topic_at, self.kids, self.up
        del topic_at[node]
        while node and not kids[node] and node not in topic_at:
            parent = up[node]
            del kids[parent][self.word[node]]
            self.free.append(node)
            node = parent
        return True

    def matching(self, tokens: Tokens, dollar: bool, budget: int = -1) -> list[str] | None:
        """The stored topics the pattern ``tokens`` matches, or None once the walk has taken
        ``budget`` steps (negative: no limit). ``dollar``: MQTT's rule that a pattern starting
        with a wildcard matches no topic whose first word starts with ``$``.

        A walk over (node, position) pairs. Only a ``#`` followed by more tokens can reach a pair
        twice, so only then does the walk keep a set of the pairs it visited (a pattern matching
        most of the store would otherwise pay for one entry per node). O(the pairs visited),
        which is O(nodes x tokens) at worst, however many ``#`` the pattern has.
        """
        kids, topic_at = self.kids, self.topic_at
        n = len(tokens)
        if n and type(tokens[0]) is str and tokens[0] not in kids[0]:
            # The commonest walk by far under churn (a write's pattern starting with a word no
            # cached topic starts with: 86 % of the churn row's, CHANGELOG.md, "Performance history"),
            # without building the walk's stack.
            self.last_walk = 1  # the root's step
            return []
        seen: set[tuple[int, int]] | None = set() if HASH in tokens[:-1] else None
        found: list[str] = []
        steps = 0
        stack = [(0, 0)]
        while stack:
            node, i = pair = stack.pop()
            if seen is not None:
                if pair in seen:
                    continue
                seen.add(pair)
            if steps == budget:
                self.last_walk = steps
                return None
            steps += 1
            if i == n:
                topic = topic_at.get(node)
                if topic is not None:
                    found.append(topic)
                continue
            token = tokens[i]
            if token is HASH or token is STAR:
                children = kids[node].items()
                if dollar and not node:  # MQTT: a wildcard never matches a '$' first level
                    children = [(w, c) for w, c in children if w[:1] != "$"]  # type: ignore[assignment]
                if token is HASH:
                    stack.append((node, i + 1))  # zero more words
                    stack.extend([(child, i) for _word, child in children])  # one more, still '#'
                else:
                    stack.extend([(child, i + 1) for _word, child in children])
            else:
                child = kids[node].get(token)
                if child is not None:
                    stack.append((child, i + 1))
        self.last_walk = steps
        return found
