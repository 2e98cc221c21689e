"""The fixed-rate load generator: every request has an intended start, and latency runs from it.

Request ``k`` (0-based, over all connections) is due at ``start + k / rate`` and goes to
connection ``k mod connections``; each connection is closed-loop (one request at a time), so a
late reply makes the next request of that connection late. The generator never skips a due
request: when late it sends at once, catching up. Three raw timestamps are kept per request
(``k``, actual send, reply), appended to ``array('q')`` buffers in the hot path, and turned into
three histograms afterwards (:mod:`._histograms`):

* **corrected** = reply - intended start: response time, stalls charged in full (wrk2, YCSB);
* **uncorrected** = reply - actual send: service time, what a naive benchmark reports;
* **lateness** = actual send - intended start: how far behind schedule the generator was.

**Full throttle** (``rate=None``, ``--rate max``): no schedule; each connection sends its next
request as soon as the previous one returned, until ``warmup + duration`` s have passed, never
ahead of a schedule at ``limits.max_rate`` (100,000/s by default: the count bound, and a cap a
system faster than that cannot show). This finds the rate where a system saturates; its
latencies are service times only (corrected = uncorrected, lateness 0), since no request had an
intended start before its actual send.

**Interval histograms**: the corrected latencies are also kept per interval of ``interval`` s of
intended start (:attr:`ShareResult.intervals`), so a stall shows when it happened; they are
written as HdrHistogram's interval log (:mod:`._hlog`).

Warm-up: requests due in the first ``warmup`` seconds run on the same schedule but are left out.
Failed requests are recorded at the moment they gave up (a lower bound); requests never sent
(the time bound was hit) are counted and, where they were already due, recorded at their lower
bound too: nothing is omitted silently.

Pacing: a connection alone in its process sleeps until 200 µs before its due time and spins
the rest (``time.sleep`` overshoots by 60 µs or more on a busy machine); connections sharing a
process only sleep, since a spinning thread would hold the GIL for the 5 ms switch interval and
a spinning task would steal the loop from the others. asyncio runs on a ``select()`` loop:
the default ``epoll`` loop rounds every wait up to a whole millisecond, ``select`` waits to the
microsecond. What pacing still misses shows up as lateness. Spinning burns CPU on purpose, so
it is subtracted from the generator's CPU use before judging whether the generator was the
bottleneck.

Each process runs its share of the connections (:func:`run_share`); :mod:`._processes` starts
the processes and collects their encoded histograms.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import selectors
import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ._histograms import encode, new_histogram, record_many
from ._limits import DEFAULT_LIMITS, LimitError, Limits, check_load
from ._requester import AnyRequester, AsyncRequester, Requester, RequesterFactory, is_async

__all__ = ["STOP", "LoadSpec", "ShareResult", "busy_share", "machine_cpu", "run_share"]

NS = 1_000_000_000
#: A connection stops after this many consecutive failures (its remaining requests: unsent).
MAX_CONSECUTIVE_FAILURES = 20
#: Most interval histograms one run may log (an hour in 0.1 s intervals; each is kept encoded).
MAX_INTERVALS = 36_000
#: Spin this long before a due time when the connection is alone in its process.
SPIN_NS = 200_000
#: Set (e.g. by a SIGTERM handler) to end every load loop at its next request: the run then
#: finishes normally, so its brokers are stopped by their ``finally`` blocks. An exception
#: raised from a signal handler inside an asyncio loop can instead leave it hanging.
STOP = threading.Event()


def _ceil(value: float) -> int:
    """Ceiling that ignores float noise: (0.2 + 0.4) * 500 is 300, not 301."""
    return math.ceil(value - 1e-9)


@dataclass(frozen=True, slots=True)
class LoadSpec:
    """One fixed-rate run: ``rate`` requests/s over all connections for ``warmup + duration`` s;
    ``rate`` None is full throttle (module docstring)."""

    rate: int | None
    duration: float
    warmup: float = 1.0
    connections: int = 1
    processes: int = 1
    #: After the last due time, how long outstanding requests may still take (the time bound).
    grace: float = 15.0
    #: How long connecting may take, per process.
    setup_timeout: float = 60.0
    limits: Limits = DEFAULT_LIMITS
    #: Length of the interval histograms, in seconds of intended start.
    interval: float = 1.0

    def check(self, size: int = 0) -> None:
        """Raise :class:`._limits.LimitError` unless this run fits its limits."""
        if not self.interval > 0:
            raise LimitError(f"the interval must be positive, not {self.interval}")
        if (self.warmup + self.duration) / self.interval > MAX_INTERVALS:
            raise LimitError(
                f"{(self.warmup + self.duration) / self.interval:,.0f} intervals of {self.interval:g} s; "
                f"at most {MAX_INTERVALS:,} per run (raise --interval)"
            )
        check_load(
            rate=self.connections if self.rate is None else self.rate,
            duration=self.duration,
            warmup=self.warmup,
            connections=self.connections,
            processes=self.processes,
            size=size,
            limits=self.limits,
        )

    @property
    def total_requests(self) -> int:
        """The requests of the schedule; at full throttle, the count bound."""
        return _ceil((self.warmup + self.duration) * (self.rate or self.limits.max_rate))

    @property
    def warmup_requests(self) -> int:
        return _ceil(self.warmup * self.rate) if self.rate else 0

    def due(self, start_ns: int, k: int) -> int:
        """Intended start (ns) of request ``k`` (at full throttle: the end of the warm-up)."""
        if not self.rate:
            return start_ns + int(self.warmup * NS)
        return start_ns + k * NS // self.rate


@dataclass
class _Record:
    """Raw timestamps of one connection, appended in the hot path."""

    ks: array[int] = field(default_factory=lambda: array("q"))
    sent: array[int] = field(default_factory=lambda: array("q"))
    done: array[int] = field(default_factory=lambda: array("q"))
    failed: list[tuple[int, int, int]] = field(default_factory=list)
    unsent_from: int = -1
    ended_ns: int = 0
    spin_ns: int = 0
    error: str = ""


@dataclass
class ShareResult:
    """What one process measured, in a form that pickles small (encoded histograms)."""

    corrected: str = ""
    uncorrected: str = ""
    lateness: str = ""
    completed: int = 0
    failed: int = 0
    unsent: int = 0
    clipped: int = 0
    last_done_ns: int = 0
    measure_start_ns: int = 0
    #: The corrected view per interval of intended start (``spec.interval`` s from
    #: ``measure_start_ns``), encoded; the same samples as ``corrected``.
    intervals: list[str] = field(default_factory=list)
    #: Wall-clock time (ns since the epoch) at ``measure_start_ns``, for the interval log.
    measure_start_epoch_ns: int = 0
    #: CPU time of the load process during the schedule (all its threads, deliberate spinning
    #: excluded), and the wall time.
    cpu_seconds: float = 0.0
    wall_seconds: float = 0.0
    #: Busy share of the whole machine's CPU during the schedule (every process, not just ours).
    machine_busy: float = 0.0
    errors: list[str] = field(default_factory=list)


class _Schedule:
    """One connection's requests ``first, first + connections, ...``: when each is due, and the
    bookkeeping both loops share (the loops differ only in how they wait and call)."""

    __slots__ = ("deadline", "failures", "k", "pace", "rate", "rec", "start_ns", "step", "total")

    def __init__(self, spec: LoadSpec, first: int, start_ns: int, rec: _Record) -> None:
        self.rate, self.total, self.step = spec.rate or 0, spec.total_requests, spec.connections
        self.pace = self.rate or spec.limits.max_rate  # full throttle: never ahead of the limit
        self.deadline = _deadline(spec, start_ns)
        self.start_ns, self.rec, self.k, self.failures = start_ns, rec, first, 0

    def due(self, now: int) -> int | None:
        """When the next request is due, or None when the connection must stop (all sent, the
        time bound reached, or a stop asked for)."""
        if self.k >= self.total or now >= self.deadline or STOP.is_set():
            return None
        return self.start_ns + self.k * NS // self.pace

    def done(self, sent: int, done: int) -> None:
        rec = self.rec
        rec.ks.append(self.k)
        rec.sent.append(sent)
        rec.done.append(done)
        self.failures = 0
        self.k += self.step

    def failed(self, sent: int, gave_up: int, exc: Exception) -> bool:
        """Record a failed request; False when the connection must stop (too many in a row)."""
        rec = self.rec
        rec.failed.append((self.k, sent, gave_up))
        rec.error = rec.error or f"{type(exc).__name__}: {exc}"
        self.failures += 1
        self.k += self.step
        return self.failures < MAX_CONSECUTIVE_FAILURES

    def end(self, now: int) -> None:
        # At full throttle nothing was due that was not sent: the run just ended.
        self.rec.unsent_from = self.k if self.k < self.total and self.rate else -1
        self.rec.ended_ns = now


def _blocking_loop(
    requester: Requester, first: int, spec: LoadSpec, start_ns: int, spin_ns: int, rec: _Record
) -> None:
    ns, sleep, request = time.monotonic_ns, time.sleep, requester.request
    schedule = _Schedule(spec, first, start_ns, rec)
    while (due := schedule.due(now := ns())) is not None:
        sent = now
        if due > now:
            if due - now > spin_ns:
                sleep((due - now - spin_ns) / NS)
            spin_from = sent = ns()
            while sent < due:
                sent = ns()
            rec.spin_ns += sent - spin_from
        try:
            request()
        except Exception as exc:
            if not schedule.failed(sent, ns(), exc):
                break
        else:
            schedule.done(sent, ns())
    schedule.end(ns())


async def _async_loop(
    requester: AsyncRequester, first: int, spec: LoadSpec, start_ns: int, spin_ns: int, rec: _Record
) -> None:
    ns, sleep, request = time.monotonic_ns, asyncio.sleep, requester.request
    schedule = _Schedule(spec, first, start_ns, rec)
    while (due := schedule.due(now := ns())) is not None:
        sent = now
        if due > now:
            if due - now > spin_ns:
                await sleep((due - now - spin_ns) / NS)
            spin_from = sent = ns()
            while sent < due:
                await sleep(0)
                sent = ns()
            rec.spin_ns += sent - spin_from
        try:
            await request()
        except Exception as exc:
            if not schedule.failed(sent, ns(), exc):
                break
        else:
            schedule.done(sent, ns())
    schedule.end(ns())


def _deadline(spec: LoadSpec, start_ns: int) -> int:
    """When a connection stops sending: the schedule's end plus its grace; at full throttle, the
    end of the run."""
    grace = spec.grace if spec.rate else 0.0
    return start_ns + int((spec.warmup + spec.duration + grace) * NS)


class _Views:
    """The three histograms of one share, and the corrected one per interval of intended start.

    The intervals are built at the end, one histogram at a time (each is 33,792 counters, about
    270 KB): keeping them all while recording would hold 1 GB for an hour in 1 s intervals.
    Their number is bounded by :data:`MAX_INTERVALS` (:meth:`LoadSpec.check`).
    """

    def __init__(self, measure_start_ns: int, interval: float) -> None:
        self.corrected, self.uncorrected, self.lateness = new_histogram(), new_histogram(), new_histogram()
        self.slots: list[np.ndarray] = []
        self.latencies: list[np.ndarray] = []
        self.start_ns = measure_start_ns
        self.interval_ns = max(1, int(interval * NS))
        self.clipped = 0

    def record(self, intended: np.ndarray, end: np.ndarray, sent: np.ndarray | None) -> None:
        """Requests that started (``sent``) or were due (``intended``) and ended at ``end``."""
        if not intended.size:
            return
        latency = end - intended
        self.clipped += record_many(self.corrected, latency)
        if sent is not None:
            record_many(self.uncorrected, end - sent)
            record_many(self.lateness, sent - intended)
        self.slots.append(np.maximum(intended - self.start_ns, 0) // self.interval_ns)
        self.latencies.append(latency)

    def encoded_intervals(self) -> list[str]:
        """Every interval up to the last one with a sample, empty ones included."""
        if not self.slots:
            return []
        slot, latency = np.concatenate(self.slots), np.concatenate(self.latencies)
        order = np.argsort(slot, kind="stable")  # O(n log n) whatever the number of intervals
        slot, latency = slot[order], latency[order]
        indexes, firsts = np.unique(slot, return_index=True)
        histogram = new_histogram()
        empty = encode(histogram)
        out = [empty] * (int(indexes[-1]) + 1)
        for index, part in zip(indexes.tolist(), np.split(latency, firsts[1:]), strict=True):
            histogram.reset()
            record_many(histogram, part)
            out[index] = encode(histogram)
        return out


def _summarise(records: list[_Record], spec: LoadSpec, start_ns: int) -> ShareResult:
    """Turn raw timestamps into the three histograms, leaving out the warm-up."""
    result = ShareResult()
    first_measured = spec.warmup_requests
    result.measure_start_ns = spec.due(start_ns, first_measured)
    views = _Views(result.measure_start_ns, spec.interval)
    for rec in records:
        ks = np.frombuffer(rec.ks, dtype=np.int64)
        sent = np.frombuffer(rec.sent, dtype=np.int64)
        done = np.frombuffer(rec.done, dtype=np.int64)
        # At full throttle a request's intended start is its send, and the warm-up is by time.
        keep = ks >= first_measured if spec.rate else sent >= result.measure_start_ns
        ks, sent, done = ks[keep], sent[keep], done[keep]
        views.record(start_ns + ks * NS // spec.rate if spec.rate else sent, done, sent)
        result.completed += int(ks.size)
        if ks.size:
            result.last_done_ns = max(result.last_done_ns, int(done.max()))
        failed = [
            (k, s, g)
            for k, s, g in rec.failed
            if (k >= first_measured if spec.rate else s >= result.measure_start_ns)
        ]
        if failed:
            fk, fs, fg = (np.array(column, dtype=np.int64) for column in zip(*failed, strict=True))
            views.record(start_ns + fk * NS // spec.rate if spec.rate else fs, fg, fs)
            result.failed += len(failed)
        if rec.unsent_from >= 0 and spec.rate:
            unsent = np.arange(rec.unsent_from, spec.total_requests, spec.connections, dtype=np.int64)
            unsent = unsent[unsent >= first_measured]
            u_intended = start_ns + unsent * NS // spec.rate
            overdue = u_intended[u_intended < rec.ended_ns]
            views.record(overdue, np.full_like(overdue, rec.ended_ns), None)
            result.unsent += int(unsent.size)
        if rec.error:
            result.errors.append(rec.error)
    result.clipped = views.clipped
    result.corrected, result.uncorrected, result.lateness = (
        encode(views.corrected),
        encode(views.uncorrected),
        encode(views.lateness),
    )
    result.intervals = views.encoded_intervals()
    return result


def _make(factory: RequesterFactory, connections: list[int]) -> tuple[list[AnyRequester], bool]:
    requesters = [factory(c) for c in connections]
    kinds = {is_async(r) for r in requesters}
    if len(kinds) != 1:
        raise TypeError("a factory must make only blocking or only asyncio requesters")
    return requesters, kinds.pop()


def machine_cpu() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine so far, from ``/proc/stat`` ((0, 0) elsewhere).

    Why: on a shared machine a generator can fall behind without being CPU-bound itself, because
    other processes hold the cores; the difference of two readings tells.
    """
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = [int(x) for x in handle.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already counted in user
    return total - idle, total


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """Busy fraction of the machine between two :func:`machine_cpu` readings."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


class _Run:
    """One share's schedule as it ran, whichever its requesters: a record per connection, and
    what the schedule cost from its start (this process's CPU, all threads; the wall time; the
    machine's busy share) to :meth:`ended`. Both share runners below fill one."""

    def __init__(self, connections: int, start_ns: int) -> None:
        self._cpu0, self._wall0, self._machine0 = time.process_time(), time.monotonic(), machine_cpu()
        self.records = [_Record() for _ in range(connections)]
        self.start_ns = start_ns
        self.cpu = self.wall = self.busy = 0.0

    def ended(self) -> _Run:
        self.cpu = time.process_time() - self._cpu0
        self.wall = time.monotonic() - self._wall0
        self.busy = busy_share(self._machine0, machine_cpu())
        return self


def _run_blocking_share(
    requesters: list[Requester], connections: list[int], spec: LoadSpec, ready: Callable[[], int]
) -> _Run:
    set_up: list[Requester] = []
    try:
        for requester in requesters:
            requester.setup()
            set_up.append(requester)
        run = _Run(len(connections), ready())
        start_ns, records = run.start_ns, run.records
        if len(connections) == 1:
            _blocking_loop(requesters[0], connections[0], spec, start_ns, SPIN_NS, records[0])
        else:
            threads = [
                threading.Thread(
                    target=_blocking_loop,
                    args=(r, c, spec, start_ns, 0, rec),
                    daemon=True,
                    name=f"connection-{c}",
                )
                for r, c, rec in zip(requesters, connections, records, strict=True)
            ]
            for thread in threads:
                thread.start()
            bound = (start_ns - time.monotonic_ns()) / NS + spec.warmup + spec.duration + spec.grace + 5
            for thread in threads:
                thread.join(timeout=max(0.0, bound))
            for rec, thread in zip(records, threads, strict=True):
                if thread.is_alive():
                    rec.error = rec.error or f"{thread.name} was still in a request at the time bound"
        return run.ended()
    finally:
        for requester in reversed(set_up):
            with contextlib.suppress(Exception):  # a failed disconnect must not hide the results
                requester.teardown()


async def _run_async_share(
    requesters: list[AsyncRequester], connections: list[int], spec: LoadSpec, ready: Callable[[], int]
) -> _Run:
    set_up: list[AsyncRequester] = []
    try:
        for requester in requesters:
            await asyncio.wait_for(requester.setup(), spec.setup_timeout)
            set_up.append(requester)
        run = _Run(len(connections), await asyncio.get_running_loop().run_in_executor(None, ready))
        spin = SPIN_NS if len(connections) == 1 else 0
        await asyncio.gather(
            *(
                _async_loop(r, c, spec, run.start_ns, spin, rec)
                for r, c, rec in zip(requesters, connections, run.records, strict=True)
            )
        )
        return run.ended()
    finally:
        for requester in reversed(set_up):
            with contextlib.suppress(Exception):  # a failed disconnect must not hide the results
                await asyncio.wait_for(requester.teardown(), 10)


def _select_loop() -> asyncio.AbstractEventLoop:
    """An asyncio loop on ``select()``, whose timeouts have microsecond resolution."""
    return asyncio.SelectorEventLoop(selectors.SelectSelector())


def run_share(factory: RequesterFactory, spec: LoadSpec, index: int, ready: Callable[[], int]) -> ShareResult:
    """Run connections ``index, index + processes, ...`` of the schedule in this process."""
    connections = list(range(index, spec.connections, spec.processes))
    requesters, asynchronous = _make(factory, connections)
    if asynchronous:
        with asyncio.Runner(loop_factory=_select_loop) as runner:
            run = runner.run(_run_async_share(requesters, connections, spec, ready))  # type: ignore[arg-type]
    else:
        run = _run_blocking_share(requesters, connections, spec, ready)  # type: ignore[arg-type]
    result = _summarise(run.records, spec, run.start_ns)
    result.measure_start_epoch_ns = time.time_ns() - time.monotonic_ns() + result.measure_start_ns
    result.cpu_seconds = max(0.0, run.cpu - sum(rec.spin_ns for rec in run.records) / NS)
    result.wall_seconds = run.wall
    result.machine_busy = run.busy
    return result
