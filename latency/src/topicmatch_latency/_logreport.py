"""The commit-log report: latency and throughput tables, durability beside every number, charts.

Written by :func:`write_report` from the results of :func:`._commitlog.run_plan`: per run a JSON
file and a corrected ``.hgrm``; per system a nines chart with the sizes overlaid; one throughput
chart (publisher and subscriber side, log scale); and ``report.md``.
"""

from __future__ import annotations

import json
from pathlib import Path

from ._chart import log_throughput_chart, nines_chart
from ._limits import MiB
from ._logplan import Plan
from ._logs import LOGS
from ._result import LatencyResult, ThroughputResult, format_ms, samples_needed, size_name

__all__ = ["write_report"]


def write_report(
    plan: Plan, latencies: list[LatencyResult], throughputs: list[ThroughputResult], out: Path
) -> Path:
    """Write every output of a commit-log run under ``out``; return the path of ``report.md``."""
    for result in latencies:
        stem = result.label.replace(" ", "-")
        (out / f"{stem}.json").write_text(result.to_json())
        result.write_hgrm(out / f"{stem}.corrected.hgrm")
    (out / "throughput.json").write_text(
        json.dumps(
            [
                {**vars(t), "publisher_rate": t.publisher_rate, "subscriber_rate": t.subscriber_rate}
                for t in throughputs
            ],
            indent=1,
        )
    )
    lines = ["# Commit logs: latency and throughput", "", f"Command: `{plan.command}`", ""]
    if latencies:
        lines += _latency_table(latencies, plan)
        for system in plan.systems:
            group = [r for r in latencies if r.system == system]
            if group:
                path = out / f"latency-{system}.png"
                nines_chart(
                    [(r.label.split(" ", 1)[1], r.histogram(), None) for r in group],
                    path,
                    f"{system}: end-to-end latency at {plan.rate} msg/s",
                    subtitle=f"{plan.duration:g} s per size, from the intended publish time",
                )
                lines.append(f"![{system} latency]({path.name})")
        lines.append("")
    if throughputs:
        lines += _throughput_table(throughputs)
        log_throughput_chart(throughputs, out / "throughput.png")
        lines += ["![throughput](throughput.png)", ""]
    lines += ["Durability of each system:", ""]
    lines += [f"* **{s}** ({LOGS[s].description}): {LOGS[s].durability}" for s in plan.systems]
    machine = (
        (latencies[0].machine if latencies else throughputs[0].machine) if (latencies or throughputs) else {}
    )
    lines += ["", "Machine: " + ", ".join(f"{k}={v}" for k, v in machine.items()), ""]
    report = out / "report.md"
    report.write_text("\n".join(lines))
    return report


def _latency_table(results: list[LatencyResult], plan: Plan) -> list[str]:
    nines = (99.0, 99.9, 99.99, 99.999, 99.9999)
    lines = [
        f"End-to-end latency in ms, publisher to subscriber, at {plan.rate} msg/s for {plan.duration:g} s "
        "(corrected: from the intended publish time; `-`: too few samples for that percentile):",
        "",
        "| system | size | " + " | ".join(f"p{p:g}" for p in nines) + " | max | count | lost | notes |",
        "|---|---|" + "---:|" * (len(nines) + 3) + "---|",
    ]
    for result in results:
        values = result.histogram().get_percentile_to_value_dict(list(nines)) if result.count else {}
        cells = [format_ms(values[p]) if result.count >= samples_needed(p) else "-" for p in nines]
        notes = "; ".join(n for n in result.notes() if "samples" not in n)
        lines.append(
            f"| {result.system} | {result.label.split(' ', 1)[1]} | "
            + " | ".join(cells)
            + f" | {format_ms(result.max_ns())} | {result.completed:,} | {result.failed:,} | {notes} |"
        )
    return [*lines, ""]


def _throughput_table(results: list[ThroughputResult]) -> list[str]:
    lines = [
        "| system | size | messages | publisher msg/s | publisher MB/s | subscriber msg/s | subscriber MB/s "
        "| received |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r.system} | {size_name(r.size)} | {r.messages:,} | {r.publisher_rate:,.0f} | "
            f"{r.publisher_rate * r.size / MiB:,.1f} | {r.subscriber_rate:,.0f} | "
            f"{r.subscriber_rate * r.size / MiB:,.1f} | "
            f"{r.received:,} |"
        )
    return [*lines, ""]
