"""What machine a result came from: recorded with every benchmark result."""

from __future__ import annotations

import datetime as _dt
import os
import platform

from .. import BUILD

__all__ = ["machine_info"]


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, object]:
    """Python, topicmatch's build (compiled or pure: docs/compiled.md), CPU, cores, load average
    and time: enough to judge whether two results compare.

    >>> sorted(machine_info())[:3]
    ['build', 'cores', 'cpu']
    """
    try:
        load: list[float] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        load = []
    return {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "build": BUILD,
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "load_average": load,
        "time": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
