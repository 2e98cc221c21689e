"""Load processes: several processes run their shares of one schedule, histograms merged after.

Why processes: one Python process drives at most about one core (the GIL), and the study's
20,000 requests/s over 25 connections needs more than that. :func:`run_shares` starts
``spec.processes`` processes (``spawn``: no inherited threads or event loops), each builds its
connections with the pickled factory and reports ready; the parent then picks a start time
``lead_ns`` ahead, common to all (``CLOCK_MONOTONIC`` is system-wide), and each process sends back
its :class:`._load.ShareResult` with the three histograms in encoded form. With one process,
everything runs in the caller's process.
"""

from __future__ import annotations

import multiprocessing
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

from ._load import LoadSpec, ShareResult, run_share
from ._requester import RequesterFactory

__all__ = ["run_shares"]


def _worker(factory: RequesterFactory, spec: LoadSpec, index: int, pipe: Connection) -> None:
    """Entry point of a load process: set up, report ready, wait for the start time, run."""

    def ready() -> int:
        pipe.send(("ready", index))
        if not pipe.poll(spec.setup_timeout * 2):
            raise TimeoutError("no start time from the parent process")
        start_ns: int = pipe.recv()
        return start_ns

    try:
        pipe.send(("result", run_share(factory, spec, index, ready)))
    except BaseException as exc:
        pipe.send(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"))
    finally:
        pipe.close()


def run_shares(factory: RequesterFactory, spec: LoadSpec, lead_ns: int = 100_000_000) -> list[ShareResult]:
    """Run ``spec`` with ``factory``'s requesters; one :class:`ShareResult` per process.

    With one process everything runs here; otherwise ``spawn``-ed processes run their shares
    and the schedule starts ``lead_ns`` after the last of them is ready.
    """
    if spec.processes == 1:
        return [run_share(factory, spec, 0, lambda: time.monotonic_ns() + lead_ns)]
    context = multiprocessing.get_context("spawn")
    pipes: list[Connection] = []
    processes: list[Any] = []
    try:
        for index in range(spec.processes):
            parent, child = context.Pipe()
            process = context.Process(target=_worker, args=(factory, spec, index, child), daemon=True)
            process.start()
            child.close()
            pipes.append(parent)
            processes.append(process)
        for pipe in pipes:
            message = _receive(pipe, spec.setup_timeout + 30)
            if message[0] != "ready":
                raise RuntimeError(f"a load process failed before starting: {message[1]}")
        start_ns = time.monotonic_ns() + lead_ns
        for pipe in pipes:
            pipe.send(start_ns)
        results = []
        bound = spec.warmup + spec.duration + spec.grace + 60
        for pipe in pipes:
            kind, payload = _receive(pipe, bound)
            if kind != "result":
                raise RuntimeError(f"a load process failed: {payload}")
            results.append(payload)
        return results
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join(timeout=5)


def _receive(pipe: Connection, timeout: float) -> tuple[str, Any]:
    if not pipe.poll(timeout):
        raise TimeoutError(f"a load process sent nothing within {timeout:.0f} s")
    message: tuple[str, Any] = pipe.recv()
    return message
