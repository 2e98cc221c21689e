"""A lazily built DFA over the subscription trie: the default matcher's lookup engine.

The trie's lookup simulates an NFA: after each word it holds the set of trie nodes still alive
(see :mod:`._trie`). That set depends only on the set before and the word, so it can be
memoised: a DFA *state* is a set of live trie nodes, and a *transition* (state, word) -> state is
computed once, by one step of the trie walk, then read with a single dict access. This is how
RE2 and Rust's regex run regular expressions; here it turns a lookup into one dict access per
word plus the final state's subscribers, computed once per state.

Scope and limits:

* The DFA is derived data. Every write to the trie discards it (the trie's writers replace it
  while its version is odd, see :class:`~._trie.TrieIndex`), and it is rebuilt by the lookups
  that follow, one transition at a time.
* At most ``max_transitions`` transitions and as many states are kept; past that the DFA stops
  learning (new steps are computed and used, not stored) until the next write replaces it.
  Memory is bounded, and a workload that never repeats costs one step per word, as the trie.
* MQTT's ``$`` rule applies to the first word only, so only the initial state looks at it; the
  transition is keyed by the word, which decides it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, TypeAlias

from ._index import EMPTY

if TYPE_CHECKING:
    from ._trie import _Node

Step: TypeAlias = "Callable[[Iterable[_Node], str, _Node | None], dict[_Node, None]]"

__all__ = ["DFA"]

#: Transitions (and states) kept at most: about 100 bytes each, so about 10 MB at most.
MAX_TRANSITIONS = 100_000


class _State:
    __slots__ = ("first", "next", "nodes", "subs")

    def __init__(self, nodes: tuple[_Node, ...], first: bool = False) -> None:
        self.nodes = nodes
        self.first = first  # the initial state: the only one where MQTT's '$' rule applies
        self.next: dict[str, _State] = {}
        self.subs: frozenset[Hashable] | None = None if nodes else EMPTY


class DFA:
    __slots__ = ("dollar_rule", "max_transitions", "root", "states", "step", "transitions")

    def __init__(
        self, trie_root: _Node, dollar_rule: bool, step: Step, max_transitions: int = MAX_TRANSITIONS
    ) -> None:
        # ``step`` is the trie's own walk step (_trie.step): the DFA only memoises it.
        self.step = step
        nodes = (trie_root,) if trie_root.hash is None else (trie_root, trie_root.hash)
        self.root = _State(nodes, first=True)
        self.states: dict[frozenset[_Node], _State] = {frozenset(nodes): self.root}
        self.dollar_rule = dollar_rule
        self.max_transitions = max_transitions
        self.transitions = 0

    def match(self, words: list[str]) -> frozenset[Hashable]:
        state = self.root
        for word in words:
            nxt = state.next.get(word)
            state = self._step(state, word) if nxt is None else nxt
        subs = state.subs
        return self.subscribers(state) if subs is None else subs

    def advance(self, state: _State, word: str) -> _State:
        """The state after ``word`` from ``state`` (for callers that walk many topics at once)."""
        nxt = state.next.get(word)
        return self._step(state, word) if nxt is None else nxt

    def subscribers(self, state: _State) -> frozenset[Hashable]:
        """The subscribers of a topic whose walk ends in ``state``."""
        subs = state.subs
        if subs is None:
            # The union is computed once per state, then every lookup ending here reuses it.
            # One union of all the sets, not a chain of ``|``: each ``|`` copies what came
            # before, quadratic when a state holds many subscribed nodes (``#`` patterns).
            found = [node.subs for node in state.nodes if node.subs]
            subs = EMPTY if not found else found[0] if len(found) == 1 else frozenset().union(*found)
            state.subs = subs
        return subs

    def _step(self, state: _State, word: str) -> _State:
        """One step of the trie walk from ``state`` on ``word``; remembered while there is room."""
        nodes = state.nodes
        if not nodes:
            return state  # dead: nothing can match any more
        dollar = state.first and self.dollar_rule and word[:1] == "$"
        alive = self.step(nodes, word, nodes[0] if dollar else None)  # nodes[0]: the root, if first
        key = frozenset(alive)
        target = self.states.get(key)
        room = self.transitions < self.max_transitions
        if target is None:
            target = _State(tuple(alive))
            if room:
                target = self.states.setdefault(key, target)
        if room:
            state.next[word] = target
            self.transitions += 1  # approximate under races; it only bounds memory
        return target
