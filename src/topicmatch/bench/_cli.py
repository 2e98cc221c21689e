"""``topicmatch bench``: one subcommand per experiment, contributed by several modules.

Each module listed in :data:`BENCH_MODULES` exposes ``add_bench_commands(subparsers)`` and adds
its experiments there (with ``run=`` set, see :mod:`topicmatch._cliutil`).
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["add_commands"]

#: Modules that contribute ``topicmatch bench`` experiments; each is imported at start-up, so
#: it must import its heavy dependencies lazily, inside its runners.
BENCH_MODULES: tuple[str, ...] = (
    "topicmatch.bench._experiments_cli",
    "topicmatch.spark._bench",
    "topicmatch.bench.latency._cli",
)


def add_commands(commands: Any) -> None:
    bench = commands.add_parser(
        "bench",
        help="run a benchmark experiment and write its report",
        description="Benchmarks: each experiment writes DIR/report.md, PNG charts and raw JSON results.",
    )
    experiments = bench.add_subparsers(dest="experiment", metavar="EXPERIMENT", required=True)
    for name in BENCH_MODULES:
        importlib.import_module(name).add_bench_commands(experiments)
