"""The default with this tree's result cache against the default with the cache of a git revision:
what a change to ``_cache.py`` alone earns, pure build, on a fresh matcher.

    TOPICMATCH_PURE=1 .venv/bin/python benchmarks/cache_revision.py REV [ROWS] [--rounds N] [--window N]

``REV``'s ``src/topicmatch/_cache.py`` is read with ``git show`` (into memory, no file) and loaded
as a module of the installed package, so it imports this tree's other modules: a revision whose
cache needs other files of its own time will not load. Per round (default 15) and row
(``default_parts``' rows; default ``unmatched,zipf,distinct,unmatched-once``), four variants, each
in a child forked from the process holding the row: ``old`` (the default with ``REV``'s cache),
``new`` (as this tree builds it), ``no cache`` and ``trie``. Each child first allocates a random
number of small objects, so that every round meets another layout of the heap (a pure lookup's
timing moves by several per cent with where its objects land, docs/performance.md), then runs
the row's first ``--window`` lookups (default 10,000) under the thread's CPU clock. Printed per
row: each variant's median rate, then the median of the rounds' ratios with their interquartile
range: ``old`` and ``new`` against ``no cache`` and ``trie``, and ``new`` against ``old``. Pure
build only: the compiled build's cache is a C extension, and ``REV``'s would run as Python.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time
import types
from functools import partial

import default_parts  # benchmarks/default_parts.py, beside this script

import topicmatch
from topicmatch import Matcher
from topicmatch.bench import shapes

VARIANTS = ("old", "new", "no cache", "trie")


def _old_cache(revision: str) -> types.ModuleType:
    """``revision``'s ``_cache.py`` as a module of the installed package (relative imports work)."""
    source = subprocess.run(
        ["git", "show", f"{revision}:src/topicmatch/_cache.py"], capture_output=True, text=True, check=False
    )
    if source.returncode:
        raise SystemExit(f"git show {revision}:src/topicmatch/_cache.py: {source.stderr.strip()}")
    module = types.ModuleType("topicmatch._cache_at_revision")
    module.__package__ = "topicmatch"
    sys.modules[module.__name__] = module
    exec(compile(source.stdout, f"{revision}:_cache.py", "exec"), module.__dict__)
    return module


def _child(old: types.ModuleType, shape: shapes.Shape, variant: str, window: int) -> str:
    rng = random.Random()
    padding = [bytearray(rng.randrange(16, 512)) for _ in range(rng.randrange(1, 2000))]
    m: Matcher[object] = default_parts._matcher("default" if variant in ("old", "new") else variant, shape)
    if variant == "old":
        cache = m._cache
        assert cache is not None
        assert not len(cache)  # built, nothing cached yet: the old one starts where it would
        m._cache = old.ResultCache(cache.max_size, cache.max_bytes, cache._parse, cache.dollar_rule)
    lookup, topics = m.lookup, shape.topics[:window]
    start = time.thread_time()
    for topic in topics:
        lookup(topic)
    rate = window / (time.thread_time() - start)
    del padding
    return f"{rate}"


def _run(old: types.ModuleType, row: str, rounds: int, window: int) -> None:
    shape = default_parts._shape(row)
    rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for _ in range(rounds):
        for variant in VARIANTS:
            rates[variant].append(float(default_parts.forked(partial(_child, old, shape, variant, window))))
    print(f"{row}, first {window:,} lookups, {rounds} rounds:")
    print("  " + ", ".join(f"{v} {statistics.median(rates[v]):,.0f}/s" for v in VARIANTS))
    pairs = [("old", "no cache"), ("old", "trie"), ("new", "no cache"), ("new", "trie"), ("new", "old")]
    for mine, other in pairs:
        ratios = sorted(a / b for a, b in zip(rates[mine], rates[other], strict=True))
        low, high = ratios[len(ratios) // 4], ratios[3 * len(ratios) // 4]
        print(f"  {mine} ÷ {other}: {statistics.median(ratios):.3f} (quartiles {low:.2f}-{high:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("revision", help="a git revision whose _cache.py is the 'old' variant")
    parser.add_argument("rows", nargs="?", default="unmatched,zipf,distinct,unmatched-once")
    parser.add_argument("--rounds", type=int, default=15, help="rounds per row (default 15)")
    parser.add_argument("--window", type=int, default=10_000, help="lookups per round (default 10,000)")
    args = parser.parse_args()
    if topicmatch.BUILD != "pure":
        raise SystemExit("pure build only: run with TOPICMATCH_PURE=1")
    old = _old_cache(args.revision)
    print(f"the default with the cache of {args.revision} (old) and of this tree (new), pure build")
    for row in args.rows.split(","):
        _run(old, row, args.rounds, args.window)


if __name__ == "__main__":
    main()
