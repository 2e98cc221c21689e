"""Pausing CPython's cyclic garbage collector while a bulk write builds long-lived structures.

Building a matcher allocates many container objects (trie nodes, their dicts and frozensets)
that all live on: none is garbage. The collector runs anyway every few hundred allocations and,
every few of those runs, traverses every object of the process, the structure being built
included, so a bulk build slows down as it grows. Measured (``benchmarks/broker_api.py``):
``subscribe_many`` of 1M MQTT subscriptions on the default matcher about 2x faster
with the collector paused. Reference counting still frees what dies meanwhile; only cycles wait
until the collector resumes.

The trie as laid out is made of objects the collector tracks: its nodes (instances of a class),
their dicts of children (which hold nodes) and the frozensets of subscribers (a set is tracked
whatever it holds). CPython stops tracking a dict or a tuple that holds only strings, ints and
such tuples, so another layout (numbered nodes in such dicts) would not be traversed at all;
with this one, the library pauses the collector inside its bulk calls, and a full collection
walks every node (``benchmarks/collector_load.py``: docs/performance.md, "What the cyclic
collector walks").
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


class _Pauses:
    """The bulk builds under way in every thread, and whether the first one paused the collector."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.paused_by_us = False
        self.mine = threading.local()  # .depth: the blocks this thread has open

    def after_fork_in_child(self) -> None:
        """Only the forking thread lives on in a forked child: the blocks other threads had
        open never end there (and one of them may have held the lock)."""
        self.lock = threading.Lock()
        self.depth = getattr(self.mine, "depth", 0)
        if self.depth == 0 and self.paused_by_us:
            self.paused_by_us = False
            gc.enable()


_pauses = _Pauses()
os.register_at_fork(after_in_child=_pauses.after_fork_in_child)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block; safe from many threads at once.

    The collector stays paused until the last of the overlapping blocks ends, and is switched
    back on only if it was on when the first began (a program that keeps it off itself keeps it
    off). gc.disable/enable are process-wide: a depth count under a lock, rather than each
    block saving and restoring the flag, keeps one thread's block from switching the collector
    back on while another thread's block still runs. A child forked meanwhile keeps only its
    own thread's blocks.
    """
    state = _pauses
    with state.lock:
        if state.depth == 0:
            state.paused_by_us = gc.isenabled()
            gc.disable()
        state.depth += 1
        state.mine.depth = getattr(state.mine, "depth", 0) + 1
    try:
        yield
    finally:
        with state.lock:
            state.mine.depth -= 1
            state.depth -= 1
            if state.depth == 0 and state.paused_by_us:
                gc.enable()
