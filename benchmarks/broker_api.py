"""What a broker's own code pays: bulk building, snapshots, dropping a client, at 100k and 1M.

    .venv/bin/python benchmarks/broker_api.py [SUBSCRIPTIONS ...] [--rounds R]

The workload of a broker or gateway written in Python (issue 12's): SUBSCRIPTIONS MQTT
subscriptions (default 100,000 and 1,000,000) from SUBSCRIPTIONS / 20 clients, each client with
20 filters: 60 % a device's own literal (``devices/d123/cmd``), 30 % one level wild
(``site/17/+/temp``), 10 % a fleet's subtree (``fleet/3/#``). Every figure is the median of R
rounds (default 3); variants compared in one round are alternated.

1. Building: ``subscribe`` pair by pair (the collector on, as a caller's loop runs),
   ``subscribe_many`` (the collector paused inside), and ``subscribe_many`` with the pause
   switched off, to show what it buys. Default matcher.
2. Snapshots: ``snapshot()`` on default, trie and cstrie, the first write after it (which copies
   the nodes on its path) and the next one; ``subscriptions()``.
3. Lookups of 4 reader threads while a fifth thread takes snapshots back to back, against the
   same readers alone (lookups/s of the 4 together over 2 s each, after a 2 s warm-up, the two
   alternated twice, medians).
4. Dropping a client: ``unsubscribe_all`` per client (the mean over 1,000 clients), against
   what a caller had to do before: find the client's patterns in ``subscriptions()`` and
   ``unsubscribe`` each.
5. Memory of the index of each subscriber's patterns (``topicmatch._by_subscriber``), traced
   with tracemalloc, against the whole matcher's.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import random
import statistics
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from functools import partial

from topicmatch import Matcher, _matcher

CLIENT_FILTERS = 20
READERS = 4


def broker_pairs(n: int, seed: int = 5) -> list[tuple[str, str]]:
    """``n`` (filter, client) pairs: n / 20 clients of 20 filters each (module docstring)."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        client = f"client-{i // CLIENT_FILTERS}"
        kind = rng.random()
        if kind < 0.6:
            pattern = f"devices/d{rng.randrange(n)}/cmd"
        elif kind < 0.9:
            pattern = f"site/{rng.randrange(500)}/+/{rng.choice(('temp', 'hum', 'co2'))}"
        else:
            pattern = f"fleet/{rng.randrange(100)}/#"
        pairs.append((pattern, client))
    return pairs


def topics_for(n: int, count: int, seed: int = 6) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.5:
            out.append(f"devices/d{rng.randrange(n)}/cmd")
        elif kind < 0.9:
            out.append(f"site/{rng.randrange(500)}/room{rng.randrange(50)}/{rng.choice(('temp', 'hum'))}")
        else:
            out.append(f"fleet/{rng.randrange(100)}/truck{rng.randrange(1000)}/gps")
    return out


@contextlib.contextmanager
def _collector_not_paused() -> Iterator[None]:
    # _matcher imported collector_paused by name: replace it there (a private name, hence getattr).
    saved = getattr(_matcher, "collector_paused")  # noqa: B009
    setattr(_matcher, "collector_paused", contextlib.nullcontext)  # noqa: B010
    try:
        yield
    finally:
        setattr(_matcher, "collector_paused", saved)  # noqa: B010


def _seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def building(pairs: list[tuple[str, str]], rounds: int) -> dict[str, float]:
    def loop() -> None:
        m: Matcher[str] = Matcher("default", "mqtt")
        for pattern, client in pairs:
            m.subscribe(pattern, client)

    def many() -> None:
        Matcher("default", "mqtt").subscribe_many(pairs)

    def many_unpaused() -> None:
        with _collector_not_paused():
            Matcher("default", "mqtt").subscribe_many(pairs)

    variants = {
        "subscribe, pair by pair": loop,
        "subscribe_many (collector paused)": many,
        "subscribe_many, collector on": many_unpaused,
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
    topics = topics_for(n, 20_000)
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
    from topicmatch._by_subscriber import BySubscriber  # noqa: PLC0415  (write_cost.py imports this module on older versions)

    gc.collect()
    tracemalloc.start()
    try:
        by = BySubscriber()
        for pattern, client in pairs:
            by.add(client, pattern)
        gc.collect()
        index_bytes = tracemalloc.get_traced_memory()[0]
        del by
        gc.collect()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        m: Matcher[str] = Matcher("default", "mqtt")
        m.subscribe_many(pairs)
        gc.collect()
        matcher_bytes = tracemalloc.get_traced_memory()[0] - base
        del m
    finally:
        tracemalloc.stop()
    return {"by-subscriber index": index_bytes, "whole default matcher (index included)": matcher_bytes}


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
