"""What a broker's own code pays: bulk building, snapshots, dropping a client, at 100k and 1M.

    .venv/bin/python benchmarks/broker_api.py [SUBSCRIPTIONS ...] [--rounds R] [--only PART]

The workload of a broker or gateway written in Python: SUBSCRIPTIONS MQTT subscriptions
(default 100,000 and 1,000,000) from SUBSCRIPTIONS / 20 clients, each client with 20 filters
(``_common.broker_pairs``: 60 % a device's own literal, 30 % one level wild, 10 % a fleet's
subtree). Every figure is the median of R rounds (default 3); variants compared in one round
are alternated.

1. Building (``build``): ``subscribe`` pair by pair with the collector on (as a caller's loop
   runs), the same loop inside ``topicmatch.collector_paused()``, and ``subscribe_many`` (which
   pauses the collector inside): what the pause buys. Default matcher.
2. Snapshots (``snapshots``): ``snapshot()`` on default, trie and cstrie, the first write after
   it (which copies the nodes on its path) and the next one; ``subscriptions()``.
3. Lookups of 4 reader threads while a fifth thread takes snapshots back to back, against the
   same readers alone (``readers``: lookups/s of the 4 together over 2 s each, after a 2 s
   warm-up, the two alternated twice, medians).
4. Dropping a client (``drop``): ``unsubscribe_all`` per client (the mean over 1,000 clients),
   against what a caller had to do without it: find the client's patterns in
   ``subscriptions()`` and ``unsubscribe`` each.
5. Memory (``memory``): the default matcher's traced bytes (tracemalloc), in all and per
   subscription, the index of each subscriber's patterns included.

Figures: README.md (the table "What each call costs on the default") and docs/implementation.md
cite it; no run is committed (docs/performance.md, "Other experiments"). ``topicmatch._collector`` and
``topicmatch._by_subscriber`` cite parts 1 and 5.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable
from functools import partial

from _common import CLIENT_FILTERS, broker_pairs, broker_topics

from topicmatch import Matcher, collector_paused

READERS = 4


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def building(pairs: list[tuple[str, str]], rounds: int) -> dict[str, float]:
    def loop() -> None:
        m: Matcher[str] = Matcher("default", "mqtt")
        for pattern, client in pairs:
            m.subscribe(pattern, client)

    def loop_paused() -> None:
        with collector_paused():
            loop()

    def many() -> None:
        Matcher("default", "mqtt").subscribe_many(pairs)

    variants = {
        "subscribe, pair by pair": loop,
        "subscribe in collector_paused()": loop_paused,
        "subscribe_many (collector paused)": many,
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    for r in range(rounds):
        names = list(variants)
        for name in names[r % 3 :] + names[: r % 3]:
            gc.collect()
            times[name].append(_seconds(variants[name]))
    return {name: statistics.median(values) for name, values in times.items()}


def snapshots(pairs: list[tuple[str, str]], rounds: int) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for algorithm in ("default", "trie", "cstrie"):
        if algorithm == "cstrie" and len(pairs) > 100_000:
            continue  # its subscribes copy the 'devices' node's dict every time: minutes at 1M
        m: Matcher[str] = Matcher(algorithm, "mqtt")
        m.subscribe_many(pairs)
        names = ("snapshot()", "first write after", "next write", "subscriptions()")
        runs: dict[str, list[float]] = {name: [] for name in names}
        for r in range(rounds):
            runs["snapshot()"].append(_seconds(m.snapshot))
            runs["first write after"].append(_seconds(partial(m.subscribe, "devices/new/cmd", f"w{r}")))
            runs["next write"].append(_seconds(partial(m.subscribe, "devices/new/cmd", f"x{r}")))
            runs["subscriptions()"].append(_seconds(m.subscriptions))
        out[algorithm] = {name: statistics.median(values) for name, values in runs.items()}
    return out


def _readers(m: Matcher[str], topics: list[str], snapshotting: bool) -> tuple[float, int]:
    """Lookups/s of READERS threads over 2 s, and the snapshots a fifth thread took meanwhile."""
    stop = threading.Event()
    counts = [0] * READERS
    taken = [0]

    def reader(k: int) -> None:
        lookup, i = m.lookup, k
        while not stop.is_set() and i < 50_000_000:
            lookup(topics[i % len(topics)])
            i += 1
        counts[k] = i - k

    def snapshotter() -> None:
        while not stop.is_set() and taken[0] < 10_000_000:
            m.snapshot()
            taken[0] += 1

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(READERS)]
    if snapshotting:
        threads.append(threading.Thread(target=snapshotter))
    for t in threads:
        t.start()
    time.sleep(2.0)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    return sum(counts) / 2.0, taken[0]


def readers_under_snapshots(pairs: list[tuple[str, str]], n: int) -> dict[str, float]:
    m: Matcher[str] = Matcher("default", "mqtt")
    m.subscribe_many(pairs)
    topics = broker_topics(n, 20_000)
    _readers(m, topics, False)  # warm-up: the first lookups of new topics teach the DFA and cache
    alone, together, taken = [], [], []
    for _ in range(2):  # alternated, medians: the machine drifts over seconds
        alone.append(_readers(m, topics, False)[0])
        rate, count = _readers(m, topics, True)
        together.append(rate)
        taken.append(count)
    return {
        "4 readers alone (lookups/s)": statistics.median(alone),
        "4 readers, snapshots back to back": statistics.median(together),
        "snapshots taken in those 2 s": statistics.median(taken),
    }


def _scan_and_unsubscribe(m: Matcher[str], client: str) -> None:
    """What a caller had to do to drop a client before unsubscribe_all."""
    for pattern, subs in m.subscriptions().items():
        if client in subs:
            m.unsubscribe(pattern, client)


def dropping(pairs: list[tuple[str, str]], rounds: int) -> dict[str, float]:
    clients = sorted({client for _, client in pairs})
    dropped = min(1000, len(clients) // 2)
    rng = random.Random(8)
    runs: dict[str, list[float]] = {"unsubscribe_all": [], "scan subscriptions() + unsubscribe": []}
    for _ in range(rounds):
        m: Matcher[str] = Matcher("default", "mqtt")
        m.subscribe_many(pairs)
        chosen = rng.sample(clients, dropped + 10)
        start = time.perf_counter()
        for client in chosen[:dropped]:
            m.unsubscribe_all(client)
        runs["unsubscribe_all"].append((time.perf_counter() - start) / dropped)
        # The scan is O(all subscriptions) per client: 10 clients are enough for its mean.
        start = time.perf_counter()
        for client in chosen[dropped:]:
            _scan_and_unsubscribe(m, client)
        runs["scan subscriptions() + unsubscribe"].append((time.perf_counter() - start) / 10)
    return {name: statistics.median(values) for name, values in runs.items()}


def memory(pairs: list[tuple[str, str]]) -> dict[str, int]:
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        m: Matcher[str] = Matcher("default", "mqtt")
        m.subscribe_many(pairs)
        gc.collect()
        matcher_bytes = tracemalloc.get_traced_memory()[0] - base
        del m
    finally:
        tracemalloc.stop()
    return {"whole default matcher": matcher_bytes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--only", choices=("build", "snapshots", "readers", "drop", "memory"), help="one part only"
    )
    args = parser.parse_args()
    for n in args.sizes:
        pairs = broker_pairs(n)
        filters = len({p for p, _ in pairs})
        print(f"\n## {n:,} subscriptions, {n // CLIENT_FILTERS:,} clients, {filters:,} filters", flush=True)

        def part(name: str) -> bool:
            return args.only in (None, name)

        if part("build"):
            for name, seconds in building(pairs, args.rounds).items():
                print(f"build   {name:40s} {seconds:8.2f} s", flush=True)
        if part("snapshots"):
            for algorithm, figures in snapshots(pairs, args.rounds).items():
                for name, seconds in figures.items():
                    print(f"snap    {algorithm:8s} {name:31s} {seconds * 1e3:10.3f} ms", flush=True)
        if part("readers"):
            for name, value in readers_under_snapshots(pairs, n).items():
                print(f"readers {name:40s} {value:12,.0f}", flush=True)
        if part("drop"):
            for name, seconds in dropping(pairs, args.rounds).items():
                print(f"drop    {name:40s} {seconds * 1e6:10.1f} us per client", flush=True)
        if part("memory"):
            for name, size in memory(pairs).items():
                per = size / n
                print(
                    f"memory  {name:40s} {size / 2**20:8.1f} MiB ({per:5.1f} B per subscription)", flush=True
                )


if __name__ == "__main__":
    main()
