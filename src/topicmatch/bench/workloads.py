"""Experiment: the workload matrix, every matcher on the shapes real traffic has.

Rows (data from :mod:`.shapes`, fixed seeds): the study's throughput workload; distinct topics
each looked up once (10k and 100k MQTT filters); Zipf-repeated hot topics; mostly-unmatched
publishes; subscription churn (subscribe/unsubscribe pairs at a fixed rate interleaved with
lookups); fan-out (20k subscribers on one filter, 100k over 10 filters); and a large table (first
lookups of topics, then repeats, and memory per subscription). Columns: topicmatch's default (with
and without its result cache), the five algorithms, and the Python peer that speaks the row's
dialect (paho-mqtt for MQTT, kombu for AMQP).

Method. All contenders of a row are built first (within a time budget each), then measured in
alternation: round after round, each contender runs once in turn, so that a noisy machine slows
them alike; the figure is the median of the rounds, after one warm-up round. A run looks topics up
for at most a time budget and its rate is computed on the lookups it did. Rows marked *once* give
every contender topics it has never seen in every round (consecutive slices). Every answer of
topicmatch's contenders is checked against the trie on a sample of the row's topics (200, or as
many as a tenth of the build budget allows, at least ten); a peer's disagreements are counted
and shown. Memory (large table only) is what ``tracemalloc`` saw
allocated while building, divided by the number of subscriptions.
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import charts, shapes
from .contenders import ALGORITHMS, Contender, NotBuilt, build, contenders_for
from .report import Progress, Report, fmt_int
from .timing import median

__all__ = ["run"]

FIVE = ("naive", "inverted_bitmap", "optimized_bitmap", "trie", "cstrie")
WRITE_RATE = 10_000  # churn: subscribe/unsubscribe operations per second
SAMPLE = 200  # topics per row on which every answer is checked


@dataclass
class Sizes:
    lookups: int  # lookups per round (upper bound; the time budget may cut a round short)
    budget: float  # seconds per round and contender
    build_budget: float
    once: int  # distinct topics of a row whose topics are each looked up once (all rounds)
    once_budget: float  # seconds per round and contender on such a row
    distinct: tuple[int, ...]
    zipf: int
    churn: int
    fanout: tuple[tuple[int, int], ...]
    million: int


QUICK = Sizes(3_000, 0.03, 5.0, 6_000, 0.05, (10_000,), 5_000, 10_000, ((5_000, 1), (20_000, 10)), 20_000)
FULL = Sizes(
    200_000,
    0.5,
    300.0,
    1_000_000,
    8.0,
    (10_000, 100_000),
    20_000,
    300_000,
    ((20_000, 1), (100_000, 10)),
    1_000_000,
)


@dataclass
class Row:
    """One row's results: the measure per contender, and notes (why a cell is empty, peers' errors)."""

    name: str
    title: str
    dialect: str
    unit: str = "lookups/s"
    rates: dict[str, float] = field(default_factory=dict)
    paired: dict[str, float] = field(default_factory=dict)  # default / contender, round by round
    notes: dict[str, str] = field(default_factory=dict)
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)


def _lookups(lookup: Callable[[str], Any], topics: list[str], budget: float) -> float:
    """Lookups per second of ``lookup`` over ``topics``, stopping after ``budget`` seconds.

    The clock is read after 1, 2, 4, ... 64 lookups, then every 64: a matcher that takes seconds
    per lookup (naive or kombu at a million subscriptions) stops after the first one past the
    budget, not after 64 of them.
    """
    clock = time.perf_counter
    start = clock()
    deadline = start + budget
    done, step = 0, 1
    while done < len(topics):
        for topic in topics[done : done + step]:
            lookup(topic)
        done = min(done + step, len(topics))
        if clock() > deadline:
            break
        step = min(2 * step, 64)
    return done / (clock() - start)


def _check(
    name: str, row: Row, contender: Contender, reference: Contender, topics: list[str], budget: float
) -> None:
    """Compare with the trie on ``topics``: an error for topicmatch, a counted note for a peer.

    A slow contender (naive or kombu at a million subscriptions: seconds per lookup) is checked
    on the topics it gets through in ``budget`` seconds, at least ten.
    """
    wrong, checked = [], 0
    deadline = time.perf_counter() + budget
    for topic in topics:
        if set(contender.lookup(topic)) != set(reference.lookup(topic)):
            wrong.append(topic)
        checked += 1
        if checked >= 10 and time.perf_counter() > deadline:
            break
    if not wrong:
        return
    if name in ALGORITHMS:
        raise AssertionError(f"{name} disagrees with the trie on {row.name}: {wrong[:3]}")
    row.notes[name] = f"wrong on {len(wrong)} of {checked} checked topics (e.g. `{wrong[0]}`)"


def _build_all(
    shape: shapes.Shape, row: Row, sizes: Sizes, progress: Progress, memory: bool = False
) -> dict[str, Contender]:
    built: dict[str, Contender] = {}
    for name in contenders_for(shape.dialect):
        progress(f"{row.name}: building {name}")
        gc.collect()
        if memory:
            tracemalloc.start()
        start = time.perf_counter()
        if name == "inverted_bitmap" and shape.once:
            row.notes[name] = "not run: its topic space must be known up front, and these topics are new"
            continue
        try:
            built[name] = build(name, shape.dialect, shape.pairs, lambda: shape.topics, sizes.build_budget)
        except NotBuilt as why:
            row.notes[name] = f"not run: {why}"
            continue
        finally:
            if memory:
                allocated = tracemalloc.get_traced_memory()[0]
                tracemalloc.stop()
        row.extra.setdefault(name, {})["build_s"] = time.perf_counter() - start
        if memory:
            row.extra[name]["bytes_per_subscription"] = allocated / len(shape.pairs)
    return built


def _rounds(
    built: dict[str, Contender],
    row: Row,
    repeat: int,
    measure: Callable[[str, Contender, int], float],
) -> None:
    """Round-robin measurement: round 0 warms up, then ``repeat`` rounds; the median counts."""
    samples: dict[str, list[float]] = {name: [] for name in built}
    for r in range(repeat + 1):
        for name, contender in built.items():
            value = measure(name, contender, r)
            if r:
                samples[name].append(value)
    for name, values in samples.items():
        row.rates[name] = median(values)
        row.extra.setdefault(name, {})["runs"] = values
    mine = samples.get("default")
    if mine:
        # Ratios of runs next to each other in time: this machine's speed drifts over seconds.
        for name, values in samples.items():
            ratios = [a / b for a, b in zip(mine, values, strict=True) if b]
            if ratios:  # none: the contender did no lookup at all (churn: all its time went on writes)
                row.paired[name] = median(ratios)


def _lookup_row(
    shape: shapes.Shape, title: str, sizes: Sizes, repeat: int, progress: Progress, memory: bool = False
) -> list[Row]:
    row = Row(shape.name, title, shape.dialect)
    built = _build_all(shape, row, sizes, progress, memory)
    reference = built["trie"]
    if shape.once:
        # Round r reads slice r: every round meets topics none of the contenders has seen.
        per_round = len(shape.topics) // (repeat + 1)
        slices = [shape.topics[r * per_round : (r + 1) * per_round] for r in range(repeat + 1)]
    else:
        slices = [shape.topics] * (repeat + 1)
    progress(f"{row.name}: measuring {len(built)} contenders")
    budget = sizes.once_budget if shape.once else sizes.budget
    _rounds(built, row, repeat, lambda _n, c, r: _lookups(c.lookup, slices[r], budget))
    rows = [row]
    if shape.once and shape.name.startswith("subs-"):
        # Repeats: the topics of the warm-up slice, which every contender has seen by now.
        again = Row(f"{shape.name} repeat", "the same table, topics looked up before", shape.dialect)
        progress(f"{again.name}: measuring")
        _rounds(built, again, repeat, lambda _n, c, _r: _lookups(c.lookup, slices[0], sizes.budget))
        again.notes.update(row.notes)
        rows.append(again)
    sample = list(dict.fromkeys(shape.topics[:SAMPLE]))
    for name, contender in built.items():
        _check(name, row, contender, reference, sample, sizes.build_budget / 10)
    return rows


def _churn_row(shape: shapes.Shape, sizes: Sizes, repeat: int, progress: Progress) -> Row:
    row = Row(
        shape.name,
        f"{len(shape.pairs):,} subscriptions, {WRITE_RATE:,} subscribe/unsubscribe a second among lookups",
        shape.dialect,
    )
    built = _build_all(shape, row, sizes, progress)
    done: dict[str, int] = dict.fromkeys(built, 0)  # writes applied so far, per contender
    latencies: dict[str, list[int]] = {name: [] for name in built}
    achieved: dict[str, list[float]] = {name: [] for name in built}
    topics = shape.topics
    clock_ns = time.perf_counter_ns

    def measure(name: str, contender: Contender, r: int) -> float:
        writes, lookup = shape.writes, contender.lookup
        subscribe, unsubscribe = contender.subscribe, contender.unsubscribe
        interval = 1_000_000_000 // WRITE_RATE
        start = clock_ns()
        end = start + int(sizes.budget * 1e9)
        next_write = start
        w, looked, position = done[name], 0, 0
        times = latencies[name] if r else []
        while w < len(writes):
            now = clock_ns()
            if now >= end:
                break
            if now >= next_write:
                adding, pattern, subscriber = writes[w]
                t0 = clock_ns()
                (subscribe if adding else unsubscribe)(pattern, subscriber)
                times.append(clock_ns() - t0)
                w += 1
                next_write += interval
                continue
            for topic in topics[position : position + 16]:
                lookup(topic)
            looked += len(topics[position : position + 16])
            position = (position + 16) % len(topics)
        elapsed = (clock_ns() - start) / 1e9
        if r:
            achieved[name].append((w - done[name]) / elapsed)
        done[name] = w
        return looked / elapsed

    progress(f"{row.name}: measuring {len(built)} contenders")
    _rounds(built, row, repeat, measure)
    for name, times in latencies.items():
        times.sort()
        if times:
            row.extra[name].update(
                write_p50_us=times[len(times) // 2] / 1e3,
                write_p99_us=times[min(len(times) - 1, len(times) * 99 // 100)] / 1e3,
                write_max_us=times[-1] / 1e3,
                writes_per_s=median(achieved[name]),
            )
        if median(achieved[name]) < 0.9 * WRITE_RATE:
            row.notes[name] = f"kept up {median(achieved[name]):,.0f} writes/s of {WRITE_RATE:,}"
    # The answers after the same writes: a fresh trie replays the writes each contender applied.
    sample = list(dict.fromkeys(topics[:SAMPLE]))
    for name, contender in built.items():
        reference = build("trie", shape.dialect, shape.pairs, lambda: (), sizes.build_budget)
        for adding, pattern, subscriber in shape.writes[: done[name]]:
            (reference.subscribe if adding else reference.unsubscribe)(pattern, subscriber)
        _check(name, row, contender, reference, sample, sizes.build_budget / 10)
    return row


def _matrix(sizes: Sizes, repeat: int, progress: Progress) -> list[Row]:
    rows: list[Row] = []
    lookups = sizes.lookups
    study = shapes.study(lookups)
    rows += _lookup_row(
        study, "the study's workload: 1,000 subscriptions, 1,000 topics repeated", sizes, repeat, progress
    )
    for filters in sizes.distinct:
        shape = shapes.distinct(filters, sizes.once)
        title = f"{filters:,} MQTT filters, {sizes.once:,} different topics, each looked up once (IoT)"
        rows += _lookup_row(shape, title, sizes, repeat, progress)
    shape = shapes.zipf(sizes.zipf, lookups)
    title = f"{sizes.zipf:,} AMQP patterns, topics drawn by Zipf rank from 50,000"
    rows += _lookup_row(shape, title, sizes, repeat, progress)
    shape = shapes.unmatched(sizes.zipf, lookups)
    title = f"{sizes.zipf:,} MQTT filters, 90 % of the topics match nobody"
    rows += _lookup_row(shape, title, sizes, repeat, progress)
    writes = int(WRITE_RATE * sizes.budget * (repeat + 1) * 1.2) + 2
    rows.append(_churn_row(shapes.churn(sizes.churn, lookups, writes), sizes, repeat, progress))
    for subscribers, filters in sizes.fanout:
        shape = shapes.fanout(subscribers, filters, lookups)
        title = f"{subscribers:,} subscribers on {filters} MQTT filter{'s' if filters > 1 else ''}"
        rows += _lookup_row(shape, title, sizes, repeat, progress)
    shape = shapes.million(sizes.million, sizes.once // 10)
    title = f"{sizes.million:,} AMQP subscriptions (Zipf words), each topic's first lookup"
    rows += _lookup_row(shape, title, sizes, repeat, progress, memory=True)
    return rows


def _ratio(row: Row, name: str | None) -> str:
    value = row.paired.get(name or "")
    return f"{value:.2f}" if value else "-"


def _summary(rows: list[Row]) -> tuple[list[str], list[list[str]]]:
    headers = ["row", "default", "best of the five", "default ÷ best", "default ÷ no cache", "default ÷ peer"]
    table = []
    for row in rows:
        default = row.rates.get("default")
        five = {n: row.rates[n] for n in FIVE if n in row.rates}
        # The best is the one the default fares worst against, round by round (the paired ratio):
        # on a noisy machine the highest median rate can belong to another.
        paired = [n for n in five if n in row.paired]
        best = min(paired, key=row.paired.__getitem__) if paired else None
        peer = "paho" if row.dialect == "mqtt" else "kombu"
        table.append(
            [
                row.name,
                fmt_int(default) if default else "-",
                f"{best} {fmt_int(five[best])}" if best else "-",
                _ratio(row, best),
                _ratio(row, "default, no cache"),
                f"{_ratio(row, peer)} ({peer})",
            ]
        )
    return headers, table


def run(out: Path, repeat: int, quick: bool, progress: Progress) -> Path:
    sizes = QUICK if quick else FULL
    report = Report(
        "workloads",
        out,
        "The workload matrix: every matcher on the shapes of real traffic",
        {"repeat": repeat, **vars(sizes), "write_rate": WRITE_RATE},
    )
    rows = _matrix(sizes, repeat, progress)
    report.text(__doc__ or "")
    headers, table = _summary(rows)
    report.text(
        "## Summary\n\nLookups per second (median of the rounds). Ratios: the default's rate divided by the "
        "other's in the same round, median over the rounds; above 1 the default is faster."
    )
    report.table(headers, table)
    names = list(dict.fromkeys(n for row in rows for n in row.rates))
    relative = [[1 / row.paired[n] if row.paired.get(n) else None for n in names] for row in rows]
    fig = charts.heatmap(
        [row.name for row in rows],
        names,
        relative,
        "Lookups per second relative to topicmatch's default (1.00 = as fast; blank: not run)",
    )
    report.chart("workloads", fig, "Each matcher's lookup rate divided by the default's, per workload")
    for row in rows:
        report.text(f"## {row.name}\n\n{row.title} ({row.dialect}).")
        lines = []
        for name in contenders_for(row.dialect):
            extra = row.extra.get(name, {})
            rate = row.rates.get(name)
            cells = [name, fmt_int(rate) if rate else "-", _ratio(row, name)]
            if row.name == "churn":
                cells += [
                    f"{extra['write_p50_us']:,.1f}" if "write_p50_us" in extra else "-",
                    f"{extra['write_p99_us']:,.1f}" if "write_p99_us" in extra else "-",
                    f"{extra['write_max_us']:,.0f}" if "write_max_us" in extra else "-",
                ]
            if "bytes_per_subscription" in extra:
                cells.append(f"{extra['bytes_per_subscription']:,.0f}")
            elif row.name.startswith("subs-") and not row.name.endswith("repeat"):
                cells.append("-")
            cells.append(row.notes.get(name, ""))
            lines.append(cells)
        head = ["matcher", row.unit, "default is x faster"]
        if row.name == "churn":
            head += ["write p50 µs", "write p99 µs", "write max µs"]
        if row.name.startswith("subs-") and not row.name.endswith("repeat"):
            head.append("bytes/subscription")
        report.table([*head, "note"], lines)
        report.result(
            row.name,
            {
                "title": row.title,
                "dialect": row.dialect,
                "rates": row.rates,
                "notes": row.notes,
                "extra": row.extra,
            },
        )
    return report.write()
