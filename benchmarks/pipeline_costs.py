"""Where a ``route`` job's time goes, and what Parquet writer options change it.

Usage: ``.venv/bin/python benchmarks/pipeline_costs.py DATA_DIR [ROUNDS [VARIANT,...]]``
(``DATA_DIR``: a case of ``topicmatch bench pipeline``, e.g. ``out/bench/pipeline/data/100kx10k``;
``ROUNDS`` default 5; the variants by name, default all).

Variants, alternated in every round in one Spark session (each round starting one variant later,
the JVM's heap collected before every run), each ``route`` cold in the workers:

* ``route``: as ``topicmatch route`` writes (snappy, no dictionary);
* ``route dictionary``: the same with Parquet's dictionary encoding (``route`` turns it off);
* ``route int96``: the same with timestamps as Spark's default INT96 (``route`` writes
  ``TIMESTAMP_MICROS``; a session setting, set around the run);
* ``route zstd``: the same with ``compression=zstd``;
* ``route no stats``: the same with ``parquet.column.statistics.enabled=false``;
* ``route v2``: the same with Parquet's data page v2 (``parquet.writer.version=v2``);
* ``route one by one``: as ``route``, but every topic looked up one by one through
  ``Matcher.lookup`` and the topic cache, as before the level walk (``topicmatch.spark._levels``);
* ``route warm``: as ``route``, but every run with the same subscriptions key and the workers
  keeping that matcher (and what its DFA learnt) from one run to the next (``Pinned``): after
  the warm-up every topic is a known transition (as long as the DFA's 100,000 transitions hold
  them all: at 100k x 10k they do, at 1M x 1k they do not) and the matching costs next to
  nothing. What a route costs beyond its matching;
* ``route gc on``: as ``route``, but with Python's cyclic garbage collector left running while the
  workers build their matcher and look up cold topics (as before it was paused there, see
  ``_cyclic_gc_paused`` in ``topicmatch.spark._worker``);
* ``transport``: no matching, but every message crosses to a Python worker and back through
  ``mapInArrow`` as ``route``'s do, coming back with a constant list of 70 strings, exploded and
  written the same way: the output plus the Python round trip, without the matching;
* ``transport exploded``: as ``transport``, but the worker builds the delivery rows itself (every
  column taken once per subscriber) and Spark has nothing to explode: the alternative to
  exploding in the JVM;
* ``floor``: no matching and no Python, every message exploded with a constant list of 70
  strings (the fan-out of the 100k x 10k case) and written the same way: the cost of the output
  alone.

Printed per variant: median wall time, median CPU-seconds of the JVM and of the Python
workers (from ``/proc`` around each run; Linux only), and the output's size.

Figures: docs/pipeline.md (where a ``route`` job's time goes). It swaps parts of the Spark
worker to time them, which no public name allows: listed in tests/test_architecture.py as a
script that still reaches inside.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType, StructField, StructType

from topicmatch.spark import Subscriptions, _worker, session
from topicmatch.spark import _route as route_module
from topicmatch.spark._io import writer_options
from topicmatch.spark._route import _route
from topicmatch.spark._worker import RouteFunction


class CollectorNotPaused(RouteFunction):
    """``RouteFunction`` with the worker's collector pause undone while it runs (the "before")."""

    def __call__(self, batches: Any) -> Any:
        paused = _worker._cyclic_gc_paused
        _worker._cyclic_gc_paused = contextlib.nullcontext  # type: ignore[assignment]
        try:
            yield from super().__call__(batches)
        finally:
            _worker._cyclic_gc_paused = paused


class Pinned(RouteFunction):
    """``RouteFunction`` whose matcher outlives the worker's version cache (``route warm``).

    Every cold variant adds a version to each worker's cache, which keeps the last three: the
    warm matcher would be dropped between its runs. Each worker process keeps it here instead
    and puts it back under its key before every task.
    """

    def __call__(self, batches: Any) -> Any:
        pinned = getattr(_worker, "_pinned_for_bench", None)
        if pinned is None or pinned[0] != self.key:
            pinned = (self.key, _worker.compiled_for(self.key, self.dialect, self.pedantic, self.payload))
            _worker._pinned_for_bench = pinned  # type: ignore[attr-defined]
        _worker._COMPILED[self.key] = pinned[1]
        yield from super().__call__(batches)


class OneByOne(RouteFunction):
    """``RouteFunction`` looking every topic up one by one (no level walk: the "before")."""

    def __call__(self, batches: Any) -> Any:
        compiled = _worker.compiled_for(self.key, self.dialect, self.pedantic, self.payload)
        compiled._walker = None  # the call below finds this very matcher in the worker's cache
        yield from super().__call__(batches)


def cpu_seconds() -> dict[str, float]:
    """CPU-seconds so far of every process, keyed by pid, labelled java or python."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_text().split("\0")[0]
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        out[("java " if "java" in command else "python ") + pid] = (int(fields[11]) + int(fields[12])) / tick
    return out


FAN_OUT = [f"sub-{i:06d}" for i in range(70)]


def constant_lists(batches: Any) -> Any:
    """The ``transport`` variant's function: each message back with the same 70 subscribers."""
    values = pa.array(FAN_OUT)
    for batch in batches:
        n = batch.num_rows
        offsets = pa.array(np.arange(0, len(FAN_OUT) * (n + 1), len(FAN_OUT), dtype=np.int32))
        lists = pa.ListArray.from_arrays(offsets, pa.concat_arrays([values] * n) if n else values.slice(0, 0))
        yield pa.RecordBatch.from_arrays([*batch.columns, lists], names=[*batch.schema.names, "subscribers"])


def exploded_rows(batches: Any) -> Any:
    """The ``transport exploded`` variant's function: each message 70 times, with the same 70 names."""
    values = pa.array(FAN_OUT)
    for batch in batches:
        n = batch.num_rows
        rows = batch.take(pa.array(np.repeat(np.arange(n, dtype=np.int32), len(FAN_OUT))))
        names = pa.concat_arrays([values] * n) if n else values.slice(0, 0)
        yield pa.RecordBatch.from_arrays([*rows.columns, names], names=[*batch.schema.names, "subscriber"])


#: The session setting of the timestamps' Parquet type (route's session: TIMESTAMP_MICROS).
INT96 = "spark.sql.parquet.outputTimestampType"


def main() -> None:
    data, rounds = Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 5
    spark = session(None, {"spark.driver.memory": "2g"})
    table = Subscriptions.read(data / "subscriptions.parquet")
    messages = spark.read.parquet(str(data / "messages"))
    constant = F.array(*[F.lit(name) for name in FAN_OUT])
    listed = StructType(
        [*messages.schema.fields, StructField("subscribers", ArrayType(StringType(), False), False)]
    )
    exploded = StructType([*messages.schema.fields, StructField("subscriber", StringType(), False)])
    out = Path(tempfile.mkdtemp(prefix="pipeline-costs-")) / "out"
    base = writer_options("parquet")

    def routed(token: str = "") -> Any:
        token = token or uuid.uuid4().hex  # a new one: cold workers
        return _route(messages, table, "topic", "subscriber", 1 << 20, cache_token=token)

    def routed_by(function: type[RouteFunction], token: str = "") -> Any:
        route_module.RouteFunction = function  # type: ignore[attr-defined]
        try:
            return routed(token)
        finally:
            route_module.RouteFunction = RouteFunction  # type: ignore[attr-defined]

    variants: dict[str, tuple[Any, dict[str, str]]] = {
        "route": (routed, base),
        "route dictionary": (routed, {**base, "parquet.enable.dictionary": "true"}),
        "route int96": (routed, {**base, INT96: "INT96"}),
        "route zstd": (routed, {**base, "compression": "zstd"}),
        "route no stats": (routed, {**base, "parquet.column.statistics.enabled": "false"}),
        "route v2": (routed, {**base, "parquet.writer.version": "v2"}),
        "route warm": (lambda: routed_by(Pinned, "warm"), base),
        "route gc on": (lambda: routed_by(CollectorNotPaused), base),
        "route one by one": (lambda: routed_by(OneByOne), base),
        "transport": (
            lambda: messages.mapInArrow(constant_lists, listed).select(
                *messages.columns, F.explode("subscribers").alias("subscriber")
            ),
            base,
        ),
        "transport exploded": (lambda: messages.mapInArrow(exploded_rows, exploded), base),
        "floor": (lambda: messages.select("*", F.explode(constant).alias("subscriber")), base),
    }

    if len(sys.argv) > 3:
        chosen = sys.argv[3].split(",")
        unknown = set(chosen) - set(variants)
        if unknown:
            sys.exit(f"unknown variants {sorted(unknown)}; choose among {list(variants)}")
        variants = {name: variants[name] for name in chosen}

    def run(name: str) -> tuple[float, float, float, int]:
        frame_of, options = variants[name]
        shutil.rmtree(out, ignore_errors=True)
        # Start every run from a collected JVM heap: otherwise a variant pays for the garbage of
        # the one before it (measured: whichever ran right after ``floor`` was ~10 % slower).
        spark.sparkContext._jvm.System.gc()  # type: ignore[union-attr]
        settings = {key: value for key, value in options.items() if key.startswith("spark.")}
        held = {key: str(spark.conf.get(key)) for key in settings}  # the session sets each
        for key, value in settings.items():
            spark.conf.set(key, value)
        writer = {key: value for key, value in options.items() if key not in settings}
        before, began = cpu_seconds(), time.perf_counter()
        try:
            frame_of().write.options(**writer).parquet(str(out))
        finally:
            for key, kept in held.items():
                spark.conf.set(key, kept)
        wall, after = time.perf_counter() - began, cpu_seconds()
        spent = {k: v - before.get(k, 0.0) for k, v in after.items()}
        java = sum(v for k, v in spent.items() if k.startswith("java"))
        python = sum(v for k, v in spent.items() if k.startswith("python"))
        size = sum(f.stat().st_size for f in out.rglob("*.parquet"))
        return wall, java, python, size

    for name in variants:  # warm-up: JIT, Python workers
        run(name)
    results: dict[str, list[tuple[float, float, float, int]]] = {name: [] for name in variants}
    names = list(variants)
    for turn in range(rounds):  # each round starts one variant later: no variant always first
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            results[name].append(run(name))
    print(f"{data} ({rounds} rounds, load average at the end {os.getloadavg()[0]:.1f})")
    for name, runs in results.items():
        wall, java, python = (statistics.median(r[i] for r in runs) for i in range(3))
        cpu = f"jvm {java:5.2f} cpu-s  python {python:5.2f} cpu-s"
        print(f"{name:18s} wall {wall:5.2f} s  {cpu}  {runs[-1][3] >> 20} MiB")
    shutil.rmtree(out.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
