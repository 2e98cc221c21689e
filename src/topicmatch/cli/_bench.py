"""``topicmatch bench``: one subcommand per experiment.

Declared here: the study's experiments, the workload matrix and the sweep (:data:`EXPERIMENTS`,
each a module of :mod:`topicmatch.bench` with ``run(out, repeat, quick, progress) -> Path``, and
the keywords of its own options, :data:`OPTIONS`), ``bench all``, and ``bench pipeline`` (the
Spark pipeline's benchmark, which needs the ``spark`` extra: :mod:`topicmatch.bench.spark_pipeline`
and :mod:`topicmatch.bench.spark_scale`).
Other installed distributions add theirs through the entry point group ``topicmatch.bench``: a
function ``add_bench_commands(subparsers)`` (the latency harness, ``topicmatch_latency``, adds
``latency``, ``commitlog`` and ``brokers``). Every runner imports its heavy dependencies when it
runs, after :func:`topicmatch.support.commandline.require_extra`, so ``topicmatch --help`` stays fast.
"""

from __future__ import annotations

import argparse
import functools
import importlib
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import Any, TextIO

from ..bench.report import mark_quick
from ..support.commandline import UsageError, add_out, add_repeat, repeat_of, require_extra
from ..support.progress import Progress

__all__ = ["EXPERIMENTS", "HARNESS", "add_commands"]

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
    "sweep": (
        "topicmatch.bench.sweep",
        "the default against the plain trie (and itself, A/A) on 30 workload shapes drawn at random",
    ),
}

#: The options an experiment has beyond every experiment's, passed to its ``run`` by keyword when
#: given: experiment -> option's attribute -> ``run``'s parameter.
OPTIONS: dict[str, dict[str, str]] = {
    "workloads": {"rows": "only"},
    "sweep": {"seed": "seed", "shapes": "shape_count"},
}


#: What ``bench NAME --quick`` cost in CPU seconds (all its processes, ``/usr/bin/time``), pure
#: build, on a 2-core Xeon VM of docs/performance.md's machines; its wall time at a load average
#: of 13 to 18 there was 3 to 5 times as long (the workload matrix: 50 s of CPU, 175 s of wall). The
#: sweep's was measured on the AMD EPYC VM instead: 3.9 to 4.7 s over three seeds, its 6 shapes
#: drawn anew by each (8 s of wall at a load average of 8).
QUICK_CPU_S = {
    "operations": 5,
    "throughput": 3,
    "memory": 9,
    "scaling": 7,
    "concurrency": 7,
    "snapshots": 4,
    "peers": 2,
    "amqtt": 8,
    "workloads": 50,
    "sweep": 5,
}


def _common(parser: argparse.ArgumentParser, default_out: str, name: str | None = None) -> None:
    add_out(parser, default_out)
    add_repeat(parser, "runs per measurement", quick=1)
    cpu = QUICK_CPU_S[name] if name else sum(QUICK_CPU_S.values())
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"small sizes and one run per measurement (unless --repeat): a smoke test, not figures to "
        f"quote; about {cpu} s of CPU time (pure build, 2-core Xeon), and longer in wall time on a "
        "busy machine (3 to 5 times at a load average of 13 to 18)",
    )


#: The entry point group through which other distributions add experiments to ``topicmatch bench``.
GROUP = "topicmatch.bench"

#: The latency harness's experiments, and where to get them when it is not installed.
HARNESS = ("latency", "commitlog", "brokers")
_HARNESS_HINT = (
    "the broker experiments are in the latency harness, a distribution of its own: "
    "pip install ./latency (from a checkout of topicmatch)"
)


def add_commands(commands: Any, plugins: Iterable[EntryPoint] | None = None) -> None:
    """Add ``topicmatch bench`` and its experiments: this package's, then those of ``plugins``
    (default: the installed distributions' entry points of :data:`GROUP`). A harness experiment
    that no plug-in added answers with the command that installs the harness."""
    bench = commands.add_parser(
        "bench",
        help="run a benchmark experiment and write its report",
        description="Benchmarks: each experiment writes DIR/report.md, PNG charts and raw JSON results.",
    )
    experiments = bench.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    _add_experiments(experiments)
    _add_pipeline(experiments)
    for entry in entry_points(group=GROUP) if plugins is None else plugins:
        entry.load()(experiments)
    for name in HARNESS:
        if name not in experiments.choices:
            parser = experiments.add_parser(name, help="(needs the latency harness: pip install ./latency)")
            parser.set_defaults(run=_needs_harness)


def _needs_harness(options: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    raise UsageError(_HARNESS_HINT)


#: The workload matrix's rows at the full sizes (``workloads.rows_of(workloads.FULL, ...)``, kept
#: here so that ``--help`` does not import the benchmarks; a test checks that they agree).
WORKLOAD_ROWS = (
    "study",
    "distinct-10k",
    "distinct-100k",
    "zipf",
    "unmatched",
    "churn",
    "fanout-20k",
    "fanout-100k/10",
    "subs-1M",
    "burst-1000k",
)


def _add_experiments(subparsers: Any) -> None:
    for name, (_module, help_text) in EXPERIMENTS.items():
        parser = subparsers.add_parser(name, help=help_text, description=f"Experiment '{name}': {help_text}.")
        _common(parser, f"out/bench/{name}", name)
        if name == "workloads":
            parser.add_argument(
                "--rows",
                type=lambda text: set(text.split(",")),
                metavar="ROW[,ROW...]",
                help=f"only these rows ({', '.join(WORKLOAD_ROWS)}; quick sizes name them after theirs)",
            )
        if name == "sweep":
            parser.add_argument(
                "--shapes",
                type=int,
                metavar="N",
                help="shapes to draw and measure (default: 30, with --quick 6)",
            )
            parser.add_argument(
                "--seed",
                type=int,
                metavar="N",
                help="the seed the shapes are drawn from: the same seed, the same shapes (default: a random "
                "one, printed at the start and in the report)",
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
    repeat = repeat_of(options)
    if repeat < 1:
        raise UsageError("--repeat must be at least 1")
    written: list[tuple[str, Path]] = []
    for name in names:
        module = importlib.import_module(EXPERIMENTS[name][0])
        out = options.out / name if nested else options.out
        extra = {
            parameter: value
            for option, parameter in OPTIONS.get(name, {}).items()
            if (value := getattr(options, option, None)) is not None
        }
        report = module.run(out, repeat=repeat, quick=options.quick, progress=Progress(name, stderr), **extra)
        if options.quick:
            mark_quick(report)
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


_PIPELINE_OUT = "out/bench/pipeline"


def _add_pipeline(subparsers: Any) -> None:
    """``bench pipeline``: ``route`` against the naive regex cross join, on the same data (what it
    measures, and how: :mod:`topicmatch.bench.spark_pipeline`, with ``--scale``
    :mod:`topicmatch.bench.spark_scale`)."""
    parser = subparsers.add_parser(
        "pipeline",
        help="the Spark routing pipeline against the naive regex cross join",
        description=(
            "Time route() in both layouts (Parquet write included) and the naive cross join with rlike on "
            "the same generated "
            "data (100k x 1k, 100k x 10k; route alone at 1M x 1k and 1M x 10k), check that both give the "
            "same deliveries, and write DIR/report.md, DIR/results.json and DIR/pipeline.png."
        ),
    )
    add_out(parser, _PIPELINE_OUT)
    add_repeat(parser, "timed runs of route per case")
    parser.add_argument(
        "--naive-repeat",
        type=int,
        metavar="N",
        default=3,
        help="timed runs of the naive join per case (default: 3)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="two small cases, two runs each: a smoke test (about 50 s)"
    )
    parser.add_argument(
        "--scale",
        action="store_true",
        help="instead: a fleet's table of 10M literal and 100k wildcard subscriptions x 10M messages, "
        "routed by the plan that 'auto' chooses, with each worker's peak memory, both plans at 1M x 1M "
        "and 1M x 1k, and a table of 2M wildcard subscriptions x 2M messages by the matcher and by "
        "'auto' (which shards it) (about 15 min, 6 GB of driver memory, 1.3 GB of data on disk; with "
        "--quick: 20k x 20k, and 20k wildcard ones sharded); its default DIR is out/bench/pipeline-scale",
    )
    parser.add_argument("--master", default=None, help="Spark master (default: local[*])")
    parser.set_defaults(run=_run_pipeline)


def _run_pipeline(options: argparse.Namespace, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    require_extra("spark")
    if options.repeat < 1 or options.naive_repeat < 1:
        raise UsageError("--repeat and --naive-repeat must be >= 1")
    if options.scale and options.out == Path(_PIPELINE_OUT):
        options.out = Path(_PIPELINE_OUT + "-scale")
    experiment = "topicmatch.bench.spark_scale" if options.scale else "topicmatch.bench.spark_pipeline"
    code = int(importlib.import_module(experiment).run(options, stdout, stderr))
    report = options.out / "report.md"
    if options.quick and report.exists():
        mark_quick(report)
    return code
