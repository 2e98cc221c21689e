"""The commit-log benchmark: end-to-end latency at a fixed rate, and throughput, per durable log.

**Latency.** For each size (256 B, 1 KB, 5 KB, 1 MB by default), messages are published at 50/s
for 30 s (after 1 s of warm-up, discarded) and received by a subscriber in the same process (one
monotonic clock, no skew). Message ``k`` is intended for ``start + k / rate``; its first 8 bytes
carry ``k``, the rest is random (no system here compresses, but none gets an easy ride either).
Latency runs from the intended publish time to the subscriber's receipt (corrected), and from
the actual publish (uncorrected); the publisher's lateness is the third view. The publisher waits
for each acknowledgement before the next publish, so a slow acknowledgement (an fsync) delays
the publishes behind it and that delay is charged to them. A message that never arrives within
the time bound is recorded at its lower bound and counted as lost.

**Throughput.** ``messages`` messages per size (100,000; 1 MB messages are capped at 1,000,
i.e. 1 GiB, because 100,000 would be 98 GiB on a 24 GiB machine: :mod:`._logplan`) are
published in pipelined batches of up to 4 MiB, each batch complete only when the server
acknowledged every message.
Publisher throughput = messages / (last acknowledgement - first publish); subscriber throughput =
messages / (last receipt - first publish), with the subscriber already attached.

Publisher and subscriber share one Python process: on this 2-core machine the Python clients,
not the logs, are often the limit at small sizes, which the report says.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import selectors
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from topicmatch.bench.machine import machine_info

from ._histograms import encode, new_histogram, record_many
from ._limits import MiB
from ._load import STOP, busy_share, machine_cpu
from ._logplan import Plan
from ._logreport import write_report
from ._logs import LOGS, LogClient, log_service
from ._result import LatencyResult, ThroughputResult, size_name

__all__ = ["latency_run", "run_plan", "throughput_run"]

NS = 1_000_000_000
Progress = Callable[[str], None]


def _payloads(size: int, pool: int = 64) -> list[bytes]:
    """A few random payloads; each message gets its index in the first 8 bytes."""
    return [os.urandom(max(size, 8)) for _ in range(pool)]


def _stamp(base: bytes, k: int) -> bytes:
    return k.to_bytes(8, "big") + base[8:]


def _loop() -> asyncio.AbstractEventLoop:
    return asyncio.SelectorEventLoop(selectors.SelectSelector())


async def _until(due: int) -> None:
    """Sleep until ``due`` (monotonic ns): microsecond timers on the select loop, short spin."""
    left = due - time.monotonic_ns()
    if left > 200_000:
        await asyncio.sleep((left - 200_000) / NS)
    while time.monotonic_ns() < due:
        await asyncio.sleep(0)


async def latency_run(
    client: LogClient, *, size: int, rate: int, duration: float, warmup: float, grace: float = 15.0
) -> dict[str, object]:
    """Publish at ``rate`` for ``warmup + duration`` s; return encoded histograms and counts."""
    total = math.ceil((warmup + duration) * rate - 1e-9)
    first = math.ceil(warmup * rate - 1e-9)
    received = np.full(total, -1, dtype=np.int64)
    sent = np.zeros(total, dtype=np.int64)
    ns = time.monotonic_ns

    def on_message(data: bytes) -> None:
        k = int.from_bytes(data[:8], "big")
        if 0 <= k < total and received[k] < 0:
            received[k] = ns()

    await client.open(on_message)
    payloads = _payloads(size)
    cpu0, machine0 = time.process_time(), machine_cpu()
    start = ns() + 100_000_000
    errors: list[str] = []
    deadline = start + int((warmup + duration + grace) * NS)
    for k in range(total):
        due = start + k * NS // rate
        if ns() >= deadline or STOP.is_set():
            errors.append("publishing stopped early (time bound or interruption)")
            break
        await _until(due)
        sent[k] = ns()
        try:
            await client.publish([_stamp(payloads[k % len(payloads)], k)])
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
            break
    while ns() < deadline and (received[first:] < 0).any() and not STOP.is_set():
        await asyncio.sleep(0.01)
    ended = ns()
    cpu, busy = time.process_time() - cpu0, busy_share(machine0, machine_cpu())
    await client.close()
    ks = np.arange(first, total, dtype=np.int64)
    intended = start + ks * NS // rate
    got, snt = received[first:], sent[first:]
    ok = got >= 0
    corrected, uncorrected, lateness = new_histogram(), new_histogram(), new_histogram()
    record_many(corrected, got[ok] - intended[ok])
    record_many(uncorrected, got[ok] - snt[ok])
    published = snt > 0
    record_many(lateness, snt[published] - intended[published])
    lost = ~ok & (intended < ended)
    record_many(corrected, ended - intended[lost])
    last = int(got[ok].max()) if ok.any() else 0
    window = (last - int(intended[0])) / NS if ok.any() else 0.0
    return {
        "corrected": encode(corrected),
        "uncorrected": encode(uncorrected),
        "lateness": encode(lateness),
        "completed": int(ok.sum()),
        "failed": int((~ok).sum()),
        "achieved_rate": float(ok.sum()) / window if window > 0 else 0.0,
        "generator_cpu": cpu / ((ended - start) / NS),
        "machine_busy": busy,
        "errors": errors + ([f"{int((~ok).sum())} messages never arrived"] if (~ok).any() else []),
    }


async def throughput_run(
    client: LogClient, *, size: int, messages: int, timeout: float = 300.0
) -> tuple[float, float, int]:
    """Publish ``messages`` in acknowledged batches; (publisher s, subscriber s, received)."""
    count = 0
    last = 0
    done = asyncio.get_running_loop().create_future()

    def on_message(_data: bytes) -> None:
        nonlocal count, last
        count += 1
        last = time.monotonic_ns()
        if count >= messages and not done.done():
            done.set_result(None)

    await client.open(on_message)
    payloads = _payloads(size)
    batch = max(1, min(1_000, 4 * MiB // max(size, 1)))
    start = time.monotonic_ns()
    deadline = start + int(timeout * NS)
    k = 0
    while k < messages and time.monotonic_ns() < deadline and not STOP.is_set():
        n = min(batch, messages - k)
        await client.publish([_stamp(payloads[(k + i) % len(payloads)], k + i) for i in range(n)])
        k += n
    published = time.monotonic_ns()
    while not done.done() and time.monotonic_ns() < deadline and not STOP.is_set():
        # Bounded waits, so an interruption is seen; `count` below says how many arrived.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(done), 0.5)
    await client.close()
    if k < messages:
        raise TimeoutError(f"only {k:,} of {messages:,} messages published within {timeout:.0f} s")
    return (published - start) / NS, ((last or published) - start) / NS, count


def _check_stop() -> None:
    if STOP.is_set():
        raise KeyboardInterrupt


def run_plan(plan: Plan, out: Path, progress: Progress = lambda _line: None) -> Path:
    """Run every latency and throughput run of ``plan``; write JSON, charts and ``report.md``."""
    plan.check()
    out.mkdir(parents=True, exist_ok=True)
    latencies: list[LatencyResult] = []
    throughputs: list[ThroughputResult] = []
    for system in plan.systems:
        with log_service(system) as make_client:
            runner = asyncio.Runner(loop_factory=_loop)
            with runner:
                for size in plan.sizes if plan.latency else []:
                    _check_stop()
                    progress(f"{system} latency {size_name(size)}: {plan.duration:g} s at {plan.rate}/s")
                    machine = machine_info()
                    fields = runner.run(
                        latency_run(
                            make_client(),
                            size=size,
                            rate=plan.rate,
                            duration=plan.duration,
                            warmup=plan.warmup,
                        )
                    )
                    latencies.append(
                        LatencyResult(
                            label=f"{system} {size_name(size)}",
                            system=system,
                            config={
                                "size": size,
                                "rate": plan.rate,
                                "duration": plan.duration,
                                "warmup": plan.warmup,
                                "durability": LOGS[system].durability,
                                "log": LOGS[system].description,
                            },
                            rate=float(plan.rate),
                            machine=machine,
                            command=plan.command,
                            **fields,  # type: ignore[arg-type]
                        )
                    )
                for size in plan.sizes if plan.throughput else []:
                    _check_stop()
                    count = plan.count_for(size)
                    progress(f"{system} throughput {size_name(size)}: {count:,} messages")
                    machine = machine_info()
                    pub, sub, received = runner.run(throughput_run(make_client(), size=size, messages=count))
                    throughputs.append(
                        ThroughputResult(
                            system, size, count, pub, sub, received, LOGS[system].durability, machine
                        )
                    )
    return write_report(plan, latencies, throughputs, out)
