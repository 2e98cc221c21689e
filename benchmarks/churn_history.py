"""The churn row, with the matrix's own code, in a parent that made the earlier rows' data first or not.

    [TOPICMATCH_PURE=1] .venv/bin/python benchmarks/churn_history.py {history,fresh} [REPEAT]

In a whole run of ``topicmatch bench workloads`` the churn row comes sixth: the process that holds
its data, and from which every contender is forked, has made and dropped the data of the five rows
before it. ``history`` does the same (makes and drops each earlier row's data, measuring nothing)
before the churn row; ``fresh`` runs the churn row in a new process, as ``--rows churn`` does.
Each then runs ``workloads._churn_row`` at ``--repeat REPEAT`` (default 3) and prints the
default's ratio to itself without a cache and to the trie in each phase: the median, then each
round's. What it settles: whether a whole run's churn cells under 0.95 come from what the process
did before the row.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys

from topicmatch.bench import workloads
from topicmatch.bench.report import Progress


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("parent", choices=("history", "fresh"), help="earlier rows' data made first, or not")
    parser.add_argument("repeat", nargs="?", type=int, default=3, help="rounds (default 3)")
    args = parser.parse_args()
    sizes = workloads.FULL
    rows = workloads.rows_of(sizes, args.repeat)
    if args.parent == "history":
        for name, spec in rows.items():
            if name == "churn":
                break
            spec.make()  # made and dropped, as a whole run's rows before churn are
    gc.collect()
    row = workloads._churn_row(rows["churn"].make(), sizes, args.repeat, Progress("churn", sys.stderr))
    for phase, rates in row.samples.items():
        for other in ("default, no cache", "trie"):
            ratios = [a / b for a, b in zip(rates["default"], rates[other], strict=True)]
            shown = " ".join(f"{r:.2f}" for r in ratios)
            print(f"{args.parent} {phase} ÷ {other} {statistics.median(ratios):.3f} {shown}")


if __name__ == "__main__":
    main()
