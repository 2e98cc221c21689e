"""``run_load``: the one-call entry point of the harness (checks, runs, merges, labels)."""

from __future__ import annotations

from topicmatch.bench.machine import machine_info

from ._load import LoadSpec
from ._processes import run_shares
from ._requester import RequesterFactory
from ._result import LatencyResult

__all__ = ["run_load"]


def run_load(
    factory: RequesterFactory, spec: LoadSpec, *, label: str = "run", system: str = "custom", size: int = 0
) -> LatencyResult:
    """Run ``spec`` with ``factory``'s requesters and return the merged, labelled result.

    Raises :class:`._limits.LimitError` before starting when ``spec`` exceeds its limits. With
    ``spec.processes > 1`` the factory is pickled to each load process.
    """
    spec.check(size)
    machine = machine_info()
    shares = run_shares(factory, spec)
    config = {
        "rate": spec.rate,
        "duration": spec.duration,
        "warmup": spec.warmup,
        "connections": spec.connections,
        "processes": spec.processes,
        "size": size,
    }
    return LatencyResult.from_shares(shares, spec, label=label, system=system, config=config, machine=machine)
