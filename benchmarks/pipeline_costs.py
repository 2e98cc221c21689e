"""Where a ``route`` job's time goes, and what Parquet writer options change it.

Usage: ``.venv/bin/python benchmarks/pipeline_costs.py DATA_DIR [ROUNDS [VARIANT,...]]``
(``DATA_DIR``: a case of ``topicmatch bench pipeline``, e.g. ``out/bench/pipeline/data/100kx10k``;
``ROUNDS`` default 5; the variants by name, default all).

Variants, alternated in every round in one Spark session (each round starting one variant later,
the JVM's heap collected before every run); a ``route`` is cold in the workers
(``bench_api.route_cold``: the workers build its matcher afresh) unless its name says warm:

* ``route``: as ``topicmatch route`` writes (``bench_api.writer_options``: snappy, no dictionary);
* ``route, again``: ``route`` once more, the A/A control: its ratio to ``route`` is what the
  run resolves (a ratio of another variant inside that spread is not a difference);
* ``route dictionary``: the same with Parquet's dictionary encoding (``route`` turns it off);
* ``route int96``: the same with timestamps as Spark's default INT96 (``route`` writes
  ``TIMESTAMP_MICROS``; a session setting, set around the run);
* ``route zstd``: the same with ``compression=zstd``;
* ``route no stats``: the same with ``parquet.column.statistics.enabled=false``;
* ``route v2``: the same with Parquet's data page v2 (``parquet.writer.version=v2``);
* ``route warm``: ``topicmatch.spark.route``, which keeps the matcher of the same subscriptions
  in the workers from job to job, run once unmeasured right before each measured run (the cold
  runs between would push it out of the workers' last three versions): after it every topic is
  a transition its DFA knows (as long as the DFA's 100,000 transitions hold them all: at 100k x
  10k they do, at 1M x 1k they do not), so the matching costs next to nothing. What a route
  costs beyond its matching;
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
processes (this driver and its descendants, from ``/proc`` around each run; Linux only), the output's
size, and the median and range over the rounds of its wall time ÷ ``route``'s in the same round.

Figures: docs/pipeline.md (where a ``route`` job's time goes, and the Parquet output's choices).
"""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa  # type: ignore[import-untyped, unused-ignore]
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType, StructField, StructType

from topicmatch.spark import Subscriptions, route, session
from topicmatch.spark.bench_api import choose, route_cold, writer_options


def cpu_seconds() -> dict[str, float]:
    """CPU-seconds so far of this process and its descendants (this driver, the JVM, its Python
    workers), keyed by pid, labelled java or python: other work on the machine is not counted,
    nor a process that ends during a run (Spark keeps its Python workers from task to task)."""
    tick = os.sysconf("SC_CLK_TCK")
    seen: dict[int, tuple[int, str, float]] = {}  # pid -> (parent, label, CPU-seconds)
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            command = Path(f"/proc/{name}/cmdline").read_text().split("\0")[0]
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        label = "java" if "java" in command else "python"
        seen[int(name)] = (int(fields[1]), label, (int(fields[11]) + int(fields[12])) / tick)
    ours, grown = {os.getpid()}, True
    while grown:
        more = {pid for pid, (parent, _, _) in seen.items() if parent in ours} - ours
        ours |= more
        grown = bool(more)
    return {f"{seen[pid][1]} {pid}": seen[pid][2] for pid in ours if pid in seen}


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
    plan = choose(table, "matcher")

    def routed() -> Any:
        return route_cold(messages, plan)

    def warm() -> Any:
        return route(messages, table, dialect=table.dialect, pedantic=table.pedantic, plan="matcher")

    # name -> (the frame, the writer's options and session settings, whether a run of the same
    # frame comes first, unmeasured)
    variants: dict[str, tuple[Any, dict[str, str], bool]] = {
        "route": (routed, base, False),
        "route, again": (routed, base, False),
        "route dictionary": (routed, {**base, "parquet.enable.dictionary": "true"}, False),
        "route int96": (routed, {**base, INT96: "INT96"}, False),
        "route zstd": (routed, {**base, "compression": "zstd"}, False),
        "route no stats": (routed, {**base, "parquet.column.statistics.enabled": "false"}, False),
        "route v2": (routed, {**base, "parquet.writer.version": "v2"}, False),
        "route warm": (warm, base, True),
        "transport": (
            lambda: messages.mapInArrow(constant_lists, listed).select(
                *messages.columns, F.explode("subscribers").alias("subscriber")
            ),
            base,
            False,
        ),
        "transport exploded": (lambda: messages.mapInArrow(exploded_rows, exploded), base, False),
        "floor": (lambda: messages.select("*", F.explode(constant).alias("subscriber")), base, False),
    }

    if len(sys.argv) > 3:
        chosen = sys.argv[3].split(",")
        unknown = set(chosen) - set(variants)
        if unknown:
            sys.exit(f"unknown variants {sorted(unknown)}; choose among {list(variants)}")
        variants = {name: variants[name] for name in chosen}

    def write(frame_of: Any, options: dict[str, str]) -> None:
        settings = {key: value for key, value in options.items() if key.startswith("spark.")}
        held = {key: str(spark.conf.get(key)) for key in settings}  # the session sets each
        for key, value in settings.items():
            spark.conf.set(key, value)
        writer = {key: value for key, value in options.items() if key not in settings}
        try:
            frame_of().write.options(**writer).parquet(str(out))
        finally:
            for key, kept in held.items():
                spark.conf.set(key, kept)

    def run(name: str) -> tuple[float, float, float, int]:
        frame_of, options, primed = variants[name]
        if primed:
            shutil.rmtree(out, ignore_errors=True)
            write(frame_of, options)
        shutil.rmtree(out, ignore_errors=True)
        # Start every run from a collected JVM heap: otherwise a variant pays for the garbage of
        # the one before it (measured: whichever ran right after ``floor`` was ~10 % slower).
        spark.sparkContext._jvm.System.gc()  # type: ignore[union-attr]
        before, began = cpu_seconds(), time.perf_counter()
        write(frame_of, options)
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
        ratio = ""
        if "route" in results and name != "route":
            ratios = [mine[0] / plain[0] for mine, plain in zip(runs, results["route"], strict=True)]
            ratio = f"  ÷ route {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"
        print(f"{name:18s} wall {wall:5.2f} s  {cpu}  {runs[-1][3] >> 20:3d} MiB{ratio}")
    shutil.rmtree(out.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
