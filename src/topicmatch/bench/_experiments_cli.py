"""The study's experiments as ``topicmatch bench <experiment>``, plus ``bench all``."""

from __future__ import annotations

import argparse
import functools
import importlib
from pathlib import Path
from typing import Any, TextIO

from .._cliutil import UsageError, require
from .report import Progress

__all__ = ["EXPERIMENTS", "add_bench_commands"]

#: name -> (module with run(out, repeat, quick, progress) -> Path, one-line help)
EXPERIMENTS: dict[str, tuple[str, str]] = {
    "operations": ("topicmatch.bench.operations", "per-operation latency, cold and hot, every algorithm"),
    "throughput": ("topicmatch.bench.throughput", "single-thread messages/s on the study's workload"),
    "memory": ("topicmatch.bench.memory", "bytes per subscription from 1k to 1M subscriptions"),
    "scaling": ("topicmatch.bench.scaling", "lookup time from 1k to 1M subscriptions, realistic topics"),
    "concurrency": ("topicmatch.bench.concurrency", "wall time of mixed workloads from 1 to 16 threads"),
    "snapshots": ("topicmatch.bench.snapshots", "100 threads taking consistent copies at once"),
    "peers": ("topicmatch.bench.peers", "paho-mqtt, amqtt and kombu on the same lookups"),
    "workloads": (
        "topicmatch.bench.workloads",
        "every matcher and peer on real-world shapes: distinct, Zipf, unmatched, churn, fan-out, 1M",
    ),
}


def _common(parser: argparse.ArgumentParser, default_out: str) -> None:
    parser.add_argument(
        "--out", type=Path, default=Path(default_out), help=f"output directory (default: {default_out})"
    )
    parser.add_argument(
        "--repeat", type=int, default=5, help="runs per measurement; the median is reported (default: 5)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few samples: a smoke test in under a minute"
    )


def add_bench_commands(subparsers: Any) -> None:
    for name, (_module, help_text) in EXPERIMENTS.items():
        parser = subparsers.add_parser(name, help=help_text, description=f"Experiment '{name}': {help_text}.")
        _common(parser, f"out/bench/{name}")
        parser.set_defaults(run=functools.partial(_run, [name]))
    parser = subparsers.add_parser(
        "all",
        help="every experiment of the study, one after another",
        description="Run every experiment of the study.",
    )
    _common(parser, "out/bench")
    parser.set_defaults(run=functools.partial(_run, list(EXPERIMENTS), nested=True))


def _run(
    names: list[str],
    options: argparse.Namespace,
    stdin: TextIO,
    stdout: TextIO,
    stderr: TextIO,
    nested: bool = False,
) -> int:
    require("matplotlib", "bench")
    require("hdrh", "bench")
    if options.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    for name in names:
        module = importlib.import_module(EXPERIMENTS[name][0])
        out = options.out / name if nested else options.out
        report = module.run(out, repeat=options.repeat, quick=options.quick, progress=Progress(name, stderr))
        print(f"{name}: {report}", file=stdout)
    return 0
