"""What the union memo's misses cost where unions are big and rarely come again.

    .venv/bin/python benchmarks/union_memo_scale.py [ROUNDS] [LOOKUPS]
    TOPICMATCH_PURE=1 .venv/bin/python benchmarks/union_memo_scale.py [ROUNDS] [LOOKUPS]

The workload matrix's subs-1M table (a million AMQP subscriptions of Zipf words; each topic
looked up once, most matching about 11,000 subscribers), on the default with its result cache
off, the first LOOKUPS (6,000) lookups of a fresh matcher, each variant in a process of its own
(so that none inherits another's heap), alternating in order round by round:

* ``held on``: the memo probed on every union, never judged (its window made longer than the run);
* ``no memo``: the trie's walk unites with ``union_of``, never the memo;
* ``shipped``: the memo as shipped, its governor judging every window.

Printed per variant: the median seconds of thread CPU time over the lookups and the median of
the rounds' ratios of ``no memo``'s time to its own (below 1: slower than without the memo); for
``held on``, its counts: the unions it was asked for, the subscribers its hits saved and those
its misses united (``Unions.missed``), and the time a probe added over ``no memo``, per probe
and per subscriber a miss united, against the time per subscriber of a lookup without the memo.
That last pair of figures is what :data:`topicmatch._walk.UNION_MISS_SHARE` rests on.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from topicmatch import Matcher
from topicmatch._walk import union_of
from topicmatch.bench import shapes

VARIANTS = ("held on", "no memo", "shipped")


def _child(variant: str, lookups: int) -> None:
    """One variant's run, in this process: prints its time and the memo's counts as JSON."""
    shape = shapes.million(1_000_000, lookups)
    m: Matcher[Any] = Matcher("default", "amqp", cache_size=0)
    m.subscribe_many(shape.pairs)
    index: Any = m._index
    memo = index._memo
    if variant == "no memo":
        index._union = union_of
    elif variant == "held on":
        memo.governor.left = 1 << 40  # never a window's end: never judged, never off
    lookup = m.lookup
    gc.collect()
    began = time.thread_time()
    for topic in shape.topics:
        lookup(topic)
    seconds = time.thread_time() - began
    probes = (1 << 40) - memo.governor.left if variant == "held on" else 0
    print(json.dumps({"seconds": seconds, "probes": probes, "saved": memo.saved, "missed": memo.missed}))


def main(rounds: int, lookups: int) -> None:
    runs: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    for r in range(rounds):
        for variant in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
            run = subprocess.run(
                [sys.executable, __file__, "--child", variant, str(lookups)],
                capture_output=True,
                text=True,
                check=True,
                env=os.environ,
            )
            runs[variant].append(json.loads(run.stdout))
    base = [run["seconds"] for run in runs["no memo"]]
    for variant in VARIANTS:
        seconds = [run["seconds"] for run in runs[variant]]
        ratio = statistics.median(b / s for b, s in zip(base, seconds, strict=True))
        print(f"{variant:8s} {statistics.median(seconds):6.3f} s   no memo's time ÷ this {ratio:4.2f}")
    held = runs["held on"][0]
    added = statistics.median(runs["held on"][i]["seconds"] - base[i] for i in range(rounds))
    per_subscriber = statistics.median(base) / max(held["missed"], 1)
    print(
        f"held on: {held['probes']:,.0f} probes; hits saved {held['saved']:,.0f} subscribers' insertions; "
        f"misses united {held['missed']:,.0f} subscribers"
    )
    print(
        f"held on: {added / max(held['probes'], 1) * 1e6:.1f} µs more per probe, "
        f"{added / max(held['missed'], 1) * 1e9:.2f} ns per subscriber a miss united; "
        f"a lookup without the memo: {per_subscriber * 1e9:.2f} ns per subscriber of its union "
        f"(a miss's share: {added / max(held['missed'], 1) / per_subscriber:.2f})"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], int(sys.argv[3]))
    else:
        main(
            int(sys.argv[1]) if len(sys.argv) > 1 else 3,
            int(sys.argv[2]) if len(sys.argv) > 2 else 6_000,
        )
