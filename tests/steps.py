"""Counting the steps a piece of work takes: the lines of topicmatch's own code it runs.

The pure build's Python lines are the unit; the compiled build runs none, so tests that count
steps are marked ``pure``. A step count means the same on a quiet and on a busy machine, where a
clock does not.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any


class OverBudget(Exception):
    pass


def steps_run(work: Callable[[], object], budget: int | None = None) -> int:
    """The lines of topicmatch's own code that ``work`` runs; raises :class:`OverBudget` at the
    first line over ``budget`` (no limit when it is None)."""
    count = 0

    def trace(frame: FrameType, event: str, _arg: object) -> Any:
        nonlocal count
        if "topicmatch" not in frame.f_code.co_filename:
            return None
        if event == "line":
            count += 1
            if budget is not None and count > budget:
                raise OverBudget(f"over {budget:,} steps")
        return trace

    sys.settrace(trace)
    try:
        work()
    finally:
        sys.settrace(None)
    return count
