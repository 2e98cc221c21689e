"""A lookup row's early life as the workload matrix runs it, with more rounds or fewer contenders.

    [TOPICMATCH_PURE=1] .venv/bin/python benchmarks/early_life_rows.py [ROUNDS] [--row ROW] [--only A;B;...]

The matrix's own code (``topicmatch.bench.workloads._early_life``) on one of its lookup rows
(default ``distinct-100k``, at the full run's sizes): per round (default 15), each contender
built in a process of its own, then each in turn, in the round's order, runs a fresh
matcher's first 100,000 lookups (the round's own slice where topics are seen once). ``--only``:
these contenders (separated by ``;``; default: the default, itself without a cache and the
trie): the round's order is made from this one (``workloads._order``). Printed: each
round's rates, then the default's ratio to each other contender in each window, round by round
and their median. What it settles: whether a cell of the matrix under 0.95 comes from its
conditions (the same code, the same contenders) or from its five rounds.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from topicmatch.bench import workloads
from topicmatch.bench.report import Progress

TRIO = "default;default, no cache;trie"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rounds", nargs="?", type=int, default=15, help="rounds (default 15)")
    parser.add_argument("--row", default="distinct-100k", help="the row (default distinct-100k)")
    parser.add_argument("--only", default=TRIO, help=f"contenders, separated by ';' (default {TRIO!r})")
    args = parser.parse_args()
    sizes = workloads.FULL
    rows = {n: s for n, s in workloads.rows_of(sizes, 1).items() if s.kind == "lookup"}
    if args.row not in rows:
        raise SystemExit(f"no such lookup row: {args.row!r} (the lookup rows: {', '.join(rows)})")
    shape = rows[args.row].make()
    names = args.only.split(";")
    row = workloads.Row(shape.name, "", shape.dialect)
    progress = Progress("early life", sys.stderr)
    samples = workloads._early_life(shape, row, sizes, args.rounds, progress, names)
    for window, rates in samples.items():
        print(f"first {window:,}")
        for name, values in rates.items():
            print(f"  {name:18s} " + " ".join(f"{v:9,.0f}" for v in values))
        first = "default" if "default" in rates else names[0]
        for other in names:
            if other == first or not rates[other]:
                continue
            ratios = [a / b for a, b in zip(rates[first], rates[other], strict=True)]
            shown = ", ".join(f"{r:.2f}" for r in ratios)
            print(f"  {first} ÷ {other}: median {statistics.median(ratios):.3f} ({shown})")
    for name, note in row.notes.items():
        print(f"note: {name}: {note}")


if __name__ == "__main__":
    main()
