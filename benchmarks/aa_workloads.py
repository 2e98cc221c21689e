"""What the workload matrix resolves: its rows with the default measured against a copy of itself.

    [TOPICMATCH_PURE=1] .venv/bin/python benchmarks/aa_workloads.py OUT [--rows R[,R...]] [--repeat N]

An A/A run. ``topicmatch bench workloads`` as it is (the same rows, sizes, processes, orders and
phases), on four contenders: the default, ``default, again`` (the same matcher, built the same
way, in a process of its own like every contender), the default without its cache and the trie.
The two copies run the same code on the same data, so their ratio would be 1.00 in every cell
of a machine that measured exactly; how far its medians stray from 1.00, and how often they
fall under the matrix's target of 0.95, is what a whole run can resolve on this machine. Rows
default to those where the default's cells under 0.95 have been (distinct-10k, distinct-100k,
unmatched, churn). Writes the matrix's report to OUT (``default, again`` is one more column),
then prints, per row and phase, the default's median ratio and its rounds against its copy,
against itself without a cache and against the trie, and the copies' spread pooled over the
cells with the rounds it takes to resolve 0.03 (``--from``: this summary of a run already in OUT).

Figures: docs/performance.md, "Method" (the A/A spread; raw results in docs/results/workloads-aa/).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

from topicmatch.bench import workloads
from topicmatch.bench.contenders import AGAIN as COPY
from topicmatch.bench.report import Progress

CONTENDERS = ("default", COPY, "default, no cache", "trie")
ROWS = "distinct-10k,distinct-100k,unmatched,churn"


def summarise(results_json: Path) -> None:
    """Per row and phase, the default's median ratio and its rounds against its copy, itself
    without a cache and the trie; then the spread of the copies' ratios, pooled over the cells
    (the standard deviation of their logarithms), and the rounds per cell a median needs for
    two standard errors under 0.03 (a median's standard error: about 1.25 sigma / sqrt(n))."""
    results = json.loads(results_json.read_text(encoding="utf-8"))["results"]
    logs: list[float] = []
    print("the default's ratio to each, median (rounds)")
    for row, data in results.items():
        for phase, by in data["samples"].items():
            cells = []
            for other in CONTENDERS[1:]:
                ratios = sorted(a / b for a, b in zip(by["default"], by.get(other, []), strict=False) if b)
                if ratios:
                    mid = ratios[len(ratios) // 2]
                    cells.append(f"÷ {other}: {mid:.2f} ({', '.join(f'{r:.2f}' for r in ratios)})")
                    if other == COPY:
                        logs += [math.log(r) for r in ratios]
            print(f"  {row:14s} {phase:14s} " + "; ".join(cells))
    if len(logs) > 1:
        sigma = statistics.stdev(logs)
        rounds = math.ceil((1.25 * sigma / 0.015) ** 2)
        print(f"the copy's log ratios, pooled: standard deviation {sigma:.3f} over {len(logs)} rounds;")
        print(f"  two standard errors of a median under 0.03 need {rounds} rounds per cell")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path, help="where the report goes (a new directory)")
    parser.add_argument("--rows", default=ROWS, help=f"rows to run (default {ROWS})")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default 5, the matrix's)")
    parser.add_argument("--from", dest="done", action="store_true", help="summarise the run already in OUT")
    args = parser.parse_args()
    if not args.done:
        rows = set(args.rows.split(","))
        workloads.run(args.out, args.repeat, False, Progress("aa_workloads"), rows, contenders=CONTENDERS)
    summarise(args.out / "results.json")


if __name__ == "__main__":
    main()
