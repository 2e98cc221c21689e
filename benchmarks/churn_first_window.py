"""The churn row's first 10,000 lookups as the workload matrix runs them, round by round.

    [TOPICMATCH_PURE=1] .venv/bin/python benchmarks/churn_first_window.py [ROUNDS] [--only A;B;...]

The matrix's own code (``topicmatch.bench.workloads``): per round (default 5), every contender
of the row is built in a process of its own, then each in turn, in the round's order,
runs a fresh matcher's first 10,000 lookups with the writes paced by the clock among them.
Printed: each contender's rate in each round, with its place in that round's order and the
writes it did, then the default's ratio to the trie and to itself without a cache per round.
It shows how far one contender's rate moves from one round to the next in this 0.1 s window
(docs/performance.md). ``--only``: these contenders (separated by ``;``), in this order.
"""

from __future__ import annotations

import argparse

from topicmatch.bench import workloads
from topicmatch.bench.contenders import contenders_for

WINDOW = 10_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rounds", nargs="?", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--only", help="these contenders, separated by ';' (default: the row's)")
    args = parser.parse_args()
    sizes = workloads.FULL
    names = args.only.split(";") if args.only else list(contenders_for("mqtt"))
    shape = workloads.rows_of(sizes, 5)["churn"].make()  # the matrix's churn row, at --repeat 5
    rates: dict[str, list[float]] = {name: [] for name in names}
    for r in range(args.rounds):
        row = workloads.Row(shape.name, "", shape.dialect)
        order = workloads._order(names, r)  # of the builds and of the runs, as the matrix's
        fresh = {n: a for n in order if (a := workloads._build_one(n, shape, row, sizes)) is not None}
        try:
            for place, name in enumerate(fresh, 1):
                state = {name: workloads._Churned()}
                workloads._churn_turn(
                    {name: fresh[name]}, state, 0, WINDOW, sizes.early_budget, sizes.early_budget, False
                )
                s = state[name]
                rates[name].append(s.rate())
                print(f"round {r + 1} place {place}: {name:18s} {s.rate():11,.0f}/s  {s.writes:,} writes")
        finally:
            workloads._close(fresh)
    for other in ("trie", "default, no cache"):
        if "default" in rates and rates.get(other):
            ratios = ", ".join(f"{a / b:.2f}" for a, b in zip(rates["default"], rates[other], strict=True))
            print(f"default ÷ {other}, round by round: {ratios}")


if __name__ == "__main__":
    main()
