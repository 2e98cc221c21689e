"""The one write discipline of the core: a version that is odd while a change is published.

Every index (:mod:`._index`) and the result cache (:mod:`._engine.cache`) inherit :class:`Versioned`
and follow the same three rules; each store they rely on is commented where it happens.

1. **Writers serialise on ``_lock``**. For most structures the lock is held for the whole
   write; the cstrie, whose writers copy nodes without any lock, holds it only for its
   compare-and-set, which is the write's one publishing store.
2. **A change is bracketed by two moves of the version**: odd before the first store a reader
   could see, even again after the last one (``self._version += 1`` twice, written out as
   :class:`Versioned` shows; the trie's bulk calls bracket each pattern's change under one
   hold of the lock). The order is what matters: *odd before the first store, even after the
   last*. A store that changes no lookup's result (a node replaced by its copy, a structure
   built off to the side and not yet linked) needs no bracket.
3. **Readers take no lock.** A reader reads ``_version``, computes, and keeps its result only if
   the version was even and is unchanged (:meth:`Versioned._read`, or written out the same way on
   the hot paths); otherwise a change overlapped and it retries, first yielding the GIL to the
   writer (``time.sleep(0)``) rather than spinning. A result kept was computed entirely between
   two changes, so it is the state of one instant (linearizable). A reader retries only because
   a writer is working, so it never waits on a lock, and a structure caching something derived
   from the state (the trie's DFA) uses it only at an even version it was derived at.

Under CPython's GIL each of these reads and stores of an attribute is one bytecode, executed in
program order, so no memory fence is needed. ``tests/test_concurrency.py`` pins the rules for
every index: a writer's steps run in the middle of a lookup, deterministically, and the tests
fail when a validation or a bracket is removed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["Versioned", "yield_to_writer"]

T = TypeVar("T")

#: What a reader does before it retries: give the GIL to the writer that moved the version.
yield_to_writer = time.sleep


class Versioned:
    """The writers' lock and the version of rules 1-3 (module docstring). A change is written
    out where it happens, the same way everywhere::

        with self._lock:
            self._version += 1  # odd before the first store
            try:
                ...  # the stores
            finally:
                self._version += 1  # even after the last

    (``with self._lock`` is the lock's own C-level context manager: a write allocates nothing
    for it. A ``contextlib.contextmanager`` of our own here cost 0.3-0.7 µs per write, 5-10 % of
    a trie's: ``.venv/bin/python benchmarks/write_cost.py 3``, run twice alternated with the
    commit before the discipline, collector off.)
    """

    __slots__ = ("_lock", "_version")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version = 0  # odd while a change is being published

    def _read(self, compute: Callable[[], T]) -> T:
        """Run ``compute`` until it ran entirely between two changes; its result (rule 3)."""
        while True:
            version = self._version
            if not version & 1:
                result = compute()
                if self._version == version:
                    return result
            yield_to_writer(0)
