"""The union memo's judgements under churn, counted: which windows pay, and the memo's slots.

    [PYTHONPATH=DIR/src] TOPICMATCH_PURE=1 .venv/bin/python benchmarks/memo_windows.py [LOOKUPS] [--every N]

The workload matrix's churn row (300,000 MQTT subscriptions, Zipf topics), its writes paced by
count as in ``churn_split.py``: a subscribe or unsubscribe before every ``N`` lookups (default
13, about the matrix's pace compiled: 10,000 writes a second among some 130,000 lookups; 6,
about its pace in the pure build, for at most 150,000 lookups: the row has 25,000 writes). For
the default and itself without a cache, a fresh matcher each, every judgement of the memo's
governor over the first ``LOOKUPS`` lookups (default 300,000): the lookup it came at, whether
the window paid, the subscribers its hits saved and its misses united, and the memo's slots
after it. Counts, not time: the same run prints the same lines.

To count an engine other than the checkout's (a commit that was reverted), put its source first
on the path: ``git archive COMMIT src | tar x -C DIR``, then ``PYTHONPATH=DIR/src`` and
``TOPICMATCH_PURE=1`` (DIR holds no compiled modules). The governor's test is wrapped on the
instance, to record what it returns; nothing else is changed.
"""

from __future__ import annotations

import argparse
from typing import Any

import churn_split  # benchmarks/churn_split.py, beside this script
import default_parts  # benchmarks/default_parts.py, beside this script

VARIANTS = ("default", "no cache")


def judgements(variant: str, lookups: int, every: int) -> list[tuple[int, bool, int, int, int]]:
    """(lookup, paid, saved, missed, slots after) for every judgement of the memo's governor."""
    shape = default_parts._shape("churn")
    most = len(shape.writes) * every
    if most < lookups:
        raise SystemExit(f"the row has {len(shape.writes)} writes: at most {most} lookups at --every {every}")
    m = default_parts._matcher(variant, shape)
    memo: Any = m._index._memo  # type: ignore[attr-defined]
    governor = memo.governor
    test = governor.pays
    log: list[tuple[int, bool, int, int, int]] = []
    at = 0

    def recorded() -> bool:
        saved, missed = memo.saved, memo.missed
        paid = bool(test())
        log.append((at, paid, saved, missed, len(memo.slots)))
        return paid

    governor.pays = recorded
    for at in range(0, lookups, every):  # `recorded` reads `at`: the step a judgement came in
        churn_split.paced(m, shape, at, at + every, every)
    return log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lookups", nargs="?", type=int, default=300_000)
    parser.add_argument("--every", type=int, default=13, help="lookups per write (default 13)")
    args = parser.parse_args()
    print(f"churn, {args.lookups:,} lookups, a write before every {args.every}")
    for variant in VARIANTS:
        log = judgements(variant, args.lookups, args.every)
        passed = sum(paid for _, paid, *_ in log)
        slots = log[-1][4] if log else "-"
        print(f"{variant}: {len(log)} judgements, {passed} paid, {slots} slots at the end")
        print("    lookup  paid   saved  missed  slots")
        for at, paid, saved, missed, size in log[:6]:
            print(f"    {at:6}  {paid!s:5} {saved:7} {missed:7} {size:6}")
        if len(log) > 6:
            print(f"    ... {len(log) - 6} more")


if __name__ == "__main__":
    main()
