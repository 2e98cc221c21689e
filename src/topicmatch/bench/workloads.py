"""Experiment: the workload matrix, every matcher on the shapes real traffic has, fresh and steady.

Rows (data from :mod:`.shapes`, fixed seeds): the study's throughput workload; distinct topics
each looked up once (10k and 100k MQTT filters); Zipf-repeated hot topics; mostly-unmatched
publishes; subscription churn (subscribe/unsubscribe pairs at a fixed rate interleaved with
lookups); fan-out (20k subscribers on one filter, 100k over 10 filters); a large table (first
lookups of topics, then repeats, and memory per subscription); and a burst (hot subjects, a burst
of new ones, the hot ones again). Columns: topicmatch's default (with and without its result
cache), the five algorithms, and the Python peer that speaks the row's dialect (paho-mqtt for
MQTT, kombu for AMQP; NATS has none).

Every row is measured twice. **Early life**: a matcher that has just been built (how a Spark task,
a CLI run or a restarted broker meets it), over its first lookups: the rate of the first
``early[0]`` and of the first ``early[1]`` lookups, each contender built afresh for every round
and dropped after it (on the large table, only the default, itself without a cache and the trie
are; the others, whose builds take minutes there, are built once and get one round before any
other lookup). **Steady state**: built once, a warm-up round, then rounds of lookups; on rows
whose topics are seen once, built afresh for every round (the large table: as in early life)
and warmed up, every measured round reading topics no contender has seen.

Method. Every contender is built and measured in a process of its own, forked from the one that
holds the row's data (:mod:`.alone`): no contender shares a heap with another, or with the builds
before it. In early life each contender runs its first lookups whole, one after another, as a fresh
matcher does in a Spark task, built and run in the round's order: each contender first in turn,
the others shuffled (:func:`_order`), so that none always follows the same one. In the steady
state the contenders take turns over the round's lookups, a tenth of them at a time, each turn
in an order of its own made the same way, so that a noisy machine slows them alike and none is
always first or always after the same one (churn: turns of a tenth of the round's
time, each going on with the writes where the last stopped; burst: each runs its round whole, in
turn, the order reversed every other round). A figure is the median of the rounds, and a ratio the
median over the rounds of the default's rate divided by the other's in the same round (each
round's rates are in results.json, ``samples``: how far the rounds spread). A contender
stops at a time budget and its rate is computed on the lookups it did (the report says where a
window was cut short), in the thread's CPU time: on a shared machine, another process running
meanwhile does not count against the contender that happened to run then. Every answer of
topicmatch's contenders is checked against the trie on a sample of the row's topics; a peer's
disagreements are counted and shown. Memory (large table only) is what ``tracemalloc`` saw
allocated while building, divided by the number of subscriptions. Each row's table gives each
contender's build time, the median of its builds in wall seconds (a build that measured memory ran
under ``tracemalloc``: left out, or marked where it is the contender's only one). The large
table's repeat row looks up again topics each build has seen, on the same budget per contender as
the row's first lookups.

The burst row gives each contender the hot subjects until it is warm, then the burst, then the
hot subjects again: its rate is that of the first lookups after the burst (``burst[3]`` of them),
and the report shows the rate before the burst beside it.
"""

from __future__ import annotations

import functools
import gc
import random
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple

from ..support.commandline import UsageError, counted
from . import charts, shapes
from .alone import Alone
from .contenders import AGAIN, ALGORITHMS, PEERS, Contender, NotBuilt, build, contenders_for
from .report import Progress, Report, fmt_int
from .timing import median

__all__ = ["STEADY", "Row", "RowSpec", "Sizes", "lookup_row", "phases_of", "rows_of", "run"]

FIVE = ("naive", "inverted_bitmap", "optimized_bitmap", "trie", "cstrie")
WRITE_RATE = 10_000  # churn: subscribe/unsubscribe operations per second
SAMPLE = 200  # topics per row on which every answer is checked
STEADY = "steady"  # the key of the steady-state figures beside the early windows
#: The default's target: at least this ratio to the best of the five and to itself without its
#: cache, in every phase of every row (issue 28). The report lists each cell under it, with its
#: rounds.
TARGET: Final = 0.95


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
    early: tuple[int, int]  # the early-life windows: a fresh matcher's first lookups
    early_budget: float  # seconds per early-life run and contender
    burst: tuple[int, int, int, int]  # subscriptions, hot subjects, burst subjects, lookups after


QUICK = Sizes(
    3_000,
    0.03,
    5.0,
    6_000,
    0.05,
    (10_000,),
    5_000,
    10_000,
    ((5_000, 1), (20_000, 10)),
    20_000,
    (1_000, 3_000),
    0.1,  # a smoke run: the slow contenders (scans, peers) stop here on every row
    (20_000, 200, 5_000, 1_000),
)
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
    (10_000, 100_000),
    5.0,
    (1_000_000, 1_000, 200_000, 10_000),
)


@dataclass
class Row:
    """One row's results: each contender's rate in each round, by phase (early windows and
    steady), and notes (why a cell is empty, peers' errors, windows cut short). The rates and
    the default's ratios the report gives are medians of the rounds."""

    name: str
    title: str
    dialect: str
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)  # phase -> name -> rounds
    notes: dict[str, str] = field(default_factory=dict)
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)
    absent: dict[str, str] = field(default_factory=dict)  # phase -> why the row has no figure in it
    contenders: tuple[str, ...] = ()  # its columns, in order (run's ``contenders``, or every one)

    @property
    def rates(self) -> dict[str, dict[str, float]]:
        """phase -> contender -> rate: the median of its rounds."""
        return {phase: {n: median(v) for n, v in by.items()} for phase, by in self.samples.items()}

    @property
    def paired(self) -> dict[str, dict[str, float]]:
        """phase -> contender -> the median of the default's ratio to it, round by round."""
        out: dict[str, dict[str, float]] = {}
        for phase in self.samples:
            ratios = {n: median(r) for n in self.samples[phase] if (r := self.round_ratios(phase, n))}
            if ratios:
                out[phase] = ratios
        return out

    def round_ratios(self, phase: str, name: str | None) -> list[float]:
        """The default's rate divided by ``name``'s, round by round: ratios of runs next to each
        other in time, as this machine's speed drifts over seconds. A round where the contender
        did no lookup at all (churn: all its time went on writes) has no ratio."""
        by = self.samples.get(phase, {})
        mine, theirs = by.get("default", []), by.get(name or "", [])
        return [a / b for a, b in zip(mine, theirs, strict=False) if b]

    def ratio(self, phase: str, name: str | None) -> float | None:
        ratios = self.round_ratios(phase, name)
        return median(ratios) if ratios else None


def phases_of(sizes: Sizes) -> list[str]:
    """The names of a row's phases: each early window (``first 10,000``), then :data:`STEADY`."""
    return [f"first {n:,}" for n in sizes.early] + [STEADY]


def _window_rates(
    lookup: Callable[[str], Any], topics: list[str], windows: tuple[int, ...], budget: float
) -> dict[int, tuple[float, int]]:
    """For each window ``w``: the rate of the first ``w`` lookups of ``topics`` and how many were
    done (fewer than ``w`` when the ``budget`` in seconds ran out first: the rate is then that of
    the lookups done).

    The clock is read after 1, 2, 4, ... 64 lookups, then every 64, and at each window's end: a
    matcher that takes seconds per lookup (naive or kombu at a million subscriptions) stops after
    the first one past the budget, not after 64 of them.
    """
    # Rates in this thread's CPU time (another process on a shared machine does not count
    # against the contender that happens to run meanwhile); the budget in wall time.
    cpu, clock = time.thread_time, time.perf_counter
    out: dict[int, tuple[float, int]] = {}
    last = max(windows)
    start, deadline = cpu(), clock() + budget
    done, step = 0, 1
    while done < last:
        end = min(done + step, last, *(w for w in windows if w > done))
        for topic in topics[done:end]:
            lookup(topic)
        done = end
        if done in windows:
            out[done] = (done / max(cpu() - start, 1e-9), done)
        if clock() > deadline:
            break
        step = min(2 * step, 64)
    elapsed = max(cpu() - start, 1e-9)
    for w in windows:
        out.setdefault(w, (done / elapsed, done))
    return out


# -- in a contender's own process (.alone): what the parent asks it to run ------------------
@dataclass
class _Held:
    """What a contender's process keeps: the contender, the row's data it inherited, and where
    its lookups are in the row's writes (``shape.every``: a write after every ``every`` lookups)."""

    contender: Contender
    shape: shapes.Shape
    written: int = 0  # the writes of ``shape.writes`` applied
    since: int = 0  # lookups since the last write


def _make(name: str, shape: shapes.Shape, sizes: Sizes, memory: bool) -> tuple[_Held | None, dict[str, Any]]:
    """Contender ``name`` holding the row's pairs, and what its build measured (``note``: why
    it could not be built)."""
    gc.collect()
    if memory:
        tracemalloc.start()
    start = time.perf_counter()
    try:
        built = build(name, shape.dialect, shape.pairs, lambda: shape.topics, sizes.build_budget)
    except NotBuilt as why:
        return None, {"note": f"not run: {why}"}
    finally:
        if memory:
            allocated = tracemalloc.get_traced_memory()[0]
            tracemalloc.stop()
    measured: dict[str, Any] = {"build_s": time.perf_counter() - start}
    if memory:
        measured["bytes_per_subscription"] = allocated / len(shape.pairs)
    return _Held(built, shape), measured


def _topics(shape: shapes.Shape, source: str, start: int, stop: int) -> list[str]:
    """Lookups ``start:stop`` of the row's ``topics``, or of its ``hot`` subjects round and round."""
    if source == "hot":
        return [shape.hot[i % len(shape.hot)] for i in range(start, stop)]
    return shape.topics[start:stop]


def _rates_of(
    held: _Held, source: str, start: int, stop: int, windows: tuple[int, ...], budget: float
) -> dict[int, tuple[float, int]]:
    """:func:`_window_rates` of the contender over :func:`_topics`; where the row writes among its
    lookups (``shape.every``), each ``every``-th lookup is preceded by the next write, going on
    where the last call stopped, and the rate is that of the lookups with the writes' time
    included (a write a lookup makes the contender wait for, as a broker's lookups wait for its
    subscribes)."""
    topics = _topics(held.shape, source, start, stop)
    every = held.shape.every
    if not every:
        return _window_rates(held.contender.lookup, topics, windows, budget)
    contender, writes = held.contender, held.shape.writes
    lookup, subscribe, unsubscribe = contender.lookup, contender.subscribe, contender.unsubscribe
    left = every - held.since

    def write_and_look_up(topic: str) -> Any:
        nonlocal left
        left -= 1
        if not left:
            left = every
            adding, pattern, subscriber = writes[held.written]
            (subscribe if adding else unsubscribe)(pattern, subscriber)
            held.written += 1
        return lookup(topic)

    try:
        return _window_rates(write_and_look_up, topics, windows, budget)
    finally:
        held.since = every - left


def _written(held: _Held) -> int:
    """How many of the row's writes the contender has applied."""
    return held.written


def _write_to(held: _Held, count: int) -> None:
    """Apply the row's writes up to the first ``count``: contenders that did different numbers of
    lookups (a time budget) then hold the same table, and their answers compare."""
    contender = held.contender
    for adding, pattern, subscriber in held.shape.writes[held.written : count]:
        (contender.subscribe if adding else contender.unsubscribe)(pattern, subscriber)
    held.written = max(held.written, count)


def _digest(answer: Any) -> tuple[int, int]:
    """An answer as its size and the hash of its set (forked processes share the hash seed)."""
    found = frozenset(answer)
    return len(found), hash(found)


def _answers(held: _Held, topics: list[str], budget: float) -> list[tuple[int, int]]:
    """The :func:`_digest` of the contender's answer to each of ``topics``, as many as it gets
    through in ``budget`` seconds (at least ten: naive or kombu at a million subscriptions take
    seconds per lookup)."""
    out = []
    deadline = time.perf_counter() + budget
    for topic in topics:
        out.append(_digest(held.contender.lookup(topic)))
        if len(out) >= 10 and time.perf_counter() > deadline:
            break
    return out


# -- in the parent ----------------------------------------------------------------------------
def _check(
    name: str, row: Row, alone: Alone, reference: list[tuple[int, int]], topics: list[str], budget: float
) -> None:
    """Compare with the trie's answers (``reference``, digests of ``topics``): an error for
    topicmatch, a counted note for a peer."""
    got = alone.call(_answers, topics, budget)
    wrong = [topic for topic, mine, right in zip(topics, got, reference, strict=False) if mine != right]
    if not wrong:
        return
    if name in ALGORITHMS:
        raise AssertionError(f"{name} disagrees with the trie on {row.name}: {wrong[:3]}")
    row.notes[name] = f"wrong on {len(wrong)} of {counted(len(got), 'checked topic')} (e.g. `{wrong[0]}`)"


#: Why the inverted bitmap is not run on a row whose topics are new to it.
_NEW_TOPICS = "not run: its topic space must be known up front, and these topics are new"


def _build_one(name: str, shape: shapes.Shape, row: Row, sizes: Sizes, memory: bool = False) -> Alone | None:
    """Contender ``name`` holding the row's pairs, in a process of its own (:mod:`.alone`), or
    None with a note saying why not."""
    if name == "inverted_bitmap" and (shape.once or shape.hot):
        row.notes[name] = _NEW_TOPICS
        return None
    alone = Alone(functools.partial(_make, name, shape, sizes, memory))
    note = alone.built.pop("note", None)
    if note is not None:
        row.notes[name] = note
        alone.close()
        return None
    extra = row.extra.setdefault(name, {})
    extra.update(alone.built)
    if not memory:  # a build under tracemalloc runs slower: only the others are its build time
        extra.setdefault("builds_s", []).append(alone.built["build_s"])
    return alone


def _build_all(
    shape: shapes.Shape,
    row: Row,
    sizes: Sizes,
    progress: Progress,
    memory: bool = False,
    only: list[str] | None = None,
    skip: tuple[str, ...] = (),
) -> dict[str, Alone]:
    """Every contender of the row (``only`` these), each in a process of its own (:func:`_close`
    them)."""
    built: dict[str, Alone] = {}
    for name in row.contenders if only is None else only:
        if name in skip:
            row.notes[name] = f"not run: {len(shape.pairs):,} subscriptions (see the subs-1M row)"
            continue
        progress(f"{row.name}: building {name}")
        contender = _build_one(name, shape, row, sizes, memory)
        if contender is not None:
            built[name] = contender
    return built


def _close(built: dict[str, Alone]) -> None:
    for alone in built.values():
        alone.close()


def _keep(row: Row, phase: str, samples: dict[str, list[float]]) -> None:
    """Keeps ``samples`` (contender -> rate per round) as the row's ``phase``."""
    row.samples[phase] = {name: list(values) for name, values in samples.items() if values}


def _rounds(
    names: list[str], repeat: int, measure: Callable[[str, int], float | None]
) -> dict[str, list[float]]:
    """Round-robin measurement: round 0 warms up, then ``repeat`` rounds, the order reversed
    every other round; ``measure(name, round)`` gives a rate or None (not run)."""
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeat + 1):
        for name in names if r % 2 == 0 else names[::-1]:
            value = measure(name, r)
            if r and value is not None:
                samples[name].append(value)
    return samples


#: The contenders a large row's early life builds afresh for every round: the default, itself
#: without its cache and the trie, whose ratios the matrix is about (a build of a million
#: subscriptions: about 10 s; the others' take minutes, so they get one round, on the steady
#: phase's untouched builds).
REBUILT_AT_SCALE: Final = ("default", "default, no cache", "trie")


#: Turns per round when the contenders of a row take turns over its lookups (:func:`_rates_over`).
TURNS: Final = 10


def _order(names: list[str], k: int) -> list[str]:
    """The order of turn (or round) ``k``: ``names[k % len(names)]`` first, so that each runs
    first in turn, then the others shuffled by a generator seeded with ``k``, so that who runs
    just before whom changes from one turn to the next, and the same ``k`` gives the same order.

    A rotation (``names`` rotated by ``k``) also put each first in turn, but kept every
    contender's predecessor the same in every turn, and the predecessor set the ratio: on the
    distinct-100k row, compiled, 10 rounds of early life in the matrix's order put the default
    at 0.951 / 0.939 of the trie (first 10,000 / 100,000), and the same with the two swapped,
    each taking the other's place, at 1.036 / 1.021 (CHANGELOG.md, "Performance history"; the method:
    docs/performance.md)."""
    if not names:
        return []
    first = names[k % len(names)]
    rest = [name for name in names if name != first]
    random.Random(k).shuffle(rest)
    return [first, *rest]


def _early_topics(shape: shapes.Shape, r: int, count: int) -> tuple[int, int]:
    """The topics of early-life round ``r`` (start and stop): a fresh matcher reads the row's
    sequence from its start, or (topics seen once) its own slice of them."""
    if not shape.once:
        return 0, count
    start = (r * count) % max(1, len(shape.topics) - count)
    return start, start + count


Samples = dict[int, dict[str, list[float]]]  # early window -> contender -> rate per round


def _early_life(
    shape: shapes.Shape,
    row: Row,
    sizes: Sizes,
    repeat: int,
    progress: Progress,
    names: list[str],
    built: dict[str, Alone] | None = None,
) -> Samples:
    """The early-life rates of ``names``: each contender's first ``sizes.early`` lookups, run
    whole, one contender after another in the round's order (:func:`_order`: each first in
    turn, the others shuffled), on builds made for the round in that order, each in a process
    of its own, and dropped after it; or, given ``built`` (contenders no lookup has touched
    yet), one round on those.

    Whole, as a fresh matcher meets its first lookups in a Spark task or a CLI run: in turns of
    a thousand lookups, with six other processes run between two turns, every turn began with
    the CPU's caches filled by the others, which cost the contenders that keep the most (the
    default's cache) the most: compiled, fan-out-20k's first 10,000 ran at 0.71 of the naive scan
    in turns and at 0.94 whole (CHANGELOG.md, "Performance history")."""
    windows = sizes.early
    samples: Samples = {w: {n: [] for n in names} for w in windows}
    rounds = repeat if built is None else 1
    for r in range(rounds):
        order = _order(names, r)  # of the builds and of the runs
        progress(f"{row.name}: early life, round {r + 1} of {rounds}, {', '.join(order)}")
        start, stop = _early_topics(shape, r, max(windows))
        if built is None:
            fresh = {n: a for n in order if (a := _build_one(n, shape, row, sizes)) is not None}
        alones = fresh if built is None else {n: built[n] for n in order if n in built}
        try:
            rates = {
                name: alone.call(_rates_of, "topics", start, stop, windows, sizes.early_budget)
                for name, alone in alones.items()
            }
        finally:
            if built is None:
                _close(fresh)
        for name, by_window in rates.items():
            for w, (rate, done) in by_window.items():
                samples[w][name].append(rate)
                if done < w:
                    lookups = "lookup" if done == 1 else "lookups"
                    row.notes.setdefault(name, f"first {w:,}: {done:,} {lookups} in the time budget")
    return samples


def _rates_over(
    alones: dict[str, Alone], topics: tuple[int, int], budget: float, rotation: int = 0
) -> dict[str, float]:
    """The rate of each contender over the row's ``topics`` (start, stop), the contenders taking
    turns of a tenth of them.

    Each turn has an order of its own (:func:`_order` of the turn's number in the run, from
    ``rotation``, the round's number: each contender first in turn, the others shuffled). Each
    runs in its own process: whatever the machine does meanwhile, and whatever the contender
    before did to the CPU's caches, falls on all of them alike; run one after another, a
    contender's rate depended on its place in the order by as much as 10 %
    (CHANGELOG.md, "Performance history"). A contender stops after ``budget`` seconds of
    lookups; its rate is then that of the lookups it did.
    """
    names = list(alones)
    start, stop = topics
    turn = max(1, (stop - start) // TURNS)
    done = dict.fromkeys(names, 0)
    spent = dict.fromkeys(names, 0.0)  # the thread CPU seconds of its lookups so far
    for k, a in enumerate(range(start, stop, turn)):
        b = min(a + turn, stop)
        for name in _order(names, rotation * TURNS + k):
            if done[name] < a - start or spent[name] >= budget:
                continue  # out of its budget
            rate, did = alones[name].call(_rates_of, "topics", a, b, (b - a,), budget - spent[name])[b - a]
            done[name] += did
            spent[name] += did / rate
    return {name: done[name] / max(spent[name], 1e-9) for name in names}


def lookup_row(
    shape: shapes.Shape,
    title: str,
    sizes: Sizes,
    repeat: int,
    progress: Progress,
    large: bool,
    contenders: tuple[str, ...],
) -> list[Row]:
    """A row of lookups: early life, steady state, answers checked. ``large``: the large table,
    whose memory per subscription is measured and which rebuilds only :data:`REBUILT_AT_SCALE`
    every round (the others, built once, get one round of early life before any other lookup).
    Steady state: round 0 warms up, then ``repeat`` rounds, on builds kept for every round where
    topics repeat, on builds of the round (warmed up on the same topics) where they are seen
    once (``shape.once``). Where ``shape.every`` is set, every contender writes among its lookups
    (:func:`_rates_of`), and before the answers are checked each is brought to the same write.
    The matrix runs its lookup rows with it, and ``bench sweep`` (:mod:`.sweep`) each shape it
    draws."""
    row = Row(shape.name, title, shape.dialect, contenders=contenders)
    names = [n for n in row.contenders if not (n == "inverted_bitmap" and shape.once)]
    if shape.once and "inverted_bitmap" in row.contenders:
        row.notes["inverted_bitmap"] = _NEW_TOPICS
    rebuilt = [n for n in names if n in REBUILT_AT_SCALE or not large]
    early = _early_life(shape, row, sizes, repeat, progress, rebuilt)
    # Where topics repeat, the steady state is what a matcher has learnt over time: one build
    # per contender, kept for every round. Where they are seen once, there is nothing to learn
    # beyond the warm-up, and a build per round keeps one process's place in memory from
    # setting the ratio of a whole run (CHANGELOG.md, "Performance history").
    if not shape.once:
        rebuilt = []
    count = len(shape.topics)
    if shape.once:
        # Round r reads slice r: every round meets topics none of the contenders has seen (the
        # early life read the start of the list: the steady rounds read from its end). Slice 0
        # warms each build up, and is what the repeat row looks up again.
        per_round = min(count // (repeat + 2), sizes.once)
        slices = [(count - (r + 1) * per_round, count - r * per_round) for r in range(repeat + 1)]
    else:
        slices = [(0, count)] * (repeat + 1)
    budget = sizes.once_budget if shape.once else sizes.budget
    again = Row(
        f"{shape.name} repeat",
        "the same table, topics looked up before",
        shape.dialect,
        contenders=row.contenders,
    )
    seen_before = f"no early life: {shape.name}'s builds, looking up again topics they have seen"
    again.absent.update({f"first {w:,}": seen_before for w in sizes.early})
    repeats = shape.once and shape.name.startswith("subs-")
    steady: dict[str, list[float]] = {n: [] for n in names}
    seen: dict[str, list[float]] = {n: [] for n in names}
    kept: dict[str, Alone] = {}
    try:
        kept = _build_all(shape, row, sizes, progress, large, [n for n in names if n not in rebuilt])
        if large:  # built once: their early life's one round
            for w, more in _early_life(shape, row, sizes, repeat, progress, list(kept), kept).items():
                early[w].update(more)
        _rates_over(kept, slices[0], budget)
        for w in sizes.early:
            _keep(row, f"first {w:,}", early[w])
        for r in range(1, repeat + 1):
            progress(f"{row.name}: steady state, round {r} of {repeat}")
            fresh = _build_all(shape, row, sizes, progress, large and r == 1, _order(rebuilt, r))
            try:
                _rates_over(fresh, slices[0], budget, r)
                alones = {n: a for n in names if (a := fresh.get(n) or kept.get(n)) is not None}
                for name, rate in _rates_over(alones, slices[r], budget, r).items():
                    steady[name].append(rate)
                if repeats:
                    for name, rate in _rates_over(alones, slices[0], budget, r).items():
                        seen[name].append(rate)
                if r == repeat:
                    if shape.every:  # writes among the lookups: the same table in every contender
                        last = max(alone.call(_written) for alone in alones.values())
                        for alone in alones.values():
                            alone.call(_write_to, last)
                    sample = list(dict.fromkeys(shape.topics[:SAMPLE]))
                    reference = alones["trie"].call(_answers, sample, sizes.build_budget)
                    for name, alone in alones.items():
                        _check(name, row, alone, reference, sample, sizes.build_budget / 10)
            finally:
                _close(fresh)
    finally:
        _close(kept)
    _keep(row, STEADY, steady)
    if not repeats:
        return [row]
    _keep(again, STEADY, seen)
    again.notes.update(row.notes)
    again.extra.update(row.extra)  # the same builds
    return [row, again]


def _churn_run(
    contender: Contender,
    writes: list[tuple[bool, str, int]],
    first_write: int,
    topics: list[str],
    position: int,
    lookups: int,
    budget: float,
    times: list[int] | None,
) -> tuple[int, float, int, int]:
    """Lookups of ``topics`` from ``position`` on (round and round) with ``writes[first_write:]``
    paced at :data:`WRITE_RATE` a second among them, until ``lookups`` lookups are done,
    ``budget`` seconds have passed or the writes run out: the lookups done, the thread CPU
    seconds they took (writes included), the next write and the next position. Each write's
    duration in ns is appended to ``times``."""
    lookup, subscribe, unsubscribe = contender.lookup, contender.subscribe, contender.unsubscribe
    clock_ns, cpu_ns = time.perf_counter_ns, time.thread_time_ns  # writes paced in wall time
    interval = 1_000_000_000 // WRITE_RATE
    start, cpu_start = clock_ns(), cpu_ns()
    end = start + int(budget * 1e9)
    next_write = start
    w, looked = first_write, 0
    while w < len(writes) and looked < lookups:
        now = clock_ns()
        if now >= end:
            break
        if now >= next_write:
            adding, pattern, subscriber = writes[w]
            t0 = clock_ns()
            (subscribe if adding else unsubscribe)(pattern, subscriber)
            if times is not None:
                times.append(clock_ns() - t0)
            w += 1
            next_write += interval
            continue
        chunk = topics[position : position + min(16, lookups - looked)]
        for topic in chunk:
            lookup(topic)
        looked += len(chunk)
        position = (position + len(chunk)) % len(topics)
    return looked, max((cpu_ns() - cpu_start) / 1e9, 1e-9), w, position


@dataclass
class _Churned:
    """What a contender's churn turns have done so far: where the next turn goes on (``write``,
    ``position``), and its totals since they were last reset."""

    write: int = 0
    position: int = 0
    looked: int = 0
    cpu: float = 0.0  # thread CPU seconds of the lookups and writes
    wall: float = 0.0
    writes: int = 0
    times: list[int] = field(default_factory=list)  # each write's duration in ns (if timed)

    def rate(self) -> float:
        """Lookups per thread CPU second since the totals were last reset (writes' time included:
        a contender's lookups are what it serves while keeping up with the writes)."""
        return self.looked / max(self.cpu, 1e-9)


def _churn_in(
    held: _Held, write: int, position: int, lookups: int, budget: float, timed: bool
) -> tuple[int, float, int, int, list[int], float]:
    """:func:`_churn_run` on the row's topics and writes, in the contender's process: what it
    returns, each write's duration in ns (if ``timed``) and the turn's wall time in s."""
    times: list[int] = []
    start = time.perf_counter()
    shape = held.shape
    looked, cpu, write, position = _churn_run(
        held.contender, shape.writes, write, shape.topics, position, lookups, budget, times if timed else None
    )
    return looked, cpu, write, position, times, time.perf_counter() - start


def _churn_turn(
    alones: dict[str, Alone],
    state: dict[str, _Churned],
    k: int,
    lookups: int,
    seconds: float,
    budget: float,
    timed: bool,
) -> None:
    """Turn ``k`` of the churn row: each contender in turn, in the order :func:`_order` gives ``k``
    (as in :func:`_rates_over`), does ``lookups`` lookups or ``seconds`` seconds at most, with the writes
    paced among them, going on where its last turn stopped; ``state`` sums what each did. A
    contender whose turns since ``state`` was reset took ``budget`` seconds sits the rest out (a
    turn ends at its first clock reading past ``seconds``, every 16 lookups: the naive scan's
    16 take seconds at 300,000 subscriptions)."""
    names = list(alones)
    for name in _order(names, k):
        s = state[name]
        if s.wall >= budget:
            continue
        looked, cpu, write, s.position, times, wall = alones[name].call(
            _churn_in, s.write, s.position, lookups, seconds, timed
        )
        s.looked, s.cpu, s.wall = s.looked + looked, s.cpu + cpu, s.wall + wall
        s.writes, s.write = s.writes + write - s.write, write
        s.times += times


def _churn_row(
    shape: shapes.Shape, sizes: Sizes, repeat: int, progress: Progress, contenders: tuple[str, ...]
) -> Row:
    row = Row(
        shape.name,
        f"{len(shape.pairs):,} subscriptions, {WRITE_RATE:,} subscribe/unsubscribe a second among lookups",
        shape.dialect,
        contenders=contenders,
    )
    names = list(row.contenders)
    # Early life: fresh contenders, each run whole in turn (as _early_life runs them), the
    # first writes of the list among their first lookups: the first early[0] lookups, then on
    # to early[1] at once.
    windows = sorted(sizes.early)
    early: dict[int, dict[str, list[float]]] = {w: {n: [] for n in names} for w in windows}
    for r in range(repeat):
        progress(f"{row.name}: early life, round {r + 1} of {repeat}")
        order = _order(names, r)  # of the builds and of the runs
        fresh = {n: a for n in order if (a := _build_one(n, shape, row, sizes)) is not None}
        state = {name: _Churned() for name in fresh}
        budget = sizes.early_budget
        try:
            for name, alone in fresh.items():
                one, s = {name: alone}, state[name]
                for w in windows:
                    _churn_turn(one, state, 0, w - s.looked, budget - s.wall, budget, False)
                    early[w][name].append(s.rate())
                    if s.looked < w:
                        row.notes.setdefault(
                            name, f"first {w:,}: {counted(s.looked, 'lookup')} in the time budget"
                        )
        finally:
            _close(fresh)
    for w in windows:
        _keep(row, f"first {w:,}", early[w])
    # Steady state: built once; a warm-up round, then rounds of TURNS turns, each going on with
    # the writes and topics where the contender's last turn stopped.
    built = _build_all(shape, row, sizes, progress)
    state = {name: _Churned() for name in built}
    steady: dict[str, list[float]] = {name: [] for name in built}
    achieved: dict[str, list[float]] = {name: [] for name in built}
    try:
        progress(f"{row.name}: steady state, {counted(len(built), 'contender')}")
        for r in range(repeat + 1):
            for s in state.values():
                s.looked, s.cpu, s.wall, s.writes = 0, 0.0, 0.0, 0
            for t in range(TURNS):
                _churn_turn(built, state, r * TURNS + t, 10**12, sizes.budget / TURNS, sizes.budget, r > 0)
            if r:
                for name, s in state.items():
                    steady[name].append(s.rate())
                    achieved[name].append(s.writes / max(s.wall, 1e-9))
        _keep(row, STEADY, steady)
        for name, s in state.items():
            times = sorted(s.times)
            if times:
                row.extra[name].update(
                    write_p50_us=times[len(times) // 2] / 1e3,
                    write_p99_us=times[min(len(times) - 1, len(times) * 99 // 100)] / 1e3,
                    write_max_us=times[-1] / 1e3,
                    writes_per_s=median(achieved[name]),
                )
            if achieved[name] and median(achieved[name]) < 0.9 * WRITE_RATE:
                row.notes[name] = f"kept up {median(achieved[name]):,.0f} writes/s of {WRITE_RATE:,}"
        # The answers after the same writes: a fresh trie replays the writes each contender applied.
        sample = list(dict.fromkeys(shape.topics[:SAMPLE]))
        for name, alone in built.items():
            reference = build("trie", shape.dialect, shape.pairs, lambda: (), sizes.build_budget)
            for adding, pattern, subscriber in shape.writes[: state[name].write]:
                (reference.subscribe if adding else reference.unsubscribe)(pattern, subscriber)
            right = [_digest(reference.lookup(topic)) for topic in sample]
            _check(name, row, alone, right, sample, sizes.build_budget / 10)
    finally:
        _close(built)
    return row


def _burst_in(
    held: _Held, r: int, burst_count: int, after: int, budget: float, burst_budget: float
) -> tuple[float, float, int, float]:
    """Round ``r`` of the burst row, in the contender's process: the rate of the hot subjects
    until warm (20 times over), of the round's burst of new ones (and how many it got through
    in ``burst_budget`` seconds), and of the first ``after`` lookups of the hot ones again."""
    lookup, shape = held.contender.lookup, held.shape
    warm = len(shape.hot) * 20
    before = _window_rates(lookup, _topics(shape, "hot", 0, warm), (warm,), budget)[warm][0]
    new = shape.topics[r * burst_count : (r + 1) * burst_count]
    rate, done = _window_rates(lookup, new, (len(new),), burst_budget)[len(new)]
    again = _window_rates(lookup, _topics(shape, "hot", 0, after), (after,), budget)[after][0]
    return before, rate, done, again


def _burst_row(
    shape: shapes.Shape, sizes: Sizes, repeat: int, progress: Progress, contenders: tuple[str, ...]
) -> Row:
    """Hot subjects until warm, a burst of new ones, the hot ones again: the rate of the first
    ``sizes.burst[3]`` lookups after the burst (every phase), and before it (steady column)."""
    _, hot_count, burst_count, after = sizes.burst
    row = Row(
        shape.name,
        f"{len(shape.pairs):,} subscriptions; {hot_count:,} hot subjects until warm, "
        f"{burst_count:,} new ones, then the first {after:,} lookups of the hot ones again",
        shape.dialect,
        contenders=contenders,
    )
    # At a million subscriptions a lookup of the scans takes seconds, and their builds minutes.
    slow = ("naive", "inverted_bitmap", "optimized_bitmap") if len(shape.pairs) >= 1_000_000 else ()
    built = _build_all(shape, row, sizes, progress, skip=slow)
    before: dict[str, list[float]] = {n: [] for n in built}
    burst_rates: dict[str, list[float]] = {n: [] for n in built}

    def measure(name: str, r: int) -> float | None:
        # A burst is 20x an early-life window's lookups: its own budget, so no contender is cut.
        hot, rate, done, again = built[name].call(
            _burst_in, r, burst_count, after, sizes.budget, sizes.build_budget / 10
        )
        before[name].append(hot)
        burst_rates[name].append(rate)
        if done < burst_count:
            row.notes[name] = f"not run: {done:,} of the {burst_count:,} burst lookups in the time budget"
            return None
        return float(again)

    try:
        progress(f"{row.name}: hot, burst, hot again: {counted(len(built), 'contender')}")
        samples = _rounds(list(built), repeat, measure)
        for phase in phases_of(sizes):
            _keep(row, phase, samples)
        for name in built:
            row.extra[name].update(hot_before=median(before[name]), burst=median(burst_rates[name]))
        sample = list(dict.fromkeys(shape.hot[:SAMPLE] + shape.topics[:SAMPLE]))
        reference = built["trie"].call(_answers, sample, sizes.build_budget)
        for name, alone in built.items():
            _check(name, row, alone, reference, sample, sizes.build_budget / 10)
    finally:
        _close(built)
    return row


class RowSpec(NamedTuple):
    """A row of the matrix before its data is made."""

    make: Callable[[], shapes.Shape]  # makes the row's data (when the row is reached)
    title: str  # the report's line under the row's heading (churn and burst write their own)
    kind: Literal["lookup", "large", "churn", "burst"]  # which function runs it ("large": the large table)


def rows_of(sizes: Sizes, repeat: int) -> dict[str, RowSpec]:
    """The matrix's rows in order, by the names ``--rows`` takes (each its data's
    :attr:`~.shapes.Shape.name`). ``repeat`` sizes churn's writes and the burst, which last
    every round."""
    lookups = sizes.lookups
    rows = {
        "study": RowSpec(
            functools.partial(shapes.study, lookups),
            "the study's workload: 1,000 subscriptions, 1,000 topics repeated",
            "lookup",
        )
    }
    for filters in sizes.distinct:
        rows[f"distinct-{filters // 1000}k"] = RowSpec(
            functools.partial(shapes.distinct, filters, sizes.once),
            f"{filters:,} MQTT filters, {sizes.once:,} different topics, each looked up once (IoT)",
            "lookup",
        )
    rows["zipf"] = RowSpec(
        functools.partial(shapes.zipf, sizes.zipf, lookups),
        f"{sizes.zipf:,} AMQP patterns, topics drawn by Zipf rank from 50,000",
        "lookup",
    )
    rows["unmatched"] = RowSpec(
        functools.partial(shapes.unmatched, sizes.zipf, lookups),
        f"{sizes.zipf:,} MQTT filters, 90 % of the topics match nobody",
        "lookup",
    )
    writes = int(WRITE_RATE * sizes.budget * (repeat + 1) * 1.2) + 2
    writes = max(writes, int(WRITE_RATE * sizes.early_budget * 1.2) + 2)
    rows["churn"] = RowSpec(functools.partial(shapes.churn, sizes.churn, lookups, writes), "", "churn")
    for subscribers, filters in sizes.fanout:
        rows[shapes.fanout_name(subscribers, filters)] = RowSpec(
            functools.partial(shapes.fanout, subscribers, filters, lookups),
            f"{subscribers:,} subscribers on {counted(filters, 'MQTT filter')}",
            "lookup",
        )
    rows[shapes.million_name(sizes.million)] = RowSpec(
        functools.partial(shapes.million, sizes.million, max(sizes.once // 10, *sizes.early)),
        f"{sizes.million:,} AMQP subscriptions (Zipf words), each topic's first lookup",
        "large",
    )
    subscriptions, hot, burst, _ = sizes.burst
    rows[shapes.burst_name(subscriptions)] = RowSpec(
        functools.partial(shapes.burst, subscriptions, hot, burst * (repeat + 1)), "", "burst"
    )
    return rows


def _matrix(
    sizes: Sizes, repeat: int, progress: Progress, only: set[str] | None, contenders: tuple[str, ...]
) -> Iterator[Row]:
    """The rows, each measured when reached (``only``: the names of the rows to run;
    ``contenders``: theirs, or if empty every contender of the row's dialect)."""
    for name, spec in rows_of(sizes, repeat).items():
        if only is not None and name not in only:
            continue
        shape = spec.make()
        names = contenders or contenders_for(shape.dialect)
        if spec.kind == "churn":
            yield _churn_row(shape, sizes, repeat, progress, names)
        elif spec.kind == "burst":
            yield _burst_row(shape, sizes, repeat, progress, names)
        else:
            yield from lookup_row(shape, spec.title, sizes, repeat, progress, spec.kind == "large", names)


def _chart(rows: list[Row], phase: str) -> Any:
    """The heat map of ``phase``: each contender's rate divided by the default's, per row, each
    blank cell saying why (:func:`_why_blank`)."""
    names = list(dict.fromkeys(n for row in rows for by in row.rates.values() for n in by))
    relative = [[_inverse(row.ratio(phase, n)) for n in names] for row in rows]
    blanks = {
        (i, j): _why_blank(row, phase, name)
        for i, row in enumerate(rows)
        for j, name in enumerate(names)
        if relative[i][j] is None
    }
    title = f"Lookups per second relative to topicmatch's default, {phase} (1.00 = as fast)"
    return charts.heatmap([row.name for row in rows], names, relative, title, blanks)


def _why_blank(row: Row, phase: str, name: str) -> str:
    """Why ``row`` has no ratio for ``name`` in ``phase``, in a few words for the charts."""
    if phase in row.absent:
        return row.absent[phase]
    if name in PEERS and PEERS[name] != row.dialect:
        return f"speaks {PEERS[name]} only"
    note = row.notes.get(name, "")
    if note.startswith("not run"):
        return note
    return "no lookup in the time budget" if name in row.samples.get(phase, {}) else "not run"


def _inverse(value: float | None) -> float | None:
    return 1 / value if value else None


def _cell(row: Row, phase: str, name: str | None) -> str:
    value = row.ratio(phase, name)
    return f"{value:.2f}" if value else "-"


def _best(row: Row, phase: str) -> str | None:
    """The one of the five the default fares worst against, round by round (the paired ratio):
    on a noisy machine the highest median rate can belong to another."""
    paired = [n for n in FIVE if row.ratio(phase, n)]
    return min(paired, key=lambda n: row.ratio(phase, n) or 0.0) if paired else None


def _summary(rows: list[Row], phases: list[str]) -> tuple[list[str], list[list[str]]]:
    heads = " / ".join(phases)
    headers = [
        "row",
        f"default ÷ best of the five ({heads})",
        f"default ÷ no cache ({heads})",
        "default ÷ peer",
    ]
    table = []
    for row in rows:
        best = [_best(row, phase) for phase in phases]
        peer = "paho" if row.dialect == "mqtt" else "kombu" if row.dialect == "amqp" else None
        table.append(
            [
                row.name,
                " / ".join(
                    f"{_cell(row, p, b)} ({b})" if b else "-" for p, b in zip(phases, best, strict=True)
                ),
                " / ".join(_cell(row, p, "default, no cache") for p in phases),
                f"{_cell(row, STEADY, peer)} ({peer})" if peer else "- (none)",
            ]
        )
    return headers, table


def _under(rows: list[Row], phases: list[str]) -> tuple[list[str], list[list[str]]]:
    """The cells under :data:`TARGET`, each with its rounds' ratios: a cell whose rounds are all
    under it is under it on this machine; one whose rounds straddle it is within the noise of
    the run."""
    headers = ["row", "phase", "default ÷", "median", "rounds (low to high)", "rounds at or above"]
    table = []
    for row in rows:
        for phase in phases:
            for name in dict.fromkeys((_best(row, phase), "default, no cache")):
                ratios = sorted(row.round_ratios(phase, name))
                if name is None or not ratios or median(ratios) >= TARGET:
                    continue
                above = f"{sum(r >= TARGET for r in ratios)} of {len(ratios)}"
                rounds = ", ".join(f"{r:.2f}" for r in ratios)
                table.append([row.name, phase, name, f"{median(ratios):.2f}", rounds, above])
    return headers, table


def _build_cell(extra: dict[str, Any]) -> str:
    """A contender's build time: the median of its builds in seconds, or, if its only build
    also measured memory (the large row's scans), that one's, which ran under tracemalloc."""
    builds = extra.get("builds_s")
    if builds:
        return f"{median(builds):,.2f}"
    if "build_s" in extra:
        return f"{extra['build_s']:,.2f} (traced)"
    return "-"


def _row_table(row: Row, phases: list[str]) -> tuple[list[str], list[list[str]]]:
    head = ["matcher", "build s", *(f"lookups/s, {p}" for p in phases), "default is x faster (steady)"]
    churn, large = row.name == "churn", row.name.startswith("subs-") and not row.name.endswith("repeat")
    burst = row.name.startswith("burst")
    if churn:
        head += ["write p50 µs", "write p99 µs", "write max µs"]
    if large:
        head.append("bytes/subscription")
    if burst:
        head += ["hot lookups/s before the burst", "burst lookups/s"]
    lines = []
    rates = row.rates
    for name in row.contenders:
        extra = row.extra.get(name, {})
        cells = [name, _build_cell(extra)]
        cells += [fmt_int(rates[p][name]) if name in rates.get(p, {}) else "-" for p in phases]
        cells.append(_cell(row, STEADY, name))
        if churn:
            cells += [
                f"{extra[key]:,.1f}" if key in extra else "-"
                for key in ("write_p50_us", "write_p99_us", "write_max_us")
            ]
        if large:
            value = extra.get("bytes_per_subscription")
            cells.append(f"{value:,.0f}" if value else "-")
        if burst:
            cells += [fmt_int(extra[key]) if key in extra else "-" for key in ("hot_before", "burst")]
        cells.append(row.notes.get(name, ""))
        lines.append(cells)
    return [*head, "note"], lines


def run(
    out: Path,
    repeat: int,
    quick: bool,
    progress: Progress,
    only: set[str] | None = None,
    contenders: tuple[str, ...] = (),
) -> Path:
    """Run the matrix (``only``: these rows) and write its report; ``contenders``: the columns
    of every row instead of all of its dialect's (:func:`.contenders.contenders_for`), such as
    an A/A run's (with :data:`.contenders.AGAIN`), which must include the trie, the reference
    every answer is checked against."""
    unknown_contenders = sorted(set(contenders) - {*ALGORITHMS, *PEERS, AGAIN})
    if unknown_contenders or (contenders and "trie" not in contenders):
        raise UsageError(
            f"contenders {', '.join(contenders)}: choose among {', '.join((*ALGORITHMS, *PEERS, AGAIN))}, "
            "the trie among them (the reference every answer is checked against)"
        )
    sizes = QUICK if quick else FULL
    known = list(rows_of(sizes, repeat))
    unknown = sorted((only or set()) - set(known))
    if unknown:
        of = " of a quick run" if quick else ""
        raise UsageError(f"no such row: {', '.join(unknown)} (the rows{of}: {', '.join(known)})")
    report = Report(
        "workloads",
        out,
        "The workload matrix: every matcher on the shapes of real traffic, fresh and steady",
        {"repeat": repeat, **vars(sizes), "write_rate": WRITE_RATE},
        quick=quick,
    )
    phases = phases_of(sizes)
    rows = list(_matrix(sizes, repeat, progress, only, contenders))
    report.text(__doc__ or "")
    headers, table = _summary(rows, phases)
    report.text(
        "## Summary\n\nRatios: the default's lookup rate divided by the other's in the same round, median "
        "over the rounds (above 1 the default is faster), in each phase: "
        + ", ".join(phases)
        + ". The best of the five is the one the default fares worst against in that phase."
    )
    report.table(headers, table)
    headers, table = _under(rows, phases)
    report.text(
        f"## Cells under {TARGET}\n\n"
        + (
            f"Each cell of the summary where the default's median ratio is under {TARGET}, with the "
            "ratio in each round: where some rounds are at or above it, the cell is within what "
            "this run resolves."
            if table
            else f"None: every cell of the summary is at or above {TARGET}."
        )
    )
    if table:
        report.table(headers, table)
    for phase in (phases[0], STEADY):
        slug = "workloads" if phase == STEADY else "workloads-early"
        caption = f"Each matcher's lookup rate divided by the default's, per workload, {phase}"
        report.chart(slug, _chart(rows, phase), caption)
    for row in rows:
        report.text(f"## {row.name}\n\n{row.title} ({row.dialect}).")
        report.table(*_row_table(row, phases))
        report.result(
            row.name,
            {
                "title": row.title,
                "dialect": row.dialect,
                "rates": row.rates,
                "paired": row.paired,
                "samples": row.samples,
                "notes": row.notes,
                "extra": row.extra,
            },
        )
    return report.write()
