"""``topicmatch bench pipeline --scale``: a subscription table bigger than a worker, routed by plan.

The table of an IoT fleet (AMQP): every device subscribes its own command topic
(``devices.d<id>.cmd``, a literal); applications subscribe their site's telemetry with wildcards
(``fleet.r<r>.s<s>.*.<metric>``: 50 regions x 400 sites x 5 metrics, 100,000 patterns), a
monitor per region ``fleet.r<r>.#`` and an auditor ``devices.*.cmd``. Half the messages are
commands to random devices, half telemetry of random sites: every message has exactly two
subscribers, so the deliveries are checked by count (twice the messages).

Cases, each a fresh Spark job writing Parquet as ``topicmatch route`` does, in one local session:

* the large one (10M devices x 10M messages by default) with the plan ``auto`` chooses (the
  literal subscriptions joined, the rest in the workers); ``--quick``: 20,000 x 20,000 only,
  with ``auto`` (which keeps the matcher at this size) and ``split``;
* a tenth of it (1M x 1M) with both plans, alternated: what the split saves a worker;
* the pipeline benchmark's 1M x 1k case (1,000 generated subscriptions) with both plans
  alternated: the split plan forced where ``auto`` keeps the matcher;
* a wildcard table too big for one worker (2M x 2M): a multi-tenant broker where each of
  2,000,000 devices subscribes ``t<k>.d<id>.*`` (1,000 tenants ``t<k>``), each tenant has a
  monitor ``t<k>.#`` and an alarm service subscribes ``*.*.alarm`` (no message is an alarm);
  messages ``t<k>.d<id>.<metric>``, again two subscribers each. Plans ``matcher`` and ``auto``
  (which shards it: four shards of about 500,000 pairs by tenant); ``--quick``: 20k x 20k with
  ``shard`` forced.

Per run (each in a new Spark context, so with new Python workers): wall time, the peak resident
memory of the largest Python worker (the high-water mark ``VmHWM`` of every ``pyspark.daemon``
process, sampled four times a second), of the JVM and of the driver's Python process (their
marks reset at the run's start). Results in ``DIR/report.md`` and ``DIR/results.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
import pyarrow.compute as pc  # type: ignore[import-untyped, unused-ignore]
import pyarrow.parquet as pq  # type: ignore[import-untyped, unused-ignore]
from pyspark.sql import SparkSession

from ..spark import Subscriptions, session
from ..spark.bench_api import MESSAGE_SCHEMA, ROW_GROUP_ROWS, choose, payloads, route_cold, write
from ..support.progress import Progress
from .machine import machine_info
from .spark_pipeline import CASES, case_data

__all__ = ["run"]

REGIONS, SITES, METRICS = 50, 400, ("temp", "hum", "volt", "rssi", "door")
TENANTS = 1_000
CHUNK = 1 << 20


def run(options: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> int:
    """Run the cases; 1 if a run's deliveries are not twice its messages, else 0."""
    out: Path = options.out
    out.mkdir(parents=True, exist_ok=True)
    progress = Progress("scale", stderr)
    large = 20_000 if options.quick else 10_000_000
    conf = {"spark.driver.memory": "6g", "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS"}

    def fresh() -> Any:
        """A new Spark context for each run, so each starts with new Python workers (a worker
        keeps the matchers of its last three jobs); not with --quick, a smoke test that may
        share a session with others."""
        active = SparkSession.getActiveSession()
        if active is not None and not options.quick:
            active.stop()
        return session(options.master, conf)

    spark = fresh()
    results: list[dict[str, Any]] = []
    cases: list[tuple[str, int, tuple[str, ...], int]] = [
        (f"{_short(large)} x {_short(large)}", large, ("auto", "split") if options.quick else ("auto",), 1)
    ]
    if not options.quick:
        cases.append(("1M x 1M", 1_000_000, ("matcher", "split"), 2))
    tenants = 20_000 if options.quick else 2_000_000
    cases.append(
        (
            f"tenants {_short(tenants)} x {_short(tenants)}",
            tenants,
            ("shard",) if options.quick else ("matcher", "auto"),
            1,
        )
    )
    for name, size, plans, rounds in cases:
        make = _tenants if name.startswith("tenants") else _fleet
        data = make(out / "data" / name.replace(" ", ""), size, size, progress)
        for round_ in range(rounds):
            for plan in plans:
                progress(f"{name}: plan {plan}, run {round_ + 1}/{rounds}")
                spark = fresh()
                results.append(_run(spark, name, data, plan, out / "tmp", expected=2 * size))
                progress(f"{name}: {_line(results[-1])}")
    if not options.quick:  # the pipeline benchmark's data
        case = next(c for c in CASES if c.name == "1M x 1k")
        messages, subscriptions = case_data(out.parent / "pipeline", case)
        for round_ in range(3):
            for plan in ("matcher", "split"):
                progress(f"1M x 1k: plan {plan}, run {round_ + 1}/3")
                spark = fresh()
                results.append(_run(spark, "1M x 1k", (messages, subscriptions), plan, out / "tmp"))
                progress(f"1M x 1k: {_line(results[-1])}")
    shutil.rmtree(out / "tmp", ignore_errors=True)
    _report(out, results, str(spark.sparkContext.master))
    first: dict[str, int] = {}  # case -> the deliveries of its first run: every plan must give as many
    for r in results:
        first.setdefault(r["case"], r["deliveries"])
    wrong = [r for r in results if r["deliveries"] != (r["expected"] or first[r["case"]])]
    print(f"scale: report in {out / 'report.md'}", file=stdout)
    for r in wrong:
        print(
            f"scale: {r['case']} plan {r['plan']}: {r['deliveries']:,} deliveries, not as expected",
            file=stderr,
        )
    return 1 if wrong else 0


def _short(n: int) -> str:
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k"


def _line(r: dict[str, Any]) -> str:
    return (
        f"plan {r['plan']} -> {r['chosen']}: {r['seconds']:.1f} s, {r['deliveries']:,} deliveries, "
        f"largest worker {r['worker_peak_mib']:,.0f} MiB, JVM {r['jvm_peak_mib']:,.0f} MiB"
    )


def _fleet(path: Path, devices: int, messages: int, progress: Progress) -> tuple[Path, Path]:
    """The fleet's subscriptions and messages (written once, kept for the next run)."""

    def subscriptions(writer: Any) -> None:
        progress(
            f"writing {devices:,} device subscriptions and {REGIONS * SITES * len(METRICS):,} wildcard ones"
        )
        apps = [
            (f"fleet.r{r}.s{s}.*.{m}", f"app-r{r}-s{s}")
            for r in range(REGIONS)
            for s in range(SITES)
            for m in METRICS
        ]
        apps += [(f"fleet.r{r}.#", f"monitor-r{r}") for r in range(REGIONS)] + [("devices.*.cmd", "audit")]
        writer.write_table(_pairs(apps))
        for start in range(0, devices, CHUNK):
            ids = pc.cast(pa.array(np.arange(start, min(devices, start + CHUNK))), pa.string())
            device = pc.binary_join_element_wise("d", ids, "")
            pattern = pc.binary_join_element_wise("devices.", device, ".cmd", "")
            writer.write_table(pa.table([pattern, device], schema=_PAIRS))

    def topics(rng: np.random.Generator, count: int) -> pa.Array:
        """Half commands to random devices, half telemetry of random sites."""
        device = pc.cast(pa.array(rng.integers(0, devices, count)), pa.string())
        command = pc.binary_join_element_wise("devices.d", device, ".cmd", "")
        region = pc.cast(pa.array(rng.integers(0, REGIONS, count)), pa.string())
        site = pc.cast(pa.array(rng.integers(0, SITES, count)), pa.string())
        metric = pa.array(np.array(METRICS)[rng.integers(0, len(METRICS), count)])
        telemetry = pc.binary_join_element_wise("fleet.r", region, ".s", site, ".d", device, ".", metric, "")
        return pc.if_else(pa.array(rng.random(count) < 0.5), command, telemetry)

    params = {"devices": devices, "messages": messages, "seed": 3}
    return _written(path, params, messages, subscriptions, topics, progress)


def _tenants(path: Path, devices: int, messages: int, progress: Progress) -> tuple[Path, Path]:
    """The multi-tenant table (every pattern a wildcard one) and its messages (written once)."""

    def of_devices(ids: Any, last: Any) -> Any:
        """``t<k>.d<id>.<last>`` of each device id, ``k`` its tenant."""
        tenant = pc.cast(pa.array(ids % TENANTS), pa.string())
        device = pc.cast(pa.array(ids), pa.string())
        return pc.binary_join_element_wise("t", tenant, ".d", device, ".", last, "")

    def subscriptions(writer: Any) -> None:
        progress(f"writing {devices:,} wildcard subscriptions of {TENANTS:,} tenants")
        others = [(f"t{k}.#", f"monitor-t{k}") for k in range(TENANTS)] + [("*.*.alarm", "alarms")]
        writer.write_table(_pairs(others))
        for start in range(0, devices, CHUNK):
            ids = np.arange(start, min(devices, start + CHUNK))
            device = pc.binary_join_element_wise("d", pc.cast(pa.array(ids), pa.string()), "")
            writer.write_table(pa.table([of_devices(ids, "*"), device], schema=_PAIRS))

    def topics(rng: np.random.Generator, count: int) -> pa.Array:
        metric = pa.array(np.array(METRICS)[rng.integers(0, len(METRICS), count)])
        return of_devices(rng.integers(0, devices, count), metric)

    params = {"devices": devices, "messages": messages, "seed": 5, "tenants": TENANTS}
    return _written(path, params, messages, subscriptions, topics, progress)


_PAIRS = pa.schema([("pattern", pa.string()), ("subscriber", pa.string())])


def _pairs(pairs: list[tuple[str, str]]) -> pa.Table:
    return pa.table([pa.array([p for p, _ in pairs]), pa.array([s for _, s in pairs])], schema=_PAIRS)


def _written(
    path: Path,
    params: dict[str, int],
    messages: int,
    subscriptions: Callable[[Any], None],
    topics: Callable[[np.random.Generator, int], pa.Array],
    progress: Progress,
) -> tuple[Path, Path]:
    """(messages dir, subscriptions file) under ``path``, written unless ``path`` already holds
    the data of ``params`` (its ``params.json``, written last): ``subscriptions(writer)`` writes
    the table, ``topics(rng, count)`` draws the topics of each file of messages (random payloads,
    offsets and timestamps added here)."""
    marker = path / "params.json"
    if marker.exists() and json.loads(marker.read_text()) == params:
        return path / "messages", path / "subscriptions.parquet"
    shutil.rmtree(path, ignore_errors=True)  # this benchmark's own data dir, half-written or old
    (path / "messages").mkdir(parents=True)
    rng = np.random.default_rng(params["seed"])
    with pq.ParquetWriter(path / "subscriptions.parquet", _PAIRS) as writer:
        subscriptions(writer)
    for number, start in enumerate(range(0, messages, CHUNK)):
        count = min(messages, start + CHUNK) - start
        progress(f"writing messages {start:,}-{start + count:,} of {messages:,}")
        topic = topics(rng, count)
        offsets = np.arange(start, start + count, dtype=np.int64)
        table = pa.table(
            [
                pa.array(offsets),
                pa.array(1_704_067_200_000_000 + offsets * 1_000, pa.timestamp("us", tz="UTC")),
                topic,
                payloads(rng, count, 20),
            ],
            schema=MESSAGE_SCHEMA,
        )
        pq.write_table(table, path / "messages" / f"part-{number:04d}.parquet", row_group_size=ROW_GROUP_ROWS)
    marker.write_text(json.dumps(params))
    return path / "messages", path / "subscriptions.parquet"


def _run(
    spark: Any, case: str, data: tuple[Path, Path], plan: str, target: Path, expected: int | None = None
) -> dict[str, Any]:
    """One route job as ``topicmatch route`` runs it (subscriptions read, plan chosen, Parquet
    written), with the peak memory of its processes."""
    messages_path, subscriptions_path = data
    shutil.rmtree(target, ignore_errors=True)
    sampler = _PeakMemory()
    sampler.start()
    began = time.perf_counter()
    table = Subscriptions.read(subscriptions_path)
    chosen = choose(table, plan)
    read_s = time.perf_counter() - began
    messages = spark.read.parquet(str(messages_path))
    deliveries = route_cold(messages, chosen)
    write(deliveries, str(target), "parquet")
    seconds = time.perf_counter() - began
    sampler.stop()
    count = spark.read.parquet(str(target)).count()
    return {
        "case": case,
        "plan": plan,
        "chosen": chosen.name,
        "subscriptions": len(table),
        "joined_literal": chosen.literal_pairs,
        "shards": 0 if chosen.shards is None else len(chosen.shards.tables),
        "largest_shard": 0 if chosen.shards is None else chosen.shards.largest,
        "seconds": seconds,
        "driver_read_plan_s": read_s,
        "deliveries": count,
        "expected": expected,
        "worker_peak_mib": sampler.worker_peak / 1024,
        "jvm_peak_mib": sampler.jvm_peak / 1024,
        "driver_python_peak_mib": sampler.driver_peak / 1024,
    }


class _PeakMemory(threading.Thread):
    """The high-water marks (kB) of the largest Python worker, of the JVM and of this process
    during one run: reset when it starts (``5`` into ``/proc/PID/clear_refs``; the JVM outlives
    the runs), sampled four times a second (workers come and go)."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.worker_peak = 0
        self.jvm_peak = 0
        self.driver_peak = 0
        self._done = threading.Event()

    def start(self) -> None:
        for pid in [os.getpid(), *self._ours()]:
            with contextlib.suppress(OSError):
                Path(f"/proc/{pid}/clear_refs").write_text("5")
        super().start()

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=5)
        self._sample()
        self.driver_peak = _high_water(os.getpid())

    def run(self) -> None:
        while not self._done.wait(0.25):
            self._sample()

    def _ours(self) -> list[int]:
        """This process's descendants: other Spark jobs on the machine are not ours."""
        parents: dict[int, int] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, ValueError, IndexError):
                    continue
        me = os.getpid()
        ours = []
        for pid in parents:
            ancestor, steps = parents.get(pid, 0), 0
            while ancestor not in (me, 0, 1) and steps < 16:
                ancestor, steps = parents.get(ancestor, 0), steps + 1
            if ancestor == me:
                ours.append(pid)
        return ours

    def _sample(self) -> None:
        for pid in self._ours():
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            peak = _high_water(pid)
            if b"pyspark.daemon" in command:
                self.worker_peak = max(self.worker_peak, peak)
            elif b"org.apache.spark.deploy.SparkSubmit" in command:
                self.jvm_peak = max(self.jvm_peak, peak)


def _high_water(pid: int) -> int:
    """The process's resident high-water mark in kB (0 if it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)


def _report(out: Path, results: list[dict[str, Any]], master: str) -> None:
    machine = machine_info()
    (out / "results.json").write_text(
        json.dumps(
            {"experiment": "pipeline-scale", "machine": machine, "master": master, "results": results},
            indent=2,
        )
        + "\n"
    )
    rows = [
        "| case | plan (chosen) | subscriptions | joined literal | shards (largest) | wall (s) "
        "| of which read + plan (s) | deliveries | largest worker (MiB) | JVM (MiB) | driver Python (MiB) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        shards = f"{r['shards']} ({r['largest_shard']:,})" if r["shards"] else "-"
        rows.append(
            f"| {r['case']} | {r['plan']} ({r['chosen']}) | {r['subscriptions']:,} | {r['joined_literal']:,} "
            f"| {shards} "
            f"| {r['seconds']:.1f} | {r['driver_read_plan_s']:.1f} | {r['deliveries']:,} "
            f"| {r['worker_peak_mib']:,.0f} | {r['jvm_peak_mib']:,.0f} | {r['driver_python_peak_mib']:,.0f} |"
        )
    text = [
        "# Routing on Spark at scale: a subscription table bigger than a worker",
        "",
        f"Machine: {machine['cpu']}, {machine['cores']} cores, {machine['python']}, load average "
        f"{machine['load_average']}, {machine['time']}. Master: {master}.",
        "Each run: subscriptions read and validated on the driver, the plan chosen, the deliveries "
        "written as Parquet, in a new Spark context (new Python workers). Peaks are the high-water "
        "marks (`VmHWM`) of each process during the run: the largest Python worker, the JVM (driver "
        "and executor in local mode) and the driver's Python process, which reads the table.",
        "",
        *rows,
        "",
    ]
    (out / "report.md").write_text("\n".join(text))
