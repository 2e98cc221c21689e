"""A DFA over the subscription trie, learnt on demand: the default's engine for batch walks.

The trie's lookup simulates an NFA: after each word it holds the set of trie nodes still alive
(see :mod:`.walk`). That set depends only on the set before and the word, so it can be
memoised: a DFA *state* is a set of live trie nodes, and a *transition* (state, word) -> state is
computed once, by one step of the trie walk, then read with a single dict access. This is how
RE2 and Rust's regex run regular expressions. A caller that walks many topics at once, word
position by word position (the Spark workers, in Arrow), asks for each level's distinct
(state, word) pairs at once (:class:`BatchWalk`) and gets every topic's final state, whose
subscribers are united once per state.

**Memory is bounded in bytes.** Each state, transition and union is charged its size
(``sys.getsizeof`` of the objects made, and :data:`ENTRY_BYTES` per dict entry) against
``max_bytes``; once it is spent the DFA keeps nothing more: a transition is still computed, by a
step of the walk, but not remembered. States are as wide as the sets of nodes alive at once (many
``#`` and ``*`` patterns make wide states), and their size is charged as it is.
``tests/test_bounds.py`` checks the charge against ``tracemalloc`` on a workload made to grow
wide states.

Scope:

* The DFA is derived data of one version of the trie: the trie hands it out only at that
  version (:meth:`~.trie.TrieIndex.stable_dfa`), and every write drops it.
* MQTT's ``$`` rule applies to the first word only, so only the initial state looks at it; the
  transition is keyed by the word, which decides it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Final

from .._empty import EMPTY
from .._errors import InvalidWalkError, shortened
from .walk import Node, step, subs_of, union_of

__all__ = ["DFA", "ENTRY_BYTES", "BatchWalk"]

#: Charge per dict entry: a key and a value pointer, its hash and index slot, and the
#: over-allocation of a growing dict (CPython 3.11 keeps tables at most 2/3 full and doubles).
ENTRY_BYTES: Final = 64
#: Charge per state beyond its key (the set of its nodes): the object, its slots, and its dict of
#: transitions once used, twice over (a dict's table grows by doubling: traced by
#: tests/test_bounds.py).
_STATE_BYTES: Final = sys.getsizeof(object()) + 7 * 8 + 2 * (64 + 232)
#: ``sys.getsizeof(x)`` is ``x.__sizeof__()`` plus this for an object the cyclic collector tracks
#: (a tuple, a frozenset). The charges call ``__sizeof__`` itself: the same bytes, at a fifth of
#: the cost (about 20 ns against 100, interpreted: getsizeof parses keyword arguments and makes a
#: bound method each call), which was a tenth of a cold batch walk in either build.
_GC_HEAD: Final = sys.getsizeof(()) - ().__sizeof__()
_ADVANCE_TAKES: Final = (
    "BatchWalk.advance takes two sequences of the same length: states of the walk, and words (str)"
)


class _State:
    __slots__ = ("children", "first", "fixed", "next", "nodes", "otherwise", "subs")

    def __init__(self, nodes: frozenset[Node], first: bool = False) -> None:
        self.nodes = nodes  # the trie nodes alive here: also this state's key in DFA.states
        self.first = first  # the initial state: the only one where MQTT's '$' rule applies
        self.next: dict[str, _State] = {}
        self.subs: frozenset[Hashable] | None = None if nodes else EMPTY
        # The step split in two, computed on the first step from here (see DFA._step): the
        # nodes alive after *any* word, and the literal-children dicts to look the word up in.
        self.fixed: frozenset[Node] | None = None
        self.children: tuple[dict[str, Node], ...] = ()
        self.otherwise: _State | None = None  # the state after a word no literal child has


class DFA:
    """The DFA of one version of a trie rooted at ``trie_root``, learnt as it is walked.

    ``version`` is the trie's version it describes: the trie hands it out only while that is
    current. ``max_bytes`` bounds what it keeps (module docstring).
    """

    __slots__ = (
        "bytes",
        "dollar_rule",
        "max_bytes",
        "root",
        "states",
        "transitions",
        "trie_root",
        "version",
        "walk",
    )

    def __init__(self, trie_root: Node, dollar_rule: bool, version: int, max_bytes: int) -> None:
        self.version = version  # the trie's version this DFA describes (the trie checks it)
        nodes = frozenset((trie_root,) if trie_root.hash is None else (trie_root, trie_root.hash))
        self.root = _State(nodes, first=True)
        self.states: dict[frozenset[Node], _State] = {nodes: self.root}
        self.trie_root = trie_root  # for MQTT's '$' rule, which takes its literal branch only
        self.dollar_rule = dollar_rule
        self.max_bytes = max_bytes
        self.bytes = 0  # charged so far; approximate under races, it only bounds memory
        self.transitions = 0
        self.walk: BatchWalk | None = None

    def match(self, words: list[str]) -> frozenset[Hashable]:
        """The subscribers of the topic of ``words``, learning every transition it takes. O(words)
        dict accesses once learnt (for tests and one-off callers; batches use :class:`BatchWalk`)."""
        state = self.root
        for word in words:
            nxt = state.next.get(word)
            state = self._step(state, word) if nxt is None else nxt
        return self.subscribers(state)

    def advance_many(self, states: Sequence[_State], words: Sequence[str]) -> list[_State]:
        """The state after each ``(state, word)`` pair, learnt at once (for callers that walk
        many topics at once and need a state for each: :class:`BatchWalk`). Raises
        :class:`~topicmatch.InvalidWalkError` for anything but two sequences of the same
        length, of states and of words (str).

        The methods are called on the objects, not bound to locals first: compiled, a method
        called on a native object is a direct call, and a bound method kept in a local a call
        through Python's protocol (as a call through any callable).
        """
        out: list[_State] = []
        try:
            for state, word in zip(states, words, strict=True):
                nxt = state.next.get(word)  # a transition the DFA knows: one dict access
                out.append(self._step(state, word) if nxt is None else nxt)
        except (AttributeError, TypeError, ValueError):
            # Not a state (compiled: refused as it is unpacked; interpreted: it has no ``next``),
            # not a str (compiled: the same; interpreted: _step refuses it), or not as many
            # words as states (zip's ValueError): the one typed error, whichever build runs.
            raise InvalidWalkError(_ADVANCE_TAKES) from None
        return out

    def batch_walk(self) -> BatchWalk:
        """This DFA's :class:`BatchWalk` (the same object on every call)."""
        walk = self.walk
        if walk is None:
            walk = self.walk = BatchWalk(self)
        return walk

    def subscribers(self, state: object) -> frozenset[Hashable]:
        """The subscribers of a topic whose walk ends in ``state`` (one of this DFA's states, else
        :class:`~topicmatch.InvalidWalkError`)."""
        if type(state) is not _State:
            raise InvalidWalkError(
                f"BatchWalk.subscribers takes a state of the walk, not {shortened(repr(state))}"
            )
        subs = state.subs
        if subs is None:
            # The union is computed once per state, then every lookup ending here reuses it.
            found: list[frozenset[Hashable]] = []
            for node in state.nodes:
                subs = subs_of(node)
                if subs:
                    found.append(subs)
            subs = union_of(found)
            if len(found) < 2:  # a node's own set: nothing new is kept
                state.subs = subs
            elif self.bytes < self.max_bytes:
                self.bytes += subs.__sizeof__() + _GC_HEAD
                state.subs = subs
        return subs

    def _step(self, state: _State, word: str) -> _State:
        """One step of the trie walk from ``state`` on ``word``; remembered while there is room.

        A step from a set of trie nodes is, for any word, the same *fixed* part (the ``#`` nodes,
        which absorb the word, and every ``*`` child, each with its own ``#`` child) plus the
        literal children named ``word`` (each with its ``#`` child): this is ``walk.step``
        rearranged. Each state keeps its fixed part and its nodes' children dicts, so a cold
        step costs a dict lookup per dict; and a word that no dict holds (most words, in a
        state that ``#`` or ``*`` patterns keep wide) leads to one state per source state,
        ``otherwise``, found without building a set (docs/implementation.md, *The DFA, for
        batch walks only*).
        """
        if not isinstance(word, str):  # (compiled, advance_many refused it as it unpacked it)
            raise InvalidWalkError(_ADVANCE_TAKES)
        nodes = state.nodes
        if not nodes:
            return state  # dead: nothing can match any more
        if state.first and self.dollar_rule and word[:1] == "$":
            # MQTT's '$' rule: only the root's literal branch.
            return self._remember(state, word, frozenset(step((), word, self.trie_root)))
        fixed = state.fixed
        if fixed is None:
            fixed, dicts = self._split(nodes)
            if self.bytes < self.max_bytes:
                state.fixed, state.children = fixed, dicts
                self.bytes += fixed.__sizeof__() + dicts.__sizeof__() + 2 * _GC_HEAD
        else:
            dicts = state.children
        found: list[Node] | None = None  # the literal children named word, and their '#' children
        for children in dicts:
            child = children.get(word)
            if child is not None:
                if found is None:
                    found = [child]
                else:
                    found.append(child)
                if child.hash is not None:
                    found.append(child.hash)
        if found is not None:
            return self._remember(state, word, fixed.union(found))
        target = state.otherwise
        if target is None:
            target = self._remember(state, word, fixed)
            if self.bytes < self.max_bytes:
                state.otherwise = target
            return target
        self._link(state, word, target)
        return target

    @staticmethod
    def _split(nodes: frozenset[Node]) -> tuple[frozenset[Node], tuple[dict[str, Node], ...]]:
        """The fixed part of a step from ``nodes`` and the children dicts to look words up in."""
        fixed: list[Node] = []
        dicts: list[dict[str, Node]] = []
        for node in nodes:  # one pass: iterating a frozenset is a call per node, compiled or not
            if node.is_hash:
                fixed.append(node)
            star = node.star
            if star is not None:
                fixed.append(star)
                if star.hash is not None:
                    fixed.append(star.hash)
            if node.children:
                dicts.append(node.children)
        return frozenset(fixed), tuple(dicts)

    def _remember(self, state: _State, word: str, alive: frozenset[Node]) -> _State:
        """The state of the node set ``alive``, reached from ``state`` by ``word``."""
        target = self.states.get(alive)
        if target is None:
            target = _State(alive)
            if self.bytes < self.max_bytes:
                target = self.states.setdefault(alive, target)
                self.bytes += _STATE_BYTES + ENTRY_BYTES + alive.__sizeof__() + _GC_HEAD
        self._link(state, word, target)
        return target

    def _link(self, state: _State, word: str, target: _State) -> None:
        """Remember the transition ``state`` --``word``--> ``target`` while there is room."""
        if self.bytes < self.max_bytes:
            state.next[word] = target
            # str's own: the caller's word may be of a subclass, whose __sizeof__ could say anything.
            self.bytes += ENTRY_BYTES + str.__sizeof__(word)
            self.transitions += 1


class BatchWalk:
    """Many topics walked through the default's DFA together: the narrow interface of the core
    for a batch engine that walks topics itself, word position by word position (the Spark
    workers do it in Arrow, one level of a batch's distinct topics at a time).

    States are opaque values: hash them, compare them, pass them back, nothing else.
    ``root`` is the state every walk starts in; ``advance(states, words)`` gives the state after
    each ``(state, word)`` pair, learnt at once; ``subscribers(state)`` gives the subscribers of
    a topic whose walk ends in ``state``. Topics must be split as the dialect's
    ``parse_topic`` splits them (``Dialect.plain_topics`` picks out those that need no more than
    a split). Exact only while nobody writes to the matcher it came from
    (:meth:`~topicmatch.Matcher.batch_walk`).
    """

    __slots__ = ("advance", "root", "subscribers")

    def __init__(self, dfa: DFA) -> None:
        # Bound methods, so a call costs what a call of the DFA's own method costs.
        self.root: Hashable = dfa.root
        self.advance: Callable[[Sequence[Any], Sequence[str]], list[Any]] = dfa.advance_many
        self.subscribers: Callable[[Any], frozenset[Hashable]] = dfa.subscribers
