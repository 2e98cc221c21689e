"""The Python worker's own cost in a ``route`` job, without Spark: matching and expansion.

Usage: ``.venv/bin/python benchmarks/worker_lookups.py DATA_DIR [ROUNDS]``
(``DATA_DIR``: a case of ``topicmatch bench pipeline``, e.g. ``out/bench/pipeline/data/1Mx1k``;
``ROUNDS`` default 5).

One pass = what the workers of one cold ``route`` run do with every message: build the matcher
from the shipped pairs, then ``route_batch`` on batches of 20,000 messages (the size the command
line asks Spark for), all in this one process. Variants, alternated in every round (each round
starting one variant later), each on a
fresh matcher, with two older matchers kept alive as a worker keeps its last versions:

* ``levels``: as shipped: plain topics walked through the DFA together, level by level
  (``topicmatch.spark._levels``), the cyclic garbage collector paused meanwhile;
* ``levels, generic steps``: the same with the DFA's cold steps taken as they were before each
  state kept its fixed part and children dicts (:meth:`topicmatch._dfa.DFA._step`): the trie's
  ``step`` over every node of the state, and a new set per step;
* ``levels, np.unique``: the same with ``np.unique(keys, return_inverse=True)`` (a sort) where
  the shipped code factorizes with Arrow's hash table (``topicmatch.spark._levels.factorize``);
* ``one by one``: every topic through ``Matcher.lookup`` and the topic cache (the path taken
  before the level walk, and still taken by topics that are not plain);
* ``one by one, gc on``: the same with the collector left running (the path before both).

Printed: median seconds of the build and of the pass, per variant, and their ratios.

Figures: docs/pipeline.md (a Spark worker's lookups), ``topicmatch._dfa`` and
``topicmatch.spark``'s worker. It swaps parts of the Spark worker and of the DFA to time them,
which no public name allows: listed in tests/test_architecture.py as a script that still reaches
inside.
"""

from __future__ import annotations

import contextlib
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
import pyarrow.dataset as ds  # type: ignore[import-untyped, unused-ignore]

from topicmatch._dfa import DFA, _State
from topicmatch._walk import step
from topicmatch.spark import Subscriptions, _levels, _worker
from topicmatch.spark._worker import Compiled, route_batch

BATCH_ROWS = 20_000


def generic_step(self: DFA, state: _State, word: str) -> _State:
    """``DFA._step`` before the split: one ``_trie.step`` over all the nodes, then the lookup."""
    nodes = state.nodes
    if not nodes:
        return state
    dollar = state.first and self.dollar_rule and word[:1] == "$"
    return self._remember(state, word, frozenset(step(nodes, word, self.trie_root if dollar else None)))


def sorted_factorize(keys: Any) -> tuple[Any, Any]:
    """``factorize`` as it was: ``np.unique`` with the inverse, which sorts the keys."""
    return np.unique(keys, return_inverse=True)  # type: ignore[no-any-return, unused-ignore]


def main() -> None:
    data, rounds = Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 5
    table = Subscriptions.read(data / "subscriptions.parquet")
    messages = ds.dataset(data / "messages").to_table()
    topic_index = messages.schema.get_field_index("topic")
    batches = messages.to_batches(max_chunksize=BATCH_ROWS)
    payload = table.payload()
    kept: list[Compiled] = []

    def one_pass(
        walk: bool, gc_paused: bool, generic: bool = False, sort: bool = False
    ) -> tuple[float, float]:
        paused, stepper, factorize = _worker._cyclic_gc_paused, DFA._step, _levels.factorize
        # The worker imported factorize by name: patch it there too (not re-exported, hence the
        # ignores).
        if generic:
            DFA._step = generic_step  # type: ignore[method-assign]
        if sort:
            _levels.factorize = _worker.factorize = sorted_factorize  # type: ignore[attr-defined]
        if not gc_paused:
            _worker._cyclic_gc_paused = contextlib.nullcontext  # type: ignore[assignment]
        try:
            gc.collect()  # no variant pays for the garbage or the collector debt of the one before
            began = time.perf_counter()
            compiled = Compiled(table.dialect, table.pedantic, payload)
            built = time.perf_counter()
            if not walk:
                compiled._walker = None
            values = compiled.subscribers_as(batches[0].schema.field(topic_index).type)
            item = pa.field("element", values.type, nullable=False)
            schema = batches[0].schema.append(pa.field("subscriber", pa.list_(item), nullable=False))
            for batch in batches:
                for _ in route_batch(batch, topic_index, compiled, schema, 1 << 20):
                    pass
            done = time.perf_counter()
        finally:
            _worker._cyclic_gc_paused = paused
            DFA._step = stepper  # type: ignore[method-assign]
            _levels.factorize = _worker.factorize = factorize  # type: ignore[attr-defined]
        kept.append(compiled)
        del kept[:-3]
        return built - began, done - built

    variants: dict[str, Callable[[], tuple[float, float]]] = {
        "levels": lambda: one_pass(True, True),
        "levels, generic steps": lambda: one_pass(True, True, generic=True),
        "levels, np.unique": lambda: one_pass(True, True, sort=True),
        "one by one": lambda: one_pass(False, True),
        "one by one, gc on": lambda: one_pass(False, False),
    }
    for run in variants.values():  # warm-up, and the older matchers a worker would keep
        run()
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    names = list(variants)
    for turn in range(rounds):  # each round starts one variant later: none always follows the same
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            results[name].append(variants[name]())
    print(f"{data}: {messages.num_rows:,} messages, {len(table.patterns):,} subscriptions, {rounds} rounds")
    base = statistics.median(r[1] for r in results["levels"])
    for name, runs in results.items():
        build = statistics.median(r[0] for r in runs)
        work = statistics.median(r[1] for r in runs)
        print(f"{name:22s} build {build:6.3f} s  pass {work:6.3f} s  ({work / base:4.2f}x levels)")


if __name__ == "__main__":
    main()
