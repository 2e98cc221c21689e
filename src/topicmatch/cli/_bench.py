"""``topicmatch bench``: one subcommand per experiment.

The experiments are declared by :mod:`topicmatch.bench._experiments_cli` (the study's and the
workload matrix), :mod:`topicmatch.bench.latency._cli` (latency and commit logs) and
:mod:`._bench_pipeline` (the Spark pipeline); each imports its heavy dependencies inside its
runner, after :func:`._common.require`.
"""

from __future__ import annotations

from typing import Any

from ..bench import _experiments_cli
from ..bench.latency import _cli as _latency_cli
from . import _bench_pipeline

__all__ = ["add_commands"]


def add_commands(commands: Any) -> None:
    bench = commands.add_parser(
        "bench",
        help="run a benchmark experiment and write its report",
        description="Benchmarks: each experiment writes DIR/report.md, PNG charts and raw JSON results.",
    )
    experiments = bench.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    for module in (_experiments_cli, _bench_pipeline, _latency_cli):
        module.add_bench_commands(experiments)
