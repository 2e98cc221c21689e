"""What the default adds to the plain trie's work, counted in instructions, not timed.

    .venv/bin/python benchmarks/instructions.py [ROWS] [--variants V[,V...]] [--jobs N]

Timed, the default and the trie on a row where nothing repeats (they walk the same code there)
land anywhere in 0.88-1.11 of each other from one run to the next on this machine: each process
gets its own place in memory, and that moves a pointer-chasing walk by several per cent
(docs/performance.md, the matrix's method). Instructions do not move with it. Each figure here
is what ``valgrind --tool=callgrind`` counts (``Ir``: instructions executed) for a fresh matcher
of the row, built in a process of its own: the count of a run that builds and then does ``n``
lookups, less that of a run that only builds, divided by ``n``. ``PYTHONHASHSEED=0``: the same
run counts the same, whatever else the machine does, so one run per figure is enough; two
processes at a time (``--jobs``) do not change a count.

Phases: the first 10,000 and the first 100,000 lookups of the fresh matcher, and the 100,000
after those (steady: the default's admission has judged its first windows). Per row and variant
the instructions per lookup in each phase; then each variant's ratio to the default (its
instructions ÷ the default's: above 1 the default does less work). Instructions are not time: a
cache miss costs hundreds of them, and the counts say nothing of memory. What they settle is
how much code the default runs beyond the trie's walk.

Variants: ``default``, ``no cache`` (``cache_size=0``), ``trie``. Rows, at the workload matrix's
sizes: ``distinct-10k``, ``distinct-100k`` (MQTT filters, topics seen once), ``unmatched-once``
(the unmatched row's 20,000 filters, topics seen once that match nobody: the cheapest lookups),
``unmatched``, ``zipf``, ``study`` (topics that repeat). Churn is left out (its writes are paced
by the clock, so two runs differ) and so is the million (a build under valgrind takes an hour).
Rows from ``_common.matrix_shape``.

Figures: none of the current engine committed (docs/performance.md, "The default engine");
docs/implementation.md and ``topicmatch._engine.cache`` (``QUIET_CHUNK``) cite what it counts.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from _common import MATRIX_ROWS, matrix_shape

from topicmatch import Matcher

VARIANTS = ("default", "no cache", "trie")
ROWS = MATRIX_ROWS
COUNTS = (0, 10_000, 100_000, 200_000)  # lookups per run: phases are differences of these
PHASES = (("first 10,000", 0, 10_000), ("first 100,000", 0, 100_000), ("steady", 100_000, 200_000))


def _child(row: str, variant: str, count: int) -> None:
    """Build the row's matcher and do its first ``count`` lookups (under valgrind)."""
    shape = matrix_shape(row)
    if variant == "trie":
        m: Matcher[object] = Matcher("trie", shape.dialect)
    else:
        m = Matcher("default", shape.dialect, cache_size=0 if variant == "no cache" else None)
    m.subscribe_many(shape.pairs)
    topics = shape.topics
    lookup = m.lookup
    for i in range(count):
        lookup(topics[i % len(topics)])


def _count(row: str, variant: str, count: int) -> int:
    """Instructions of a run that builds the row's matcher and does ``count`` lookups."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    command = [
        "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
        sys.executable, __file__, "--child", row, variant, str(count),
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or found is None:
        raise SystemExit(f"valgrind failed on {row} {variant} {count}:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("rows", nargs="?", default=",".join(ROWS), help="rows, comma-separated")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="variants, comma-separated")
    parser.add_argument("--jobs", type=int, default=2, help="valgrind runs at a time (default 2)")
    args = parser.parse_args()
    rows, variants = args.rows.split(","), args.variants.split(",")
    if "default" not in variants:
        variants.insert(0, "default")
    build = "pure" if os.environ.get("TOPICMATCH_PURE") else "compiled"
    print(f"instructions per lookup, fresh matcher, {build} build (valgrind --tool=callgrind)", flush=True)
    for row in rows:
        runs = [(row, v, n) for v in variants for n in COUNTS]
        with ThreadPoolExecutor(args.jobs) as pool:
            counts = {
                run[1:]: found
                for run, found in zip(runs, pool.map(lambda run: _count(*run), runs), strict=True)
            }
        per: dict[str, list[float]] = {
            v: [(counts[v, b] - counts[v, a]) / (b - a) for _name, a, b in PHASES] for v in variants
        }
        for v in variants:
            cells = " / ".join(f"{x:,.0f}" for x in per[v])
            ratios = " / ".join(f"{x / d:.3f}" for x, d in zip(per[v], per["default"], strict=True))
            print(f"{row}, {v}: {cells} instructions per lookup ({' / '.join(p[0] for p in PHASES)}); "
                  f"÷ default {ratios}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
