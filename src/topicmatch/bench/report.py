"""Experiment output: ``report.md``, PNG charts and ``results.json`` in one directory.

Every report starts with the machine it ran on and the parameters, so a number is never read
without its context; ``results.json`` holds the raw figures for anyone who wants to re-plot.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..support.commandline import counted
from ..support.progress import Progress
from .machine import machine_info

__all__ = ["Progress", "Report", "fmt_int", "fmt_ns", "mark_quick"]


def fmt_int(x: float) -> str:
    return f"{x:,.0f}"


def fmt_ns(ns: float) -> str:
    """A duration in ns, in the unit that keeps 3 significant digits readable."""
    if ns < 10_000:
        return f"{ns:,.0f} ns"
    if ns < 10_000_000:
        return f"{ns / 1e3:,.1f} µs"
    return f"{ns / 1e6:,.1f} ms"


def _cores(cores: object) -> str:
    """``os.cpu_count()`` as the report says it: "2 cores", "1 core" (it may not know)."""
    return counted(cores, "core") if isinstance(cores, int) else "cores unknown"


class Report:
    def __init__(
        self, experiment: str, out: Path, title: str, params: dict[str, Any], quick: bool = False
    ) -> None:
        self.experiment = experiment
        self.quick = quick
        self.out = out
        self.title = title
        self.params = params
        self.parts: list[str] = []
        self.results: dict[str, Any] = {}
        self.charts: list[str] = []
        out.mkdir(parents=True, exist_ok=True)
        self.machine = machine_info()

    def text(self, markdown: str) -> None:
        self.parts.append(markdown.strip() + "\n")

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
        lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
        lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
        self.parts.append("\n".join(lines) + "\n")

    def chart(self, name: str, figure: Any, caption: str) -> None:
        """Save a matplotlib figure as ``name.png`` and show it in the report."""
        path = self.out / f"{name}.png"
        figure.savefig(path, dpi=100, bbox_inches="tight")
        import matplotlib.pyplot as plt  # noqa: PLC0415 - matplotlib is loaded only by chart makers

        plt.close(figure)
        self.charts.append(path.name)
        self.parts.append(f"![{caption}]({path.name})\n\n*{caption}*\n")

    def result(self, key: str, value: Any) -> None:
        self.results[key] = value

    def write(self) -> Path:
        machine = self.machine
        head = [
            f"# {self.title}",
            "",
            f"Experiment `{self.experiment}`; {machine['python']}, topicmatch {machine['build']}, "
            f"{machine['cpu']}, "
            f"{_cores(machine['cores'])}, load average {machine['load_average']} at the start, "
            f"{machine['time']}.",
            "Parameters: " + ", ".join(f"{k}={v}" for k, v in self.params.items()) + ".",
            "",
        ]
        if self.quick:
            head += [
                "**A quick run (`--quick`): small sizes and short rounds, a smoke test. Its figures are "
                "not the documented ones (docs/performance.md); run without `--quick` for those.**",
                "",
            ]
        report = self.out / "report.md"
        report.write_text("\n".join(head) + "\n".join(self.parts), encoding="utf-8")
        payload = {
            "experiment": self.experiment,
            "machine": machine,
            "machine_at_end": machine_info(),
            "params": self.params,
            "results": self.results,
            "charts": self.charts,
        }
        (self.out / "results.json").write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
        return report


def mark_quick(report: Path, docs: str = "docs/performance.md") -> None:
    """Say at the top of ``report`` (a report.md under its title) that it comes from a ``--quick``
    run, and mark its ``results.json`` beside it (``"quick": true``) when there is one.

    Every experiment's command calls this after a quick run (the study's, the pipeline's and the
    latency harness's), so that no smoke test's figure is read as a documented one.
    """
    title, _, rest = report.read_text(encoding="utf-8").partition("\n")
    note = (
        f"> **A quick run** (`--quick`): a smoke test with small sizes and few samples. Its figures "
        f"show that the experiment works, not what it measures: the full runs' figures, with their "
        f"commands, are in {docs}."
    )
    report.write_text(f"{title}\n\n{note}\n{rest}", encoding="utf-8")
    results = report.parent / "results.json"
    if results.exists():
        data = json.loads(results.read_text(encoding="utf-8"))
        if isinstance(data, dict):
            data["quick"] = True
            results.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
