"""A fresh matcher's first 10,000 lookups on a row (the unmatched one unless told), as the
workload matrix meets them: each in a child forked from the process that holds the row's data.

    [TOPICMATCH_PURE=1] .venv/bin/python benchmarks/first_window_forked.py [ROUNDS] [--row ROW]
    TOPICMATCH_PURE=1 .venv/bin/python benchmarks/first_window_forked.py --calls [--row ROW]

Per round (default 15), the default, itself without a cache and the trie are each built in a
child of their own and run the row's first 10,000 lookups (about 10 ms: one disturbance of the
shared machine moves a round by a third, so the rounds are many). Printed: each round's rate,
the minor page faults and the cyclic collector's runs during the window, then each variant's
median and the default's median ratio, round by round, to the others. The matrix's cell, with
its 5 rounds, straddles 0.95 by a wide spread (docs/performance.md); this gives it 15.
``--row``: a row of ``default_parts.py`` instead (``distinct-100k``: the matrix's other cell
that straddles 0.95 against the trie).
``--window N``: the first N lookups instead (the matrix's other window is 100,000); ``--skip M``:
the N after the first M (untimed), a matcher past its early life.
``--from RAW``: the summary of a run whose output was saved in RAW (medians and quartiles).
``--calls``: instead, the default's calls in that window, counted under cProfile (the walks, and
the result cache's records, stores and promotions), and the distinct topics among its lookups;
pure build only (cProfile does not see compiled functions).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import re
import resource
import statistics
import time
from functools import partial
from pathlib import Path
from typing import Any

import default_parts  # benchmarks/default_parts.py, beside this script

from topicmatch.bench import shapes

VARIANTS = ("default", "no cache", "trie")
WINDOW = 10_000


def _child(shape: shapes.Shape, variant: str, window: int, skip: int) -> str:
    m = default_parts._matcher(variant, shape)
    collections: list[int] = []

    def log(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop":
            collections.append(info["generation"])

    gc.callbacks.append(log)
    lookup, topics = m.lookup, shape.topics[skip : skip + window]
    for topic in shape.topics[:skip]:  # untimed: the matcher's life before the window
        lookup(topic)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.thread_time()
    for topic in topics:
        lookup(topic)
    rate = len(topics) / (time.thread_time() - start)
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return f"{rate} {faults} {collections}\n"


def main(rounds: int, row: str, window: int, skip: int) -> None:
    shape = default_parts._shape(row)
    if skip + window > len(shape.topics):
        raise SystemExit(f"--skip {skip:,} and --window {window:,}: the row has {len(shape.topics):,} topics")
    rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for r in range(rounds):
        for variant in VARIANTS:
            done = default_parts.forked(partial(_child, shape, variant, window, skip))
            rate, faults, collections = done.split(" ", 2)
            rates[variant].append(float(rate))
            seen = f"{faults:>4s} faults, collections {collections.strip()}"
            print(f"round {r + 1:2d} {variant:9s} {float(rate):11,.0f}/s  {seen}")
    summary(rates)


def summary(rates: dict[str, list[float]]) -> None:
    """Each variant's median rate, and the default's ratio to the others: the median and the
    quartiles of the rounds' ratios."""
    for variant, values in rates.items():
        print(f"{variant:9s} median {statistics.median(values):11,.0f}/s")
    mine = rates["default"]
    for other in VARIANTS[1:]:
        ratios = [a / b for a, b in zip(mine, rates[other], strict=True)]
        low, mid, high = statistics.quantiles(ratios, n=4)
        print(f"default ÷ {other}: {mid:.3f} (median of the rounds' ratios; quartiles {low:.3f}-{high:.3f})")


def from_raw(path: Path) -> None:
    """:func:`summary` of a run's printed rounds (a raw file of this script's output)."""
    rates: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for line in path.read_text(encoding="utf-8").splitlines():
        found = re.match(r"round\s+\d+ (default|no cache|trie)\s+([\d,]+)/s", line)
        if found:
            rates[found[1]].append(float(found[2].replace(",", "")))
    if not rates["default"]:
        raise SystemExit(f"{path}: no rounds of this script's output")
    summary(rates)


def calls(row: str) -> None:
    shape = default_parts._shape(row)
    m = default_parts._matcher("default", shape)
    topics = shape.topics[:WINDOW]
    profile = cProfile.Profile()
    profile.runcall(lambda: [m.lookup(topic) for topic in topics])
    counts = {f"{name}": n for (_file, _line, name), (n, *_rest) in pstats.Stats(profile).stats.items()}  # type: ignore[attr-defined]
    print(f"{WINDOW:,} lookups, {len(set(topics)):,} distinct topics")
    for name in ("match", "admit", "_store", "promote"):
        print(f"  {name}: {counts.get(name, 0):,} calls")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("rounds", nargs="?", type=int, default=15, help="rounds (default 15)")
    parser.add_argument("--row", default="unmatched", help="a row of default_parts.py (default unmatched)")
    parser.add_argument("--calls", action="store_true", help="count the default's calls instead (pure only)")
    parser.add_argument("--window", type=int, default=WINDOW, help=f"lookups per round (default {WINDOW:,})")
    parser.add_argument("--skip", type=int, default=0, help="untimed lookups before the window (default 0)")
    parser.add_argument(
        "--from", dest="raw", type=Path, help="summarise the rounds printed in this file instead"
    )
    args = parser.parse_args()
    if args.raw is not None:
        from_raw(args.raw)
    elif args.calls:
        calls(args.row)
    else:
        main(args.rounds, args.row, args.window, args.skip)
