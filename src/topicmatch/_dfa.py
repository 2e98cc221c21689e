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

#: Transitions (and states) kept at most. A transition is one dict entry; a state holds its set of
#: live trie nodes about three times over (its tuple, its frozenset key, its step's fixed part and
#: children dicts), so memory grows with how wide the states are: many ``#`` and ``*`` patterns
#: alive at once make wide states.
MAX_TRANSITIONS = 100_000


class _State:
    __slots__ = ("children", "first", "fixed", "next", "nodes", "otherwise", "subs")

    def __init__(self, nodes: tuple[_Node, ...], first: bool = False) -> None:
        self.nodes = nodes
        self.first = first  # the initial state: the only one where MQTT's '$' rule applies
        self.next: dict[str, _State] = {}
        self.subs: frozenset[Hashable] | None = None if nodes else EMPTY
        # The step split in two, computed on the first step from here (see DFA._step): the
        # nodes alive after *any* word, and the literal-children dicts to look the word up in.
        self.fixed: tuple[_Node, ...] | None = None
        self.children: tuple[dict[str, _Node], ...] = ()
        self.otherwise: _State | None = None  # the state after a word no literal child has


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
        """One step of the trie walk from ``state`` on ``word``; remembered while there is room.

        A step from a set of trie nodes is, for any word, the same *fixed* part (the ``#`` nodes,
        which absorb the word, and every ``*`` child, each with its own ``#`` child) plus the
        literal children named ``word`` (each with its ``#`` child): this is ``_trie.step``
        rearranged. Each state keeps its fixed part and its nodes' children dicts, so a cold
        step costs a dict lookup per dict; and a word that no dict holds (most words, in a
        state that ``#`` or ``*`` patterns keep wide) leads to one state per source state,
        ``otherwise``, found without building a set (benchmarks/worker_lookups.py: the cold pass
        of the pipeline benchmark's 100k x 10k case, docs/implementation.md).
        """
        nodes = state.nodes
        if not nodes:
            return state  # dead: nothing can match any more
        if state.first and self.dollar_rule and word[:1] == "$":
            # MQTT's '$' rule: only the root's literal branch (nodes[0] is the root).
            return self._remember(state, word, self.step(nodes, word, nodes[0]))
        fixed = state.fixed
        if fixed is None:
            fixed, state.children = self._split(nodes)
            state.fixed = fixed
        alive: dict[_Node, None] | None = None
        for children in state.children:
            child = children.get(word)
            if child is not None:
                if alive is None:
                    alive = dict.fromkeys(fixed)
                alive[child] = None
                if child.hash is not None:
                    alive[child.hash] = None
        if alive is not None:
            return self._remember(state, word, alive)
        target = state.otherwise
        if target is None:
            target = self._remember(state, word, dict.fromkeys(fixed))
            if self.transitions < self.max_transitions:
                state.otherwise = target
            return target
        self._link(state, word, target)
        return target

    @staticmethod
    def _split(nodes: tuple[_Node, ...]) -> tuple[tuple[_Node, ...], tuple[dict[str, _Node], ...]]:
        """The fixed part of a step from ``nodes`` and the children dicts to look words up in."""
        fixed: dict[_Node, None] = {}
        for node in nodes:
            if node.is_hash:
                fixed[node] = None
            star = node.star
            if star is not None:
                fixed[star] = None
                if star.hash is not None:
                    fixed[star.hash] = None
        return tuple(fixed), tuple(node.children for node in nodes if node.children)

    def _remember(self, state: _State, word: str, alive: dict[_Node, None]) -> _State:
        """The state of the node set ``alive``, reached from ``state`` by ``word``."""
        key = frozenset(alive)
        target = self.states.get(key)
        room = self.transitions < self.max_transitions
        if target is None:
            target = _State(tuple(alive))
            if room:
                target = self.states.setdefault(key, target)
        self._link(state, word, target)
        return target

    def _link(self, state: _State, word: str, target: _State) -> None:
        """Remember the transition ``state`` --``word``--> ``target`` while there is room."""
        if self.transitions < self.max_transitions:
            state.next[word] = target
            self.transitions += 1  # approximate under races; it only bounds memory
