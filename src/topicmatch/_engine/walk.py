"""The trie's node and its lookup walks, shared by the trie and the DFA run over it.

Layout: a node holds the dict of its literal children, one ``star`` child (the ``*``/``+``
branch) and one ``hash`` child (the ``#`` branch), plus the subscribers of the patterns that end
there.
Wildcards live in their own slots rather than under a key in the dict, so a published word that
happens to be spelled ``*`` can never walk into a wildcard branch, and the lookup loop needs no
string comparisons to find them.

Lookup is a breadth-first walk that keeps the *set of nodes* still alive after each word (the
states of the equivalent NFA). A ``#`` node stays alive after absorbing a word and also lets its
children continue, which handles "zero or more words" without backtracking: each word costs at
most one step per node of the trie, so any pattern, however many ``#`` it has, matches in
O(words x nodes), never exponentially (:func:`walk_general`). When every ``#`` node is a leaf
(every MQTT and NATS table, and AMQP tables without ``a.#.b``), no node can be reached twice and
a ``#`` leaf's subscribers can be gathered as soon as its parent is reached, so the walk keeps a
plain list and no set (:func:`walk_leaves`, the common, faster case).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from sys import intern
from typing import Any, Final

from .._empty import EMPTY
from .._words import HASH, STAR, Token
from .governor import Governor

__all__ = [
    "SMALL",
    "Big",
    "Node",
    "Unions",
    "finish_general",
    "finish_leaves",
    "materialize",
    "step",
    "subs_of",
    "union_of",
    "walk_general",
    "walk_leaves",
]


class _ReadOnlyEmpty(dict[str, Any]):
    """The type of :data:`NO_PATTERNS` and :data:`NO_CHILDREN`: an empty dict that refuses to
    be stored into, so that a writer that added to a shared table instead of replacing it
    would raise rather than give every node sharing it the entry. A dict (of a subclass) rather
    than a ``MappingProxyType``, so that the node's fields are typed as what they hold; a
    lookup reads it as a dict (a compiled ``get`` on it is the dict's own)."""

    __slots__ = ()

    def __setitem__(self, key: str, value: Any) -> None:
        raise TypeError("a shared empty table of the trie is read-only")

    def setdefault(self, key: str, default: Any = None) -> Any:
        raise TypeError("a shared empty table of the trie is read-only")

    def update(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a shared empty table of the trie is read-only")


#: The ``by_pattern`` of every node that has no pattern (most inner nodes): one shared, read-only
#: empty table instead of a dict per node. :meth:`Node.add` replaces it before adding.
NO_PATTERNS: Final[dict[str, Any]] = _ReadOnlyEmpty()
#: The ``children`` of every node that has no literal child (every leaf): one shared, read-only
#: empty table. :meth:`Node.link` replaces it before linking a child, and puts it back when
#: the last child goes.
NO_CHILDREN: Final[dict[str, Any]] = _ReadOnlyEmpty()

#: How a walk unites the sets it gathered: :func:`union_of`, or a trie's :meth:`Unions.of`.
Union = Callable[[list[frozenset[Hashable]]], frozenset[Hashable]]

#: A node whose patterns hold more (pattern, subscriber) pairs than this is *big*: its union of
#: subscribers is made by the readers, once per change, instead of by every write.
SMALL: Final = 64


class Big:
    """What only a big node holds (more than :data:`SMALL` pairs): the writers' ``counts`` and
    ``pairs``, and the readers' ``view`` of the union under a ``stamp``.

    Held by one field of the node (:attr:`Node.big`, None while the node is small), so that the
    small nodes, all but a few hundred of a table of a million subscriptions, carry one pointer
    for these four values rather than four (:class:`Node`'s layout).
    """

    __slots__ = ("counts", "pairs", "stamp", "view")

    def __init__(self, counts: dict[Hashable, int], pairs: int) -> None:
        self.counts = counts  # subscriber -> how many of the node's patterns hold it
        self.pairs = pairs  # the sum of the sizes of the node's patterns' sets
        self.stamp: object = object()  # replaced after every change
        self.view: tuple[object, frozenset[Hashable]] | None = None  # readers' union of a stamp


class Node:
    """A trie node: literal children, the ``*`` and ``#`` children, the subscribers ending here.

    ``children`` is the dict of literal children (word -> node), shared with every other node
    that has none (:data:`NO_CHILDREN`, so a leaf holds no dict of its own); ``star`` and
    ``hash`` the wildcard children. A plain class with slots, hashed and compared by identity
    (as the DFA's sets of nodes need), so that compiled, it is a native class whose fields a
    lookup's step reads straight from the object: the walk of distinct topics ran 1.8x as fast
    compiled as interpreted this way, and 0.9x as a subclass of ``dict`` (the node as its own
    dict of children, which interpreted saves a step per word: docs/compiled.md).

    Readers look at ``subs``: the union of the subscribers of the patterns that end here, a
    frozenset replaced whole on every change, or None for a big node (more than :data:`SMALL`
    pairs here) changed since a reader last looked (see :func:`materialize`). Writers keep
    ``by_pattern`` (pattern -> its subscribers: a frozenset while small, a set once big, so that a
    subscribe or unsubscribe of one pair costs O(1) whatever the pattern's size) and, for a big
    node, ``big`` (:class:`Big`: subscriber -> how many of the patterns here hold it, and the
    pairs). So a write costs O(pairs written + SMALL), never O(the node's patterns or
    subscribers): a small node's pairs are counted from ``by_pattern`` at each change, O(its
    patterns), which are at most SMALL + 1; a reader pays O(the node's subscribers) once after a
    change, as any lookup that returns them must.

    Layout: 8 fields. A million subscriptions (the realistic AMQP table of ``topicmatch bench
    memory``) make about 1.2 nodes each, so a field costs about 10 bytes per subscription; a node
    takes 96 bytes interpreted, 104 compiled (a native instance also points to its class's method
    table; sizes with the collector's header), a fifth of such a table's bytes (the rest: the
    dicts of children and of patterns, the subscribers' frozensets, the patterns' text). What
    only big nodes use lives in one :class:`Big`, None while small: that took 3 fields from
    every node, and the trie's bytes per subscription at a million from 592 to 564 compiled and
    from 583 to 554 interpreted
    (``benchmarks/compiled.py 1 memory``: docs/compiled.md). The walks read ``children``,
    ``star``, ``hash`` and ``subs`` straight from the node; ``is_hash`` (read for every alive
    node by the general walk and the DFA) and ``gen`` (read by every write) stay fields too.
    """

    __slots__ = ("big", "by_pattern", "children", "gen", "hash", "is_hash", "star", "subs")

    def __init__(self, is_hash: bool = False, gen: object = None) -> None:
        self.children: dict[str, Node] = NO_CHILDREN
        self.gen = gen  # the trie generation that may change this node in place (see copy_for)
        self.star: Node | None = None
        self.hash: Node | None = None
        self.is_hash = is_hash
        self.subs: frozenset[Hashable] | None = EMPTY
        self.by_pattern: dict[str, frozenset[Hashable] | set[Hashable]] = NO_PATTERNS
        self.big: Big | None = None  # big nodes only

    def copy_for(self, gen: object) -> Node:
        """A copy of this node that generation ``gen`` may change, for a writer that must leave
        the node itself as it is (a snapshot of the trie holds it: :meth:`TrieIndex.snapshot`).

        O(children + pairs here): the containers writers change in place (the node's children,
        the patterns' sets of a big node, its counts) are copied; the frozensets are shared.
        """
        new = Node(self.is_hash, gen)
        if self.children:
            new.children = dict(self.children)
        new.star, new.hash = self.star, self.hash
        if self.by_pattern:
            new.by_pattern = {p: s if type(s) is frozenset else set(s) for p, s in self.by_pattern.items()}
        new.subs = self.subs
        big = self.big
        if big is not None:
            new.big = Big(dict(big.counts), big.pairs)
        return new

    def link(self, token: Token, node: Node | None) -> None:
        if token is STAR:
            self.star = node
        elif token is HASH:
            self.hash = node
        elif node is None:
            children = self.children
            del children[token]
            if not children:
                self.children = NO_CHILDREN  # a leaf again: its dict goes
        else:
            children = self.children
            if children is NO_CHILDREN:
                children = self.children = {}
            # Interned: every node's key for a word is then one shared string, which stays in
            # the CPU's cache, instead of a string of its own per node that a lookup's probe
            # reads from memory (a dict compares the key's stored hash and text). Measured on
            # the matrix's distinct-topics row: CHANGELOG.md, "Performance history". Interned
            # strings are mortal: they go with the last node using them.
            children[intern(token)] = node

    def is_empty(self) -> bool:
        return not self.by_pattern and not self.children and self.star is None and self.hash is None

    # -- writers (the trie's lock held) ---------------------------------------------------
    def add(self, pattern: str, subscribers: frozenset[Hashable], small: int = SMALL) -> int:
        """Add ``subscribers`` to ``pattern`` here; how many were new. O(len(subscribers) + small):
        a node with more than ``small`` pairs is big (the class docstring; the trie's ``small``)."""
        by_pattern = self.by_pattern
        if by_pattern is NO_PATTERNS:
            by_pattern = self.by_pattern = {}
        old = by_pattern.get(pattern)
        if old is None:
            fresh = subscribers
            by_pattern[pattern] = subscribers if len(subscribers) <= small else set(subscribers)
        else:
            fresh = subscribers.difference(old)  # O(len(subscribers))
            if not fresh:
                return 0
            if type(old) is set:
                old |= fresh
            else:
                merged = old | fresh
                by_pattern[pattern] = merged if len(merged) <= small else set(merged)
        self._publish(fresh, EMPTY, small)
        return len(fresh)

    def remove(self, pattern: str, subscribers: frozenset[Hashable], small: int = SMALL) -> int:
        """Remove ``subscribers`` from ``pattern`` here; how many were here. O(len(subscribers)
        + small), published in one change, as :meth:`add`."""
        by_pattern = self.by_pattern
        old = by_pattern.get(pattern)
        if old is None:
            return 0
        gone = subscribers.intersection(old)  # O(len(subscribers))
        if not gone:
            return 0
        if len(gone) == len(old):
            del by_pattern[pattern]
        elif type(old) is set:
            old -= gone
        else:
            by_pattern[pattern] = old - gone
        self._publish(EMPTY, gone, small)
        return len(gone)

    def _publish(self, added: frozenset[Hashable], removed: frozenset[Hashable], small: int) -> None:
        """Bring the readers' view up to date after a change of the patterns here: ``added`` and
        ``removed`` are the subscribers the change gave and took (one pattern's).

        Small node (``small`` pairs at most): its pairs counted and the new union, O(small).
        Big node: its :class:`Big`'s ``counts`` follows the change, a new ``stamp`` tells
        readers their cached union is old, and ``subs`` is None. The order of the stores
        matters for lock-free readers: ``big`` is complete before ``subs`` is None, and ``subs``
        is a frozenset again before ``big`` goes.
        """
        big = self.big
        if big is None:
            values = list(self.by_pattern.values())  # small before this change: O(small) patterns
            pairs = 0
            for subs in values:
                pairs += len(subs)
            if pairs <= small:
                self.subs = _united(values)
                return
            counts: dict[Hashable, int] = {}
            for subs in values:
                for subscriber in subs:
                    counts[subscriber] = counts.get(subscriber, 0) + 1
            self.big = Big(counts, pairs)
            self.subs = None
            return
        pairs = big.pairs + len(added) - len(removed)
        if pairs <= small:  # small again: at most small patterns
            self.subs = _united(list(self.by_pattern.values()))
            self.big = None
            return
        counts = big.counts
        for subscriber in added:
            counts[subscriber] = counts.get(subscriber, 0) + 1
        for subscriber in removed:
            left = counts[subscriber] - 1
            if left:
                counts[subscriber] = left
            else:
                del counts[subscriber]
        big.pairs = pairs
        big.stamp = object()
        self.subs = None

    def patterns(self) -> Iterator[tuple[str, frozenset[Hashable]]]:
        """Each pattern ending here with a frozenset of its subscribers (of a node no writer
        changes: the lock held, or a snapshot's)."""
        for pattern, subs in self.by_pattern.items():
            yield pattern, subs if type(subs) is frozenset else frozenset(subs)


def _united(values: list[frozenset[Hashable] | set[Hashable]]) -> frozenset[Hashable]:
    """The union of a small node's patterns' sets (``values``), as a frozenset: O(their sizes)."""
    if not values:
        return EMPTY
    if len(values) == 1:
        only = values[0]
        return only if type(only) is frozenset else frozenset(only)
    return frozenset().union(*values)


def materialize(node: Node) -> frozenset[Hashable]:
    """The subscribers of ``node`` when its ``subs`` is None: a big node changed since a reader
    last looked. Computed from the writers' ``counts`` (:class:`Big`) and kept in its ``view``
    under its current stamp, so that the next reader of the same state of the node reuses it.

    Lock-free like the rest of the read path, whose lookup discards what it read during a
    change (:mod:`._versions`). What it keeps for later readers relies on CPython's GIL making
    ``frozenset(dict)`` one step that a writer cannot interleave with (the dict holds its keys'
    hashes; copying it runs no Python code for str and int subscribers), and a union kept under
    a stamp that a writer has since replaced is never used again.
    """
    while True:
        subs = node.subs
        if subs is not None:
            return subs  # small again
        big = node.big
        if big is None:
            continue  # turning small: subs is already a frozenset again
        stamp = big.stamp
        view = big.view
        if view is not None and view[0] is stamp:
            return view[1]
        subs = frozenset(big.counts)
        big.view = (stamp, subs)
        return subs


def subs_of(node: Node) -> frozenset[Hashable]:
    """The subscribers of the patterns ending at ``node``."""
    subs = node.subs
    return materialize(node) if subs is None else subs


def step(alive: Iterable[Node], word: str, dollar_root: Node | None = None) -> dict[Node, None]:
    """One word of the NFA walk: the nodes alive after ``word``, given those alive before it.

    A dict is an ordered set: a node reached twice is kept once, which is what keeps ``#``
    polynomial. A ``#`` node stays alive (it absorbs the word too), and reaching a node also
    reaches its ``#`` child (zero words). ``dollar_root`` is MQTT's ``$`` rule for the first
    word: only the literal branch of that root is taken, no leading wildcard.
    """
    out: dict[Node, None] = {}
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


def union_of(found: list[frozenset[Hashable]]) -> frozenset[Hashable]:
    """The union of the sets a walk gathered: no allocation for zero or one set, one union else.

    Two or three sets are united with ``|`` (no argument tuple, no empty set to start from), more
    with ``EMPTY.union`` (the shared empty set, not a new one per call); a walk of the workload
    matrix's distinct topics gathers one to five small sets, where these steps are a measurable
    part of a lookup (CHANGELOG.md, "Performance history").
    """
    n = len(found)
    if n == 2:
        return found[0] | found[1]
    if n == 3:
        return found[0] | found[1] | found[2]
    if n > 3:
        return EMPTY.union(*found)
    return found[0] if n else EMPTY


#: The union memo (:class:`Unions`): its slots (a power of two), the fewest subscribers a union
#: must hold to be kept (uniting fewer costs a few hundred ns, a hit about 200: CHANGELOG.md,
#: "Performance history"), and the unions per judgement of whether it pays.
UNION_SLOTS: Final = 1024
UNION_MIN: Final = 64
#: The sets, or the size of the first set, that make a union worth asking the memo for.
UNION_GATE: Final = 16
UNION_WINDOW: Final = 1024
_UNION_MASK: Final = UNION_SLOTS - 1
#: Unions the memo stays off after a judgement that failed, first and at most.
UNION_BACKOFF: Final = 16 * UNION_WINDOW
UNION_MAX_BACKOFF: Final = 64 * UNION_WINDOW
#: A window pays when its hits saved at least this many subscribers' insertions per probe: a
#: hit (a tuple of the sets, its hash, a slot) costs about what uniting 16 subscribers does
#: (CHANGELOG.md, "Performance history")...
UNION_PAYS: Final = 16
#: ... plus a part of the subscribers of the unions its misses made: a miss hashes sets seen for
#: the first time and keeps its union in place of one the CPU's caches held, a cost that grows
#: with the union. At a million subscriptions, where topics seen once unite 11,000 subscribers
#: and rarely the same sets, the first lookups with the memo held on ran at 0.91-0.96 of the rate
#: without it compiled and 0.79-0.91 pure, though its hits saved 29 insertions per probe: a miss
#: cost 0.04-0.27 of what uniting its subscribers does (CHANGELOG.md, "Performance history"). A quarter errs
#: high: the shipped default at a million subscriptions is the workload matrix's subs-1M row
#: (docs/performance.md).
UNION_MISS_SHARE: Final = 4


class Unions:
    """A memo of the unions a trie's walks made, keyed by the very sets they united.

    Half of a lookup that returns a few hundred subscribers is their union (one insertion per
    subscriber), and a topic that comes again unites the same sets again. A write replaces only
    the sets of the patterns it changes, so under subscription churn most topics' sets stay the
    same from one lookup to the next while a cache of *topics* loses every topic a write's
    pattern matches; and with many subscribers on a few patterns (fan-out), every topic unites
    the same few big sets. Keyed by the tuple of the sets themselves, a memoised union is right
    by construction: the same sets have the same union, whatever was written since, so nothing
    is ever invalidated.

    Direct-mapped: :data:`UNION_SLOTS` slots, one entry each, chosen by the key's hash; a new
    union replaces the entry in its slot. So a store frees what it replaces, and the memo adds
    no work for CPython's cyclic collector (a dict of entries, cleared when full, made the
    collector take a third of a churning lookup's time, as each store left new tracked objects:
    CHANGELOG.md, "Performance history").
    Only unions of at least ``keep`` (:data:`UNION_MIN`) subscribers are kept.

    Bounded in bytes: each entry is charged its union, its key and the key's sets (which a
    write may have replaced in the trie, leaving them to the memo), by an estimate from their
    sizes that errs high (:meth:`_keep`); a union charged more than half of ``max_bytes`` is
    never kept, and one that would take the charge past ``max_bytes`` makes room by dropping
    entries in slot order from a clock hand. So the memo holds at most ``max_bytes`` by this
    charge (tests/test_unions.py traces it), whatever the traffic. The running charge is
    recounted at every judgement: races between readers skew it for one window at most.

    Whether it pays is judged by its :class:`~.governor.Governor`: every :data:`UNION_WINDOW`
    probes, if its hits saved fewer than :data:`UNION_PAYS` subscribers' insertions per probe
    plus one in :data:`UNION_MISS_SHARE` of the subscribers its misses united (topics that do
    not repeat, small unions, big unions that rarely come again), it empties itself and unites
    without probing for :data:`UNION_BACKOFF` unions, doubling up to :data:`UNION_MAX_BACKOFF`.
    Readers share it without a lock: a slot's store is one atomic store of an immutable entry,
    and a lost count only moves a judgement.

    >>> memo = Unions(max_bytes=1 << 20)
    >>> a, b = frozenset(range(40)), frozenset(range(40, 80))
    >>> memo.of([a, b]) is memo.of([a, b])   # the second is the memo's
    True
    """

    __slots__ = ("bytes", "gate", "governor", "hand", "keep", "max_bytes", "missed", "saved", "slots")

    def __init__(self, max_bytes: int, keep: int = UNION_MIN, gate: int = UNION_GATE) -> None:
        self.max_bytes = max_bytes
        self.keep = keep  # the fewest subscribers a union holds to be kept
        self.gate = gate  # the sets, or the size of the first, that make it worth a probe
        self.slots: list[tuple[tuple[frozenset[Hashable], ...], frozenset[Hashable], int] | None] = [
            None
        ] * UNION_SLOTS
        self.bytes = 0  # the charge of the entries held
        self.hand = 0  # the next slot to drop when the charge must make room (see _keep)
        self.governor = Governor(UNION_WINDOW, UNION_BACKOFF, UNION_MAX_BACKOFF, self._paid)
        self.saved = 0  # subscribers' insertions the window's hits saved
        self.missed = 0  # subscribers of the unions the window's misses made

    def of(self, found: list[frozenset[Hashable]]) -> frozenset[Hashable]:
        """The union of ``found``, as :func:`union_of`, from the memo when it holds it. O(1) on a
        hit; else the union, O(its size), and O(1) amortised to keep it.

        Only unions that may be big go near the memo and its governor: of ``gate`` sets or more
        (a topic that many patterns match, as under churn), or whose first set is that big (a
        fan-out: the walk gathers a ``#`` leaf's set, the broadest, first). The others (a few
        small sets: most lookups of most tables) are united at once, at the cost of two
        comparisons.
        """
        n = len(found)
        if n < 2:
            return found[0] if n else EMPTY
        gate = self.gate
        if n >= gate or len(found[0]) >= gate:
            governor = self.governor
            governor.left -= 1  # a probe of the window (on), or a union of the wait (off)
            if governor.left <= 0:
                governor.expire()
            if governor.on:
                return self._probe(found)
        # union_of's cases, written out: no frame of its own for the walk to pay.
        if n == 2:
            return found[0] | found[1]
        if n == 3:
            return found[0] | found[1] | found[2]
        return EMPTY.union(*found)

    def _probe(self, found: list[frozenset[Hashable]]) -> frozenset[Hashable]:
        """The union of two sets or more, from its slot if the entry there has the same sets,
        else made and kept (if it holds :data:`UNION_MIN` subscribers)."""
        key = tuple(found)
        slot = hash(key) & _UNION_MASK
        entry = self.slots[slot]
        if entry is not None and entry[0] == key:  # the same sets (identity first, cheap)
            result = entry[1]
            self.saved += len(result)
            return result
        result = union_of(found)
        size = len(result)
        self.missed += size
        if size >= self.keep:
            self._keep(slot, key, result, entry)
        return result

    def _keep(
        self,
        slot: int,
        key: tuple[frozenset[Hashable], ...],
        result: frozenset[Hashable],
        old: tuple[tuple[frozenset[Hashable], ...], frozenset[Hashable], int] | None,
    ) -> None:
        """Put the union in its slot, in place of ``old``; if the charge would then pass
        ``max_bytes``, drop entries from the clock hand on until it fits (at most one turn of
        the slots: O(UNION_SLOTS) for this store, O(1) amortised, as each entry goes once)."""
        # Estimated from sizes, not measured: sys.getsizeof calls each set's __sizeof__, and
        # charging a store that way took much of what the memo saved under churn. A set's
        # table is at least a quarter full, so 64 bytes per element (16 per slot) and 256 per
        # set (its header, or the table of a set of a few) bound what getsizeof would say.
        charge = 64 * (len(result) + sum(map(len, key))) + 256 * (len(key) + 2)
        if charge > self.max_bytes >> 1:
            return  # a union this big would leave room for few others
        slots = self.slots
        if old is not None:
            self.bytes -= old[2]
            slots[slot] = None
        hand = self.hand
        for _ in range(UNION_SLOTS):
            if self.bytes + charge <= self.max_bytes:
                break
            entry = slots[hand]
            if entry is not None:
                slots[hand] = None
                self.bytes -= entry[2]
            hand = (hand + 1) & _UNION_MASK
        self.hand = hand
        slots[slot] = (key, result, charge)
        self.bytes += charge

    def _paid(self) -> bool:
        """The governor's test of a window: did the hits save :data:`UNION_PAYS` insertions per
        probe, plus one in :data:`UNION_MISS_SHARE` of the subscribers the misses united? If
        not, the memo empties itself (its governor then keeps it off a while)."""
        pays = self.saved >= UNION_PAYS * UNION_WINDOW + self.missed // UNION_MISS_SHARE
        if not pays:
            self.slots = [None] * UNION_SLOTS
        self.bytes = sum(entry[2] for entry in self.slots if entry is not None)
        self.saved = self.missed = 0
        return pays


def finish_leaves(
    frontier: list[Node], found: list[frozenset[Hashable]], words: Iterable[str], union: Union = union_of
) -> frozenset[Hashable]:
    """Walk on over ``words`` from the nodes alive before them, in a trie whose ``#`` nodes are
    all leaves; ``found`` holds the subscriber sets gathered so far and is extended.

    A ``#`` leaf matches whatever follows the node it hangs from, zero words included, so its
    subscribers are gathered as soon as that node is reached and the leaf is not kept alive.
    Then no node can be reached twice (each node has one path from the root), and the frontier
    is a plain list: no set, no de-duplication. The workload matrix's MQTT rows take this walk
    (docs/performance.md).

    While one node is alive and has no ``*`` child, the walk follows its literal child alone,
    with no list: a walk that leaves the table at the first word (a topic nobody subscribed to)
    or runs down a branch of literals costs a dict access per word (what such a lookup costs
    in all: ``benchmarks/paho_bound.py``).
    """
    rest = iter(words)
    if len(frontier) == 1:
        node = frontier[0]
        for word in rest:
            child = node.children.get(word)
            star = node.star
            if star is None:
                if child is None:
                    return union(found)
                if child.hash is not None:
                    found.append(subs_of(child.hash))
                node = child
                continue
            if star.hash is not None:
                found.append(subs_of(star.hash))
            if child is None:
                frontier = [star]
            else:
                frontier = [child, star]
                if child.hash is not None:
                    found.append(subs_of(child.hash))
            break
        else:
            frontier = [node]  # every word taken: the collection below finishes
    for word in rest:
        nxt: list[Node] = []
        for node in frontier:
            child = node.children.get(word)
            if child is not None:
                nxt.append(child)
                if child.hash is not None:
                    found.append(subs_of(child.hash))
            child = node.star
            if child is not None:
                nxt.append(child)
                if child.hash is not None:
                    found.append(subs_of(child.hash))
        if not nxt:
            return union(found)
        frontier = nxt
    for node in frontier:
        subs = node.subs
        if subs:
            found.append(subs)
        elif subs is None:
            found.append(materialize(node))
    return union(found)


def walk_leaves(
    root: Node, words: list[str], dollar_rule: bool, union: Union = union_of
) -> frozenset[Hashable]:
    """The subscribers of ``words`` in a trie whose ``#`` nodes are all leaves (no ``#`` is
    followed by a word: every MQTT and NATS table, and most AMQP ones)."""
    if root.star is None and root.hash is None:
        # No wildcard at the first level: MQTT's '$' rule has nothing to exclude, and checking
        # for it was a tenth of a lookup of a topic nobody subscribed to.
        return finish_leaves([root], [], words, union)
    found: list[frozenset[Hashable]] = []
    if dollar_rule and words and words[0][:1] == "$":
        # MQTT's '$' rule: no wildcard at the first level; only the literal branch.
        child = root.children.get(words[0])
        if child is None:
            return EMPTY
        if child.hash is not None:
            found.append(subs_of(child.hash))
        rest = iter(words)
        next(rest)
        return finish_leaves([child], found, rest, union)
    if root.hash is not None:
        found.append(subs_of(root.hash))
    return finish_leaves([root], found, words, union)


def walk_general(
    root: Node, words: list[str], dollar_rule: bool, union: Union = union_of
) -> frozenset[Hashable]:
    """The subscribers of ``words`` in any trie, ``#`` followed by words included (``a.#.b``)."""
    if dollar_rule and words and words[0][:1] == "$":
        # MQTT's '$' rule: no wildcard at the first level; only the literal branch.
        alive = step((), words[0], root)
        rest = iter(words)
        next(rest)
        return finish_general(alive, rest, union) if alive else EMPTY
    alive = {root: None}
    if root.hash is not None:
        alive[root.hash] = None
    return finish_general(alive, words, union)


def finish_general(
    alive: dict[Node, None], words: Iterable[str], union: Union = union_of
) -> frozenset[Hashable]:
    """Walk on over ``words`` from the nodes ``alive`` before them, in any trie.

    The NFA walk of the module docstring, one :func:`step` per word: the alive set is a dict (an
    ordered set), because a ``#`` node that stays alive can reach a node another path reaches.
    (:func:`step` was inlined here once; calling it costs 2 % of such a walk: 11.21 against
    10.95 µs per lookup, medians of 9, on 10,000 AMQP patterns with an inner ``#``:
    CHANGELOG.md, "Performance history"; no row of the workload matrix takes this walk.)
    """
    for word in words:
        alive = step(alive, word)
        if not alive:
            return EMPTY
    return union([subs_of(node) for node in alive if node.subs is None or node.subs])
