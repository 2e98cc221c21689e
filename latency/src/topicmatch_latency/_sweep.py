"""Latency versus load: the report section and charts of a sweep (``--sweep``).

"Everything You Know About Latency Is Wrong" asks for this instead of one number: the same
configuration at rising rates, one HDR distribution per rate (never averaged percentiles), every
rate's percentile curve on one chart with the requirement over it, and the highest rate whose
distribution meets the requirement (:mod:`._sla` says what counts).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ._chart import load_chart, nines_chart, slug, timeline_chart
from ._result import LatencyResult, format_ms, size_name
from ._sla import Sla, highest_met

__all__ = ["write_sweep_report"]


def _ms(value: int | None) -> str:
    return "-" if value is None else format_ms(value)  # "-": too few samples for the percentile


def _rate_name(result: LatencyResult) -> str:
    if result.full_throttle:
        return f"max ({result.achieved_rate:,.0f}/s)"
    return f"{result.rate:,.0f}/s" + ("" if result.sustained else " (NOT sustained)")


def write_sweep_report(
    results: Sequence[LatencyResult], out: Path, sla: Sla | None
) -> tuple[list[str], list[Path]]:
    """Per system: the nines chart of every rate (the SLA drawn over it), latency against rate,
    and each rate's worst latency over time; returns the report's sweep section and the
    charts."""
    lines: list[str] = []
    charts: list[Path] = []
    by_system: dict[str, list[LatencyResult]] = {}
    for result in results:
        by_system.setdefault(result.system, []).append(result)
    for system, group in by_system.items():
        group = sorted(group, key=lambda r: (r.full_throttle, r.rate))
        first = group[0].config
        what = f"{size_name(int(first.get('size', 0)))}, {first.get('duration', 0):g} s per rate"
        if first.get("connections", 1) != 1:
            what += f", {first['connections']} connections"
        targets = sla.targets if sla else ()
        charts.append(
            nines_chart(
                [(_rate_name(r), r.histogram("corrected"), None) for r in group],
                out / f"sweep-{slug(system)}-nines.png",
                f"{system}: round-trip latency by percentile at each rate",
                subtitle=what
                + "; corrected (from intended start)"
                + (f"; black steps: SLA {sla.text()}" if sla else ""),
                sla=targets,
            )
        )
        charts.append(
            load_chart(
                group,
                out / f"sweep-{slug(system)}-load.png",
                f"{system}: latency against load",
                subtitle=what + "; hollow markers: rate not sustained",
                sla=targets,
            )
        )
        charts.append(
            timeline_chart(
                [(_rate_name(r), r.intervals, r.interval) for r in group],
                out / f"sweep-{slug(system)}-timeline.png",
                f"{system}: worst latency in each interval, at each rate",
                subtitle=f"{what}; per {group[0].interval:g} s of intended start (the .hlog files)",
            )
        )
        lines += [f"## {system}: latency against load", ""]
        head = "| rate | achieved | p50 | p99 | p99.9 | p99.99 | max |" + (" SLA |" if sla else "")
        lines += [head, "|---:|---:|---:|---:|---:|---:|---:|" + ("---|" if sla else "")]
        for r in group:
            values = r.percentiles()
            cells = [_ms(values[p]) for p in (50.0, 99.0, 99.9, 99.99)]
            row = f"| {_rate_name(r)} | {r.achieved_rate:,.0f}/s | " + " | ".join(cells)
            row += f" | {format_ms(r.max_ns())} |"
            if sla:
                row += f" {sla.judge(r).cell()} |"
            lines.append(row)
        lines.append("")
        if sla:
            best, below = highest_met(group, sla)
            if best is None:
                lines.append(f"**No rate met the SLA ({sla.text()}).**")
            else:
                lines.append(f"**Highest rate meeting the SLA ({sla.text()}): {best.rate:,.0f}/s.**")
                if below:
                    lines.append(f"Lower rates that missed it: {', '.join(below)} (noise on this machine?).")
            lines.append("")
        saturated = [r for r in group if r.full_throttle]
        if saturated:
            lines.append(
                f"Full throttle reached {saturated[0].achieved_rate:,.0f}/s: the most this generator and "
                f"{system} did together here; latencies there are service times (no schedule)."
            )
            lines.append("")
    return lines, charts
