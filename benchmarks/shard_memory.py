"""What a Spark worker's shard matcher holds, and what dropping it gives back.

Builds the shard plan of a subscription table (``auto``), then, as a worker does, builds each of
the first three shards' :class:`~topicmatch.spark._worker.Compiled`, matches 100,000 topics with
it and drops it: the resident memory after each step, the cyclic garbage the drop left (the DFA's
states hold the trie's nodes, and the DFA is cyclic) and how long the full collection that frees
it takes. Run on the scale benchmark's multi-tenant table (``topicmatch bench pipeline --scale``
writes it):

    .venv/bin/python benchmarks/shard_memory.py \\
        out/bench/pipeline-scale/data/tenants2Mx2M/subscriptions.parquet

Figures: ``topicmatch.spark``'s worker (what a full collection after a dropped shard costs);
no run is committed. It builds the Spark worker's own matcher, which has no public name:
listed in tests/test_architecture.py as a script that still reaches inside.
"""

from __future__ import annotations

import gc
import os
import sys
import time

import pyarrow as pa

from topicmatch.spark import Subscriptions, _worker
from topicmatch.spark.bench_api import choose


def resident_mib() -> float:
    with open(f"/proc/{os.getpid()}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main(path: str) -> None:
    table = Subscriptions.read(path)
    plan = choose(table, "auto")
    assert plan.shards is not None, f"auto chose {plan.name}: no shards"
    payloads = [t.payload() for t in plan.shards.tables]
    print(f"{plan.name}: {len(payloads)} shards of {[len(t) for t in plan.shards.tables]} pairs")
    topics = pa.array([f"t{k % 1000}.d{k}.temp" for k in range(0, 700_000, 7)])
    del plan, table
    gc.collect()
    print(f"before the first shard: {resident_mib():,.0f} MiB resident")
    for number, payload in enumerate(payloads[:3]):
        began = time.perf_counter()
        compiled = _worker.Compiled("amqp", False, payload)
        built = time.perf_counter() - began
        compiled.entries(topics)
        print(f"shard {number}: built in {built:.1f} s, {resident_mib():,.0f} MiB after 100,000 topics")
        del compiled
        print(f"  dropped: {resident_mib():,.0f} MiB", end="")
        began = time.perf_counter()
        found = gc.collect()
        print(
            f"; a full collection found {found:,} objects in {time.perf_counter() - began:.2f} s: "
            f"{resident_mib():,.0f} MiB"
        )


if __name__ == "__main__":
    main(sys.argv[1])
