"""Load from many hosts: the harness's shares as the tasks of one Spark stage.

The study drove its brokers from a fleet of load hosts (its "Flotilla"), and the latency essay's
rule is that load and broker must not share a machine. Rather than a home-made fleet, the load
runs on an engine users already have: :func:`run_shares_on_spark` runs ``spec.processes``
shares of the schedule as the tasks of one Spark *barrier* stage (all tasks start together, or
none does). Each task builds its connections with the pickled factory, then the tasks agree on
a start time with ``BarrierTaskContext.allGather`` (each sends its wall clock; the start is the
latest plus ``lead_ns``), and each runs its share: connections ``index, index + shares, ...``
and their requests of the one schedule, exactly as a load process does
(:func:`._load.run_share`). Each task returns its :class:`._load.ShareResult` with the
histograms encoded, and the driver merges the histograms (never averaged percentiles) in
:meth:`._result.LatencyResult.from_shares`.

Clocks: a share measures every latency on its own host (intended start, send and reply on one
monotonic clock), so the hosts' clocks need not agree for the latencies; wall clocks only align
the shares' schedules (an offset between two hosts shifts one share's schedule by it).

Bounds: a share that cannot set up tells the others through the same gather, and every task
then fails at once instead of waiting at the barrier; the whole stage is bounded by the
schedule's own time bound. Needs the RDD API (a SparkContext: not Spark Connect), as many free
task slots as shares (Spark refuses a barrier stage otherwise), and topicmatch with the
requester's client library importable by the executors' Python.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Iterator
from typing import Any

from ._load import LoadSpec, ShareResult, run_share
from ._requester import RequesterFactory

__all__ = ["run_shares_on_spark"]

_FAILED = "failed:"


def _share(
    factory: RequesterFactory, spec: LoadSpec, lead_ns: int
) -> Callable[[Iterator[Any]], Iterator[bytes]]:
    """The function of each barrier task: one share, its result pickled."""

    def run(_partition: Iterator[Any]) -> Iterator[bytes]:
        from pyspark import BarrierTaskContext  # noqa: PLC0415 - on the executor

        context = BarrierTaskContext.get()
        gathered = False

        def ready() -> int:
            nonlocal gathered
            gathered = True
            stamps = context.allGather(str(time.time_ns()))
            failed = [stamp for stamp in stamps if stamp.startswith(_FAILED)]
            if failed:
                raise RuntimeError(f"another load share could not start: {failed[0][len(_FAILED) :]}")
            start_epoch_ns = max(int(stamp) for stamp in stamps) + lead_ns
            return time.monotonic_ns() + (start_epoch_ns - time.time_ns())

        try:
            result = run_share(factory, spec, context.partitionId(), ready)
        except Exception as error:
            if not gathered:  # the others wait at the gather: tell them, then fail
                context.allGather(f"{_FAILED}{type(error).__name__}: {error}")
            raise
        yield pickle.dumps(result)

    return run


def run_shares_on_spark(
    spark: Any, factory: RequesterFactory, spec: LoadSpec, lead_ns: int = 1_000_000_000
) -> list[ShareResult]:
    """Run ``spec`` with ``factory``'s requesters in ``spec.processes`` Spark tasks (module
    docstring); one :class:`ShareResult` per task, in task order."""
    shares = spec.processes
    stage = spark.sparkContext.parallelize(range(shares), shares).barrier()
    results: list[ShareResult] = [
        pickle.loads(data) for data in stage.mapPartitions(_share(factory, spec, lead_ns)).collect()
    ]
    return results
