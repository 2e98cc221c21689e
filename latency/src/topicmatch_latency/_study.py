"""Broker round-trip runs: one configuration, or the study's five, with reports and charts.

The study's configurations (30 s each by default, 5 s with ``--quick``):

=============  =========  ================  ===========
configuration  size       rate              connections
=============  =========  ================  ===========
256B@3000      256 B      3,000/s           1
1KB@3000       1,024 B    3,000/s           1
5KB@2000       5,120 B    2,000/s           1
1KB@20000x25   1,024 B    20,000/s          25 (2 processes)
1MB@100        1,048,576  100/s             1
=============  =========  ================  ===========

Each broker is started once per system and serves all its configurations. Every run writes
``<label>.json`` (the :class:`._result.LatencyResult`, histograms encoded), three ``.hgrm``
files (corrected, uncorrected, lateness) and the corrected view's interval log
(``.corrected.hlog``, :mod:`._hlog`); every configuration gets a nines chart and a timeline of
each interval's worst latency, with the systems overlaid; a load sweep (:mod:`._sweep`) gets its
own charts per system instead; ``report.md`` holds the summary table, the notes and the machine.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topicmatch.bench.machine import machine_info

from ._chart import nines_chart, slug, timeline_chart
from ._limits import DEFAULT_LIMITS, Limits
from ._load import STOP, LoadSpec, ShareResult
from ._processes import run_shares
from ._result import VIEWS, LatencyResult, size_name, summary_table
from ._sla import Sla
from ._sweep import write_sweep_report
from ._systems import SYSTEMS, serve

__all__ = [
    "STUDY",
    "Configuration",
    "command_for",
    "configuration",
    "run_configuration",
    "run_study",
    "write_outputs",
]


@dataclass(frozen=True)
class Configuration:
    """Message size, rate and concurrency of one run (the duration is chosen separately)."""

    name: str
    size: int
    rate: int | None  # None: full throttle
    connections: int = 1
    processes: int = 1


STUDY = (
    Configuration("256B@3000", 256, 3_000),
    Configuration("1KB@3000", 1_024, 3_000),
    Configuration("5KB@2000", 5_120, 2_000),
    Configuration("1KB@20000x25", 1_024, 20_000, connections=25, processes=2),
    Configuration("1MB@100", 1_048_576, 100),
)

Progress = Callable[[str], None]


def configuration(size: int, rate: int | None, connections: int = 1, processes: int = 1) -> Configuration:
    """A configuration named as the study names them: ``256B@3000``, ``1KB@20000x25``, ``256B@max``."""
    name = f"{size_name(size)}@{'max' if rate is None else rate}"
    return Configuration(
        name + (f"x{connections}" if connections != 1 else ""), size, rate, connections, processes
    )


def _spec(config: Configuration, duration: float, warmup: float, limits: Limits, interval: float) -> LoadSpec:
    """The schedule of one run of ``config``, checked against ``limits``."""
    spec = LoadSpec(
        rate=config.rate,
        duration=duration,
        warmup=warmup,
        connections=config.connections,
        processes=config.processes,
        limits=limits,
        interval=interval,
    )
    spec.check(config.size)
    return spec


#: Runs the shares of one schedule and returns their results: load processes on this machine
#: (:func:`._processes.run_shares`), or Spark tasks (:func:`._spark_shares.run_shares_on_spark`).
ShareRunner = Callable[[Any, LoadSpec], list[ShareResult]]


def command_for(
    system: str,
    config: Configuration,
    duration: float,
    warmup: float,
    interval: float = 1.0,
    spark_master: str | None = None,
    broker: tuple[str, int] | None = None,
) -> str:
    """The command line that reproduces one run."""
    rate = "max" if config.rate is None else str(config.rate)
    argv = ["topicmatch", "bench", "latency", "--system", system, "--rate", rate]
    argv += ["--size", str(config.size), "--duration", f"{duration:g}", "--warmup", f"{warmup:g}"]
    if config.connections != 1:
        argv += ["--connections", str(config.connections), "--processes", str(config.processes)]
    if interval != 1.0:
        argv += ["--interval", f"{interval:g}"]
    if spark_master is not None:
        argv += ["--spark-master", spark_master]
    if broker is not None:
        argv += ["--broker", f"{broker[0]}:{broker[1]}"]
    return shlex.join(argv)


def run_configuration(
    system: str,
    config: Configuration,
    factory: Callable[[int], object],
    *,
    duration: float,
    warmup: float,
    limits: Limits = DEFAULT_LIMITS,
    interval: float = 1.0,
    shares: ShareRunner = run_shares,
    spark_master: str | None = None,
    broker: tuple[str, int] | None = None,
) -> LatencyResult:
    """One fixed-rate run of ``config`` against a started system (``factory`` from :func:`serve`);
    ``shares`` runs its load shares (``spark_master``: the Spark master they ran on, if so);
    ``broker``: the running broker used, if one was named."""
    spec = _spec(config, duration, warmup, limits, interval)
    machine = machine_info()
    return LatencyResult.from_shares(
        shares(factory, spec),
        spec,
        label=f"{system} {config.name}",
        system=system,
        config={
            "configuration": config.name,
            "size": config.size,
            "rate": config.rate,
            "connections": config.connections,
            "processes": config.processes,
            "duration": duration,
            "warmup": warmup,
            "request": SYSTEMS[system],
            "load": "local processes" if spark_master is None else f"Spark tasks on {spark_master}",
            "broker": "started here" if broker is None else f"{broker[0]}:{broker[1]}",
        },
        machine=machine,
        command=command_for(system, config, duration, warmup, interval, spark_master, broker),
    )


def run_study(
    systems: Sequence[str],
    configs: Sequence[Configuration],
    *,
    duration: float,
    warmup: float,
    timeout: float = 10.0,
    limits: Limits = DEFAULT_LIMITS,
    interval: float = 1.0,
    progress: Progress = lambda _line: None,
    shares: ShareRunner = run_shares,
    spark_master: str | None = None,
    broker: tuple[str, int] | None = None,
) -> list[LatencyResult]:
    """Every configuration against every system; each broker started once and stopped after.
    ``shares`` and ``spark_master``: see :func:`run_configuration`; ``broker`` (host, port): a
    running broker to use instead of starting one (one system only)."""
    for config in configs:  # every configuration checked before any broker starts
        _spec(config, duration, warmup, limits, interval)
    results = []
    for system in systems:
        with serve(system, configs[0].size, timeout, broker) as base:
            for config in configs:
                if STOP.is_set():
                    raise KeyboardInterrupt
                progress(f"{system} {config.name}: {duration:g} s (+{warmup:g} s warm-up)")
                factory = dataclasses.replace(base, size=config.size)
                results.append(
                    run_configuration(
                        system,
                        config,
                        factory,
                        duration=duration,
                        warmup=warmup,
                        limits=limits,
                        interval=interval,
                        shares=shares,
                        spark_master=spark_master,
                        broker=broker,
                    )
                )
                for note in results[-1].notes():
                    progress(f"  note: {note}")
    return results


def write_outputs(
    results: Sequence[LatencyResult], out: Path, title: str, *, sla: Sla | None = None, sweep: bool = False
) -> Path:
    """JSON, ``.hgrm`` and ``.hlog`` per run; charts (per configuration, or per system for a
    ``sweep``); and ``report.md``; returns it."""
    out.mkdir(parents=True, exist_ok=True)
    for result in results:
        stem = slug(result.label)
        (out / f"{stem}.json").write_text(result.to_json())
        for view in VIEWS:
            result.write_hgrm(out / f"{stem}.{view}.hgrm", view)
        if result.intervals:
            result.write_hlog(out / f"{stem}.corrected.hlog")
    charts: list[Path] = []
    sections: list[str] = []
    if sweep:
        sections, charts = write_sweep_report(results, out, sla)
    else:
        by_config: dict[str, list[LatencyResult]] = {}
        for result in results:
            by_config.setdefault(str(result.config.get("configuration", result.label)), []).append(result)
        for name, group in by_config.items():
            first = group[0].config
            rate = "full throttle" if first.get("rate") is None else f"{first.get('rate', '?'):,}/s"
            subtitle = f"{size_name(int(first.get('size', 0)))} at {rate}"
            if first.get("connections", 1) != 1:
                subtitle += f" over {first['connections']} connections"
            subtitle += f", {first.get('duration', 0):g} s each"
            # A curve per system; several runs of one system (an overlay) go by their labels.
            names = [r.system for r in group]
            if len(set(names)) < len(names):
                names = [r.label for r in group]
            charts.append(
                nines_chart(
                    [
                        (n, r.histogram("corrected"), r.histogram("uncorrected"))
                        for n, r in zip(names, group, strict=True)
                    ],
                    out / f"{slug(name)}.png",
                    f"Round-trip latency by percentile: {name}",
                    subtitle=subtitle
                    + "; solid: corrected (from intended start)"
                    + (f"; black steps: SLA {sla.text()}" if sla else ""),
                    sla=sla.targets if sla else (),
                )
            )
            if any(r.intervals for r in group):
                charts.append(
                    timeline_chart(
                        [(n, r.intervals, r.interval) for n, r in zip(names, group, strict=True)],
                        out / f"{slug(name)}-timeline.png",
                        f"Worst round-trip latency in each interval: {name}",
                        subtitle=f"{subtitle}; per {group[0].interval:g} s of intended start (.hlog)",
                    )
                )
    lines = [f"# {title}", "", summary_table(results), ""]
    for result in results:
        lines.append(f"* `{result.command}`" if result.command else f"* {result.label}")
        lines.extend(f"  * {note}" for note in result.notes())
        if sla and not sweep:
            lines.append(f"  * SLA {sla.text()}: {sla.judge(result).cell()}")
    lines += ["", *sections, *(f"![{c.stem}]({c.name})" for c in charts), ""]
    if results:
        lines += ["Machine: " + ", ".join(f"{k}={v}" for k, v in results[0].machine.items()), ""]
    report = out / "report.md"
    report.write_text("\n".join(lines))
    return report
