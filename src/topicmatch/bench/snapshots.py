"""Experiment 6: 100 threads taking a consistent copy of all subscriptions at once.

The cstrie's snapshot is O(1): it swaps the root for a new generation and keeps the old one,
frozen. The trie's (and so the default's) is O(1) too, by copy-on-write: it hands its root to
the snapshot and starts a new generation, and its writers copy the nodes they change from then
on. ``subscriptions()`` walks such a snapshot into a dict: O(n), without holding up writers. The
figure is the wall time until all 100 threads hold their copy, median of runs, with a writer
thread subscribing and unsubscribing every 0.2 ms throughout, so that the copies have to be
consistent against something. The O(n) walks stop at 10k subscriptions (100 full walks of 100k
take minutes per run); the O(1) snapshots also run at 100k.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from .. import Matcher
from . import charts
from .report import Progress, Report, fmt_int
from .shapes import realistic
from .timing import median

__all__ = ["run"]

THREADS = 100


def _paced_writer(m: Matcher, stop: threading.Event) -> None:
    # One write every 0.2 ms: the copies race real writes, but the writer does not monopolise
    # the GIL (a busy loop would, and the figure would measure scheduling).
    i = 0
    while not stop.is_set() and i < 1_000_000:
        m.subscribe("bench.writer", i)
        m.unsubscribe("bench.writer", i)
        i += 1
        time.sleep(0.0002)


def _wall(m: Matcher, take: Callable[[Matcher], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        stop = threading.Event()
        w = threading.Thread(target=_paced_writer, args=(m, stop))
        w.start()
        threads = [threading.Thread(target=take, args=(m,)) for _ in range(THREADS)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        times.append(time.perf_counter() - start)
        stop.set()
        w.join(timeout=60)
    return median(times)


def run(out: Path, repeat: int, quick: bool, progress: Progress) -> Path:
    sizes = (500, 2_000) if quick else (1_000, 10_000, 100_000)
    patterns, _ = realistic(sizes[-1], 1, seed=9)
    report = Report(
        "snapshots",
        out,
        "Consistent snapshots from 100 threads",
        {"threads": THREADS, "sizes": sizes, "repeat": repeat},
    )
    ways: dict[str, tuple[str, Callable[[Matcher], object]]] = {
        "cstrie snapshot() (O(1))": ("cstrie", lambda m: m.snapshot()),
        "trie snapshot() (O(1), copy-on-write)": ("trie", lambda m: m.snapshot()),
        "cstrie subscriptions() (walk of a snapshot)": ("cstrie", lambda m: m.subscriptions()),
        "trie subscriptions() (walk of a snapshot)": ("trie", lambda m: m.subscriptions()),
    }
    series: dict[str, list[float | None]] = {}
    for name, (algorithm, take) in ways.items():
        series[name] = []
        for n in sizes:
            if n > 10_000 and "O(1)" not in name:
                # 100 full copies of 100k subscriptions take minutes per run: not needed to show
                # the difference, which the O(1) snapshot's flat line makes plain.
                series[name].append(None)
                continue
            progress(f"{name} {n:,}")
            m = Matcher(algorithm)
            for i, p in enumerate(patterns[:n]):
                m.subscribe(p, i)
            wall = _wall(m, take, repeat)
            series[name].append(wall * 1e3)
            report.result(f"{name}/{n}", wall)
    report.text(__doc__ or "")
    report.table(
        ["way to copy", *(f"{fmt_int(n)} subscriptions" for n in sizes)],
        [
            [name, *("not run" if v is None else f"{v:,.2f} ms" for v in values)]
            for name, values in series.items()
        ],
    )
    fig = charts.lines(
        list(sizes),
        series,
        "subscriptions",
        "wall time for 100 copies (ms)",
        "100 threads each taking a consistent copy while a writer runs",
        logx=True,
        logy=True,
    )
    report.chart("snapshots", fig, "Wall time for 100 threads to each take a consistent copy (log-log)")
    return report.write()
