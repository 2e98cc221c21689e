"""The study's experiments as ``topicmatch bench <experiment>``, plus ``bench all``."""

from __future__ import annotations

import argparse
import functools
import importlib
from pathlib import Path
from typing import Any, TextIO

from ..cli._common import UsageError, add_out, add_repeat, require_extra
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
    "amqtt": (
        "topicmatch.bench.amqtt_routing",
        "a real amqtt broker, stock and on topicmatch: delivered msg/s, latency, SUBSCRIBE with retained",
    ),
    "workloads": (
        "topicmatch.bench.workloads",
        "every matcher and peer on real-world shapes: distinct, Zipf, unmatched, churn, fan-out, 1M",
    ),
}


def _common(parser: argparse.ArgumentParser, default_out: str) -> None:
    add_out(parser, default_out)
    add_repeat(parser, "runs per measurement")
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and few samples: a smoke test in under a minute"
    )


def add_bench_commands(subparsers: Any) -> None:
    for name, (_module, help_text) in EXPERIMENTS.items():
        parser = subparsers.add_parser(name, help=help_text, description=f"Experiment '{name}': {help_text}.")
        _common(parser, f"out/bench/{name}")
        if name == "workloads":
            parser.add_argument(
                "--rows",
                type=lambda text: set(text.split(",")),
                metavar="ROW[,ROW...]",
                help="only these rows (study, distinct-10k, distinct-100k, zipf, unmatched, churn, "
                "fanout-20k, fanout-100k/10, subs-1M, burst-1000k; quick sizes name them after theirs)",
            )
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
    require_extra("bench")
    if options.repeat < 1:
        raise UsageError("--repeat must be at least 1")
    written: list[tuple[str, Path]] = []
    for name in names:
        module = importlib.import_module(EXPERIMENTS[name][0])
        out = options.out / name if nested else options.out
        rows = getattr(options, "rows", None)
        extra = {"only": rows} if rows else {}
        report = module.run(
            out, repeat=options.repeat, quick=options.quick, progress=Progress(name, stderr), **extra
        )
        written.append((name, report))
        print(f"{name}: {report}", file=stdout)
    if nested:
        index = _index(options.out, written, options.quick)
        print(f"index: {index}", file=stdout)
    return 0


def _index(out: Path, written: list[tuple[str, Path]], quick: bool) -> Path:
    """``out/index.md``: every experiment of the run, what it measures, its report and charts."""
    lines = [
        "# topicmatch benchmarks",
        "",
        ("A quick run (small sizes: a smoke test, not figures to quote). " if quick else "")
        + "Each experiment's report starts with the machine and the parameters it ran with; "
        "docs/performance.md explains the method and the figures.",
        "",
        "| experiment | what it measures | report |",
        "|---|---|---|",
    ]
    for name, report in written:
        lines.append(f"| {name} | {EXPERIMENTS[name][1]} | [{name}/report.md]({report.relative_to(out)}) |")
    for name, report in written:
        charts = sorted(report.parent.glob("*.png"))
        if charts:
            lines += ["", f"## {name}", ""]
            lines += [f"![{name}: {png.stem}]({png.relative_to(out)})" for png in charts]
    path = out / "index.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
