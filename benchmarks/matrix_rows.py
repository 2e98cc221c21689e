"""Chosen rows of the workload matrix at full size, without the rest of it.

    .venv/bin/python benchmarks/matrix_rows.py ROW[,ROW...] [REPEAT]
    PYTHONPATH=OTHER/src .venv/bin/python benchmarks/matrix_rows.py churn   # another version

ROW: ``study``, ``distinct-10k``, ``distinct-100k``, ``zipf``, ``unmatched``, ``churn``,
``fanout-20k``, ``fanout-100k``. The same data, contenders and method as ``topicmatch bench
workloads`` (:mod:`topicmatch.bench.workloads`), REPEAT rounds (default 5): for rerunning a row
that a busy phase of the machine disturbed, or comparing two versions on one row. Printed per
row: each contender's median rate, the default's ratio to each (median of the rounds' ratios),
and under churn the writes' p50 and p99 in µs.
"""

from __future__ import annotations

import sys

from topicmatch._progress import Progress
from topicmatch.bench import shapes
from topicmatch.bench import workloads as matrix


def rows(names: list[str], repeat: int) -> list[matrix.Row]:
    sizes = matrix.FULL
    progress = Progress("rows", sys.stderr)
    out: list[matrix.Row] = []
    fanout = {f"fanout-{n // 1000}k": (n, filters) for n, filters in sizes.fanout}
    for name in names:
        if name == "churn":
            writes = int(matrix.WRITE_RATE * sizes.budget * (repeat + 1) * 1.2) + 2
            shape = shapes.churn(sizes.churn, sizes.lookups, writes)
            out.append(matrix._churn_row(shape, sizes, repeat, progress))
            continue
        if name == "study":
            shape = shapes.study(sizes.lookups)
        elif name in ("zipf", "unmatched"):
            shape = getattr(shapes, name)(sizes.zipf, sizes.lookups)
        elif name.startswith("distinct-"):
            shape = shapes.distinct(int(name.removeprefix("distinct-").removesuffix("k")) * 1000, sizes.once)
        elif name in fanout:
            shape = shapes.fanout(*fanout[name], sizes.lookups)
        else:
            raise SystemExit(f"unknown row {name!r}")
        out += matrix._lookup_row(shape, name, sizes, repeat, progress)
    return out


def main(names: list[str], repeat: int) -> None:
    for row in rows(names, repeat):
        print(row.name, {k: round(v) for k, v in row.rates.items()})
        print("   default ÷", {k: round(v, 2) for k, v in row.paired.items()})
        if row.name == "churn":
            writes = {
                k: (round(e.get("write_p50_us", 0), 1), round(e.get("write_p99_us", 0), 1))
                for k, e in row.extra.items()
            }
            print("   writes p50, p99 µs", writes)


if __name__ == "__main__":
    main(sys.argv[1].split(","), int(sys.argv[2]) if len(sys.argv) > 2 else 5)
