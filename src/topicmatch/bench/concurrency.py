"""Experiment 5: total time of a mixed workload against the number of threads.

After a warm-up of 1,000 subscriptions, each of T threads (1, 2, 4, 8, 12, 16) performs 1,000
operations on topics ``j%10.j%50.j``: a lookup of the topic, or a write (subscribe, then, on
the thread's next write to the same topic, unsubscribe) — 50/50 and 90/10 read/write splits,
in a seeded random order per thread. Then the matchbox benchmark: x threads each inserting 1,000
subscriptions while x (1:1) or 3x (1:3) threads each look up 1,000 topics. The figure is the
wall time until every thread is done (median of runs).

What the GIL does: CPython runs one thread's bytecode at a time, so no algorithm gets faster with
more threads here — total time grows with total work. What changes is how much *waiting* each
design adds on top. Every lookup takes no lock: it validates a version and retries while a
write is publishing (on the trie and the cstrie that is one store, so such waits are short; a
bitmap write touches many rows); cstrie writers copy without a lock and hold one only for their
compare-and-set; every write of the inverted bitmap costs a pass over its topic space. On a
free-threaded CPython the lock-free read paths are also the ones that could run in parallel.
"""

from __future__ import annotations

import functools
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import Matcher
from . import charts
from .report import Progress, Report
from .timing import median

__all__ = ["run"]

ALGORITHMS = ("naive", "inverted_bitmap", "optimized_bitmap", "trie", "cstrie", "default")
THREADS = (1, 2, 4, 8, 12, 16)


def _topic(j: int) -> str:
    return f"{j % 10}.{j % 50}.{j}"


def _matcher(algorithm: str) -> Matcher:
    options: dict[str, Any] = (
        {"topics": [_topic(j) for j in range(1000)]} if algorithm == "inverted_bitmap" else {}
    )
    m = Matcher(algorithm, **options)
    for j in range(1000):
        m.subscribe(_topic(j) if j % 3 else f"{j % 10}.*.{j}", ("warm", j))
    return m


def _mixed(m: Matcher, thread: int, ops: int, reads: float) -> None:
    rng = random.Random(thread)
    held: set[str] = set()
    for _ in range(ops):
        topic = _topic(rng.randrange(1000))
        if rng.random() < reads:
            m.lookup(topic)
        elif topic in held:
            m.unsubscribe(topic, thread)
            held.discard(topic)
        else:
            m.subscribe(topic, thread)
            held.add(topic)


def _inserts(m: Matcher, thread: int, ops: int) -> None:
    for j in range(ops):
        m.subscribe(_topic(j), ("insert", thread))


def _lookups(m: Matcher, ops: int) -> None:
    for j in range(ops):
        m.lookup(_topic(j))


def _wall(algorithm: str, workers: list[Callable[[Matcher], None]], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        m = _matcher(algorithm)
        threads = [threading.Thread(target=w, args=(m,)) for w in workers]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        times.append(time.perf_counter() - start)
    return median(times)


def run(out: Path, repeat: int, quick: bool, progress: Progress) -> Path:
    ops = 200 if quick else 1000
    threads = (1, 2, 4) if quick else THREADS
    algorithms = tuple(a for a in ALGORITHMS if not (quick and a == "naive"))
    report = Report(
        "concurrency",
        out,
        "Scaling under concurrency",
        {"ops_per_thread": ops, "threads": threads, "repeat": repeat},
    )
    report.text(__doc__ or "")
    for label, reads in (("50/50 read/write", 0.5), ("90/10 read/write", 0.9)):
        series: dict[str, list[float | None]] = {}
        for algorithm in algorithms:
            progress(f"{label} {algorithm}")
            series[algorithm] = [
                _wall(
                    algorithm,
                    [functools.partial(_mixed, thread=k, ops=ops, reads=reads) for k in range(n)],
                    repeat,
                )
                * 1e3
                for n in threads
            ]
            report.result(f"{label}/{algorithm}", dict(zip(threads, series[algorithm], strict=True)))
        report.text(f"### {label}: wall time in ms")
        report.table(
            ["algorithm", *map(str, threads)],
            [[a, *(f"{v:,.1f}" for v in vs if v is not None)] for a, vs in series.items()],
        )
        fig = charts.lines(
            list(threads),
            series,
            "threads",
            "wall time (ms)",
            f"{label}: {ops:,} operations per thread",
            logy=True,
        )
        report.chart(
            f"concurrency-{label[:5].replace('/', '-')}", fig, f"{label}: wall time by thread count (log)"
        )
    for label, lookups_per_insert in (("insert:lookup 1:1", 1), ("insert:lookup 1:3", 3)):
        series = {}
        for algorithm in algorithms:
            progress(f"{label} {algorithm}")
            values: list[float | None] = []
            for n in threads:
                workers: list[Callable[[Matcher], None]] = [
                    functools.partial(_inserts, thread=k, ops=ops) for k in range(n)
                ]
                workers += [functools.partial(_lookups, ops=ops) for _ in range(n * lookups_per_insert)]
                values.append(_wall(algorithm, workers, repeat) * 1e3)
            series[algorithm] = values
            report.result(f"{label}/{algorithm}", dict(zip(threads, values, strict=True)))
        report.text(
            f"### {label}: x inserting threads and {lookups_per_insert}x as many looking up; wall time in ms"
        )
        report.table(
            ["algorithm", *map(str, threads)],
            [[a, *(f"{v:,.1f}" for v in vs if v is not None)] for a, vs in series.items()],
        )
        title = f"{label}: {ops:,} inserts per inserting thread, {lookups_per_insert}x as many lookups"
        fig = charts.lines(list(threads), series, "inserting threads", "wall time (ms)", title, logy=True)
        report.chart(f"matchbox-{lookups_per_insert}", fig, f"{label}: wall time by thread count (log)")
    return report.write()
