"""A lazily built DFA over the subscription trie: the default matcher's lookup engine.

The trie's lookup simulates an NFA: after each word it holds the set of trie nodes still alive
(see :mod:`._walk`). That set depends only on the set before and the word, so it can be
memoised: a DFA *state* is a set of live trie nodes, and a *transition* (state, word) -> state is
computed once, by one step of the trie walk, then read with a single dict access. This is how
RE2 and Rust's regex run regular expressions; here it turns a lookup into one dict access per
word plus the final state's subscribers, computed once per state.

**Learning only what repeats.** A state, its frozenset key and its union cost several times a
plain step of the walk, which is money lost on a transition taken once (a device's own topic
level, a topic seen once). So a lookup follows the transitions the DFA knows, and at the first
one it does not know, it notes the word in the state's ``seen`` dict and finishes with the trie's
own walk from the state's nodes (:func:`~._walk.finish_leaves`). The second time the same
(state, word) comes, the transition is learnt. Topics that repeat their prefixes end up walking
the DFA only; one-off suffixes cost a walk, as in the trie, and a dict entry.

**Memory is bounded in bytes.** Each state, transition, noted word and union is charged its
size (``sys.getsizeof`` of the objects made, and :data:`ENTRY_BYTES` per dict entry) against
``max_bytes`` (:data:`MAX_BYTES` by default); once it is spent the DFA learns and notes nothing
more, and lookups walk the trie from where the known transitions end. States are as wide as the
sets of nodes alive at once (many ``#`` and ``*`` patterns make wide states), and their size is
charged as it is. The charge is an estimate: ``tests/test_bounds.py`` checks it against
``tracemalloc`` on a workload made to grow wide states (what is kept stays within the charge when
states are learnt at once, and within 1.5x of ``max_bytes`` through lookups, whose noted words
and growing dicts it underestimates).

Scope:

* The DFA is derived data. Every write to the trie discards it (the trie's writers replace it
  while its version is odd, see :class:`~._trie.TrieIndex`).
* MQTT's ``$`` rule applies to the first word only, so only the initial state looks at it; the
  transition is keyed by the word, which decides it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Final

from ._index import EMPTY
from ._walk import Node, finish_general, finish_leaves, step, subs_of, union_of, walk_general, walk_leaves

__all__ = ["DFA", "ENTRY_BYTES", "LEARN_AFTER", "MAX_BYTES", "MAX_OFF_RATIO", "PROBATION", "BatchWalk"]

#: Bytes a DFA may grow to by default (states, transitions, noted words, unions).
MAX_BYTES: Final = 32 * 1024 * 1024
#: A transition is learnt the time it is taken for this many times (before, the trie's walk
#: finishes the lookup): learning costs about as much as this many walks of one word from a
#: state (docs/performance.md, "The default engine", has the measurement).
LEARN_AFTER: Final = 2
#: Lookups a new DFA is watched for, and the share of them that may leave its known transitions
#: before the DFA is retired (see DFA._probe; docs/performance.md, "The default engine").
PROBATION: Final = 1024
MAX_OFF_RATIO: Final = 0.9
#: Charge per dict entry: a key and a value pointer, its hash and index slot, and the
#: over-allocation of a growing dict (CPython 3.11 keeps tables at most 2/3 full and doubles).
ENTRY_BYTES: Final = 64
#: Charge per state beyond its node tuple and key: the object and its two dicts once used.
_STATE_BYTES: Final = sys.getsizeof(object()) + 10 * 8 + 2 * (64 + 232)
_sizeof = sys.getsizeof


class _State:
    __slots__ = (
        "children",
        "first",
        "fixed",
        "found",
        "frontier",
        "next",
        "nodes",
        "otherwise",
        "seen",
        "subs",
    )

    def __init__(self, nodes: tuple[Node, ...], first: bool = False) -> None:
        self.nodes = nodes
        self.first = first  # the initial state: the only one where MQTT's '$' rule applies
        self.next: dict[str, _State] = {}
        self.seen: dict[str, int] = {}  # words that left this state, with no transition yet: how often
        self.subs: frozenset[Hashable] | None = None if nodes else EMPTY
        # The step split in two, computed on the first step from here (see DFA._step): the
        # nodes alive after *any* word, and the literal-children dicts to look the word up in.
        self.fixed: tuple[Node, ...] | None = None
        self.children: tuple[dict[str, Node], ...] = ()
        self.otherwise: _State | None = None  # the state after a word no literal child has
        # For a walk that goes on from here in a trie of '#' leaves (finish_leaves): the nodes
        # that are not '#', and the subscribers of the '#' leaves, which match whatever follows.
        self.frontier: list[Node] | None = None
        self.found: tuple[frozenset[Hashable], ...] = ()


class DFA:
    """The lazily learnt DFA of one version of a trie rooted at ``trie_root``.

    ``leaves`` says that every ``#`` node of that trie is a leaf (the faster walk applies).
    ``version`` is the trie's version it describes: the trie uses it only while that is current.
    """

    __slots__ = (
        "bytes",
        "dollar_rule",
        "learn_after",
        "leaves",
        "lookup",
        "lookups",
        "max_bytes",
        "offs",
        "probation",
        "retired",
        "root",
        "states",
        "transitions",
        "version",
        "walk",
    )

    def __init__(
        self, trie_root: Node, dollar_rule: bool, leaves: bool, version: int = 0, max_bytes: int = MAX_BYTES
    ) -> None:
        self.version = version  # the trie's version this DFA describes (the trie checks it)
        self.learn_after = LEARN_AFTER
        self.probation = PROBATION
        nodes = (trie_root,) if trie_root.hash is None else (trie_root, trie_root.hash)
        self.root = _State(nodes, first=True)
        self.states: dict[frozenset[Node], _State] = {frozenset(nodes): self.root}
        self.dollar_rule = dollar_rule
        self.leaves = leaves
        self.max_bytes = max_bytes
        self.bytes = 0  # charged so far; approximate under races, it only bounds memory
        self.transitions = 0
        # Probation (see _probe): the trie calls ``lookup``, which counts the first lookups and
        # how many left the known transitions, then becomes ``match`` or retires the DFA.
        self.lookup = self._probe
        self.lookups = 0
        self.offs = 0
        self.retired = False
        self.walk: BatchWalk | None = None

    def _probe(self, words: list[str]) -> frozenset[Hashable]:
        """:meth:`match`, counted: keep the DFA only if, of the ``probation`` lookups that
        follow its first ``probation`` (those teach it; :data:`PROBATION` unless the trie says
        otherwise), fewer than :data:`MAX_OFF_RATIO` left its known transitions.

        On topics that do not repeat their prefixes (a device's own level, topics seen once),
        nearly every lookup leaves the DFA early and finishes with the trie's walk; then the
        DFA's bookkeeping costs more than the few words it saves, and the trie is better off
        without it (``retired``; see :meth:`~._trie.TrieIndex.match` for when it tries again).
        """
        lookups = self.lookups = self.lookups + 1
        probation = self.probation
        if lookups == probation:
            self.offs = 0  # the first half taught it; the second half judges it
        result = self.match(words)
        if lookups >= 2 * probation:
            if self.offs > MAX_OFF_RATIO * probation:
                self.retired = True
            else:
                self.lookup = self.match
        return result

    def match(self, words: list[str]) -> frozenset[Hashable]:
        state = self.root
        i = 0  # a count, not enumerate(): no enumerate object made on every lookup
        for word in words:
            nxt = state.next.get(word)
            if nxt is None:
                return self._off(state, words, i)
            state = nxt
            i += 1  # noqa: SIM113 - see above
        subs = state.subs
        return self.subscribers(state) if subs is None else subs

    def advance_many(self, states: Sequence[_State], words: Sequence[str]) -> list[_State]:
        """The state after each ``(state, word)`` pair, learnt at once (for callers that walk
        many topics at once and need a state for each: :class:`BatchWalk`)."""
        step = self._step
        out: list[_State] = []
        append = out.append
        for state, word in zip(states, words, strict=True):
            nxt = state.next.get(word)  # a transition the DFA knows: one dict access
            append(step(state, word) if nxt is None else nxt)
        return out

    def batch_walk(self) -> BatchWalk:
        """This DFA's :class:`BatchWalk` (the same object on every call)."""
        walk = self.walk
        if walk is None:
            walk = self.walk = BatchWalk(self)
        return walk

    def subscribers(self, state: _State) -> frozenset[Hashable]:
        """The subscribers of a topic whose walk ends in ``state``."""
        subs = state.subs
        if subs is None:
            # The union is computed once per state, then every lookup ending here reuses it.
            found = [subs for subs in map(subs_of, state.nodes) if subs]
            subs = union_of(found)
            if len(found) < 2:  # a node's own set: nothing new is kept
                state.subs = subs
            elif self.bytes < self.max_bytes:
                self.bytes += _sizeof(subs)
                state.subs = subs
        return subs

    def _off(self, state: _State, words: list[str], i: int) -> frozenset[Hashable]:
        """Finish a lookup that left the known transitions at ``state``, before ``words[i]``.

        The transition is counted in the state's ``seen``; the :data:`LEARN_AFTER`-th time it
        is learnt and the lookup goes on in the DFA. Otherwise the trie's walk finishes it from
        the state's nodes.
        """
        if not state.nodes:
            return EMPTY  # the dead state: no pattern can match any more
        self.offs += 1
        n = len(words)
        while True:
            word = words[i]
            seen = state.seen
            count = seen.get(word, 0) + 1
            if count < self.learn_after or self.bytes >= self.max_bytes:
                break
            seen.pop(word, None)  # another reader may have learnt it at the same time
            state = self._step(state, word)
            i += 1
            while i < n:  # on through the transitions the DFA knows
                nxt = state.next.get(words[i])
                if nxt is None:
                    break
                state = nxt
                i += 1
            else:
                subs = state.subs
                return self.subscribers(state) if subs is None else subs
        if self.bytes < self.max_bytes:
            if count == 1:
                self.bytes += ENTRY_BYTES + _sizeof(word)
            seen[word] = count
        if state.first and self.dollar_rule and word[:1] == "$":
            root = state.nodes[0]
            return walk_leaves(root, words, True) if self.leaves else walk_general(root, words, True)
        if not self.leaves:
            return finish_general(dict.fromkeys(state.nodes), words[i:])
        frontier = state.frontier
        if frontier is None:
            frontier = [node for node in state.nodes if not node.is_hash]
            found = tuple(subs for node in state.nodes if node.is_hash and (subs := subs_of(node)))
            if self.bytes < self.max_bytes:
                self.bytes += _sizeof(frontier) + _sizeof(found)
                state.frontier, state.found = frontier, found
        else:
            found = state.found
        return finish_leaves(frontier, list(found), words[i:])

    def _step(self, state: _State, word: str) -> _State:
        """One step of the trie walk from ``state`` on ``word``; remembered while there is room.

        A step from a set of trie nodes is, for any word, the same *fixed* part (the ``#`` nodes,
        which absorb the word, and every ``*`` child, each with its own ``#`` child) plus the
        literal children named ``word`` (each with its ``#`` child): this is ``_walk.step``
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
            return self._remember(state, word, step(nodes, word, nodes[0]))
        fixed = state.fixed
        if fixed is None:
            fixed, dicts = self._split(nodes)
            if self.bytes < self.max_bytes:
                state.fixed, state.children = fixed, dicts
                self.bytes += _sizeof(fixed) + _sizeof(dicts)
        else:
            dicts = state.children
        alive: dict[Node, None] | None = None
        for children in dicts:
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
            if self.bytes < self.max_bytes:
                state.otherwise = target
            return target
        self._link(state, word, target)
        return target

    @staticmethod
    def _split(nodes: tuple[Node, ...]) -> tuple[tuple[Node, ...], tuple[dict[str, Node], ...]]:
        """The fixed part of a step from ``nodes`` and the children dicts to look words up in."""
        fixed: dict[Node, None] = {}
        for node in nodes:
            if node.is_hash:
                fixed[node] = None
            star = node.star
            if star is not None:
                fixed[star] = None
                if star.hash is not None:
                    fixed[star.hash] = None
        return tuple(fixed), tuple(node for node in nodes if len(node))

    def _remember(self, state: _State, word: str, alive: dict[Node, None]) -> _State:
        """The state of the node set ``alive``, reached from ``state`` by ``word``."""
        key = frozenset(alive)
        target = self.states.get(key)
        if target is None:
            target = _State(tuple(alive))
            if self.bytes < self.max_bytes:
                target = self.states.setdefault(key, target)
                self.bytes += _STATE_BYTES + ENTRY_BYTES + _sizeof(target.nodes) + _sizeof(key)
        self._link(state, word, target)
        return target

    def _link(self, state: _State, word: str, target: _State) -> None:
        """Remember the transition ``state`` --``word``--> ``target`` while there is room."""
        if self.bytes < self.max_bytes:
            state.next[word] = target
            self.bytes += ENTRY_BYTES + _sizeof(word)
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
