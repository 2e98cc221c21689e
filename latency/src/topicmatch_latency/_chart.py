"""The harness's charts, first the "nines" chart: latency by percentile, runs overlaid (matplotlib).

The x axis is ``1 / (1 - percentile)`` on a log scale, labelled 0 %, 90 %, 99 %, ... 99.9999 %:
each decade is one more nine, so the tail gets as much room as the body (HdrHistogram's
plotter draws the same axis). The y axis is logarithmic, so a 0.1 ms body and a 100 ms tail are
both readable and runs of very different sizes can share one chart. Each curve stops where its
samples run out: a curve that ends at 99.9 % had about 1,000 samples, and the chart shows no
percentile it cannot support. Dashed curves are the uncorrected view of the same run.

An SLA (``--sla 99:10ms,99.99:100ms``) is drawn as black steps: up to each target's percentile
the latency may reach its limit, and a curve that crosses above the steps misses the SLA.

Two more latency charts serve the load sweep (:mod:`._sweep`) and the interval logs
(:mod:`._hlog`): latency against the requested rate (one line per percentile), and each
interval's worst latency over the run's time, so a stall shows when it happened. Two throughput
charts serve the broker-throughput run (:mod:`._broker_throughput`: sender and receiver per
system) and the commit-log report (:mod:`._logreport`: publisher and subscriber per size).

PNGs are re-encoded with a 64-colour palette (Pillow, a matplotlib dependency): about 5x
smaller, so charts can live in the repository.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from ._hgrm import MS
from ._histograms import decode, percentile_distribution, value_at
from ._result import LatencyResult, ThroughputResult, samples_needed, size_name

__all__ = [
    "NINES_LABELS",
    "load_chart",
    "log_throughput_chart",
    "nines_chart",
    "slug",
    "throughput_chart",
    "timeline_chart",
]

#: An SLA's targets: (percentile 0-100, limit in ns).
Targets = Sequence[tuple[float, int]]

NINES_LABELS = ("0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%")


def _curve(histogram: HdrHistogram) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for row in percentile_distribution(histogram):
        if row.percentile < 1.0:
            xs.append(1.0 / (1.0 - row.percentile))
            ys.append(max(row.value, 1) / MS)
    return xs, ys


def slug(text: str) -> str:
    """A file-name stem for a run or chart label."""
    return re.sub(r"[^A-Za-z0-9.@x-]+", "-", text).strip("-")


def _pyplot() -> Any:
    import matplotlib  # noqa: PLC0415 - slow to import; only when drawing

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def _save(fig: Any, path: Path, rect: tuple[float, float, float, float] | None = None) -> Path:
    """Save ``fig`` as a small PNG (64-colour palette) and close it; ``rect``: the part of the
    figure the axes are laid out in (the rest holds a legend)."""
    from PIL import Image  # noqa: PLC0415

    fig.tight_layout(rect=rect)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    _pyplot().close(fig)
    buffer.seek(0)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=64).save(path, format="PNG", optimize=True)
    return path


def _ms_axis(ax: Any) -> None:
    """A logarithmic latency axis labelled 0.1, 1, 10 (not 10^-1, 10^0, 10^1)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: PLC0415

    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylabel("latency (ms, log scale)")


def _sla_steps(ax: Any, sla: Targets) -> None:
    """The SLA as steps: the limit of each target holds up to its percentile."""
    xs, ys = [1.0], [sla[0][1] / MS]
    for number, (percentile, limit) in enumerate(sla):
        x = 1.0 / (1.0 - percentile / 100.0)
        xs.append(x)
        ys.append(limit / MS)
        if number + 1 < len(sla):  # up to the next target's limit at the same percentile
            xs.append(x)
            ys.append(sla[number + 1][1] / MS)
    ax.plot(xs, ys, color="black", linewidth=2.2, label="SLA", zorder=5)


def nines_chart(
    series: Sequence[tuple[str, HdrHistogram, HdrHistogram | None]],
    path: Path,
    title: str,
    *,
    subtitle: str = "",
    sla: Targets = (),
) -> Path:
    """Draw one curve per ``(label, corrected, uncorrected or None)`` and save a small PNG."""
    from matplotlib.lines import Line2D  # noqa: PLC0415

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=90)
    palette = plt.get_cmap("tab10")
    for number, (label, corrected, uncorrected) in enumerate(series):
        colour = palette(number % 10)
        xs, ys = _curve(corrected)
        ax.plot(xs, ys, color=colour, linewidth=1.6, label=label)
        if uncorrected is not None and uncorrected.get_total_count():
            xs, ys = _curve(uncorrected)
            ax.plot(xs, ys, color=colour, linewidth=1.0, linestyle="--", alpha=0.8)
    if sla:
        _sla_steps(ax, sla)
    ax.set_xscale("log")
    _ms_axis(ax)
    ax.set_xlim(1, 10**6)
    ax.set_xticks([10**i for i in range(len(NINES_LABELS))], NINES_LABELS)
    ax.set_xlabel("percentile")
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", axis="y", alpha=0.15)
    ax.set_title(title + (f"\n{subtitle}" if subtitle else ""), fontsize=10)
    handles, labels = ax.get_legend_handles_labels()
    if any(u is not None for _, _, u in series):
        handles.append(Line2D([], [], color="grey", linestyle="--"))
        labels.append("(dashed: uncorrected, from actual send)")
    ax.legend(handles, labels, fontsize=8, loc="lower right")
    return _save(fig, path)


#: The percentiles drawn against the rate (the maximum is drawn too).
LOAD_PERCENTILES = (50.0, 99.0, 99.9, 99.99)


def load_chart(
    results: Sequence[LatencyResult], path: Path, title: str, *, subtitle: str = "", sla: Targets = ()
) -> Path:
    """Latency (log) against the requested rate: one line per percentile and the maximum, a
    hollow marker where the rate was not sustained, the full-throttle run at its achieved rate,
    and each SLA limit as a horizontal line."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9.5, 4.5), dpi=90)
    palette = plt.get_cmap("tab10")
    scheduled = sorted((r for r in results if not r.full_throttle), key=lambda r: r.rate)
    rows: list[tuple[str, float | None]] = [(f"p{p:g}", p) for p in LOAD_PERCENTILES] + [("maximum", None)]
    for number, (label, percentile) in enumerate(rows):
        colour = palette(number % 10)
        points = []
        for result in scheduled:
            histogram = result.histogram("corrected")
            count = histogram.get_total_count()
            if percentile is None:
                value = histogram.get_max_value()
            elif count >= samples_needed(percentile):
                value = value_at(histogram, percentile)
            else:
                continue  # too few samples for this percentile at this rate
            points.append((result.rate, max(value, 1) / MS, result.sustained))
        if not points:
            continue
        ax.plot(
            [x for x, _, _ in points], [y for _, y, _ in points], color=colour, linewidth=1.4, label=label
        )
        for x, y, sustained in points:
            ax.plot([x], [y], marker="o", color=colour, markerfacecolor=colour if sustained else "white")
    for result in results:
        if result.full_throttle:
            histogram = result.histogram("corrected")
            ax.plot(
                [result.achieved_rate],
                [max(value_at(histogram, 50.0), 1) / MS],
                marker="x",
                color="black",
                markersize=9,
                linestyle="none",
                label=f"full throttle (p50), {result.achieved_rate:,.0f}/s",
            )
    for percentile, limit in sla:
        ax.axhline(limit / MS, color="black", linestyle=":", linewidth=1.2)
        ax.annotate(
            f"SLA p{percentile:g} <= {limit / MS:g} ms",
            (0.01, limit / MS),
            xycoords=("axes fraction", "data"),
            fontsize=8,
            ha="left",
            va="bottom",
        )
    # Rates of a sweep usually double: a logarithmic axis spaces them evenly, ticked at the
    # rates measured (the full-throttle rate is in the legend).
    from matplotlib.ticker import NullLocator  # noqa: PLC0415

    ax.set_xscale("log")
    ticks = sorted({r.rate for r in scheduled})
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks(ticks, [f"{t:,.0f}" for t in ticks], fontsize=8)
    _ms_axis(ax)
    ax.set_xlabel("requested rate (requests/s, log scale)")
    ax.grid(True, which="major", alpha=0.4)
    ax.set_title(title + (f"\n{subtitle}" if subtitle else ""), fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path)


def timeline_chart(
    series: Sequence[tuple[str, Sequence[str], float]], path: Path, title: str, *, subtitle: str = ""
) -> Path:
    """Each interval's worst corrected latency over the run: one line per ``(label, encoded
    interval histograms, interval length in s)``; empty intervals are gaps."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9.5, 4.5), dpi=90)
    palette = plt.get_cmap("tab10")
    for number, (label, intervals, length) in enumerate(series):
        xs, ys = [], []
        for index, encoded in enumerate(intervals):
            histogram = decode(encoded)
            if histogram.get_total_count():
                xs.append((index + 0.5) * length)
                ys.append(max(histogram.get_max_value(), 1) / MS)
            else:
                xs.append((index + 0.5) * length)
                ys.append(float("nan"))
        ax.plot(xs, ys, color=palette(number % 10), linewidth=1.4, marker=".", label=label)
    _ms_axis(ax)
    ax.set_xlabel("time since the end of the warm-up (s, by intended start)")
    ax.set_ylabel("worst latency in the interval (ms, log scale)")
    ax.grid(True, which="major", alpha=0.4)
    ax.set_title(title + (f"\n{subtitle}" if subtitle else ""), fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _save(fig, path)


def throughput_chart(rows: Sequence[tuple[str, float, float, str, float]], path: Path, title: str) -> Path:
    """Messages a second at the sender and at the receiver, horizontal bars per
    ``(system, sender rate, receiver rate, note, publisher alone)``, each labelled with its value
    and the receiver's with the note (what was lost); above them, in grey, the publisher's rate
    against a no-op sink (when not 0): how far the client alone could go."""
    from matplotlib.ticker import FuncFormatter  # noqa: PLC0415

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 1.4 + 0.8 * len(rows)), dpi=90)
    palette = plt.get_cmap("tab10")
    ys = list(range(len(rows)))
    series = (
        (-0.28, 4, "publisher alone (no-op sink)", "0.7"),
        (0.0, 1, "sender", palette(0)),
        (0.28, 2, "receiver", palette(1)),
    )
    for offset, index, label, color in series:
        shown = [(y, float(row[index]), row) for y, row in zip(ys, rows, strict=True) if row[index]]
        if not shown:
            continue
        bars = ax.barh(
            [y + offset for y, _, _ in shown], [v for _, v, _ in shown], height=0.26, color=color, label=label
        )
        texts = [f"{v:,.0f}" + (f"  ({row[3]})" if index == 2 and row[3] else "") for _, v, row in shown]
        ax.bar_label(bars, texts, fontsize=8, padding=3)
    ax.set_yticks(ys, [row[0] for row in rows])
    ax.invert_yaxis()
    ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _position: f"{value:,.0f}"))
    ax.set_xlabel("messages per second")
    ax.set_xlim(0, max((max(r[1], r[2], r[4]) for r in rows), default=1) * 1.3)
    ax.grid(True, axis="x", alpha=0.4)
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    return _save(fig, path)


def log_throughput_chart(results: Sequence[ThroughputResult], path: Path) -> Path:
    """Commit-log throughput: messages a second per size, one bar per system, at the publisher
    (left) and at the subscriber (right), on a log scale; the legend below the axes."""
    plt = _pyplot()
    systems = list(dict.fromkeys(r.system for r in results))
    sizes = list(dict.fromkeys(r.size for r in results))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), dpi=90, sharey=True)
    width = 0.8 / max(1, len(systems))
    for ax, side in zip(axes, ("publisher", "subscriber"), strict=True):
        for number, system in enumerate(systems):
            values = []
            for size in sizes:
                match = [r for r in results if r.system == system and r.size == size]
                values.append(getattr(match[0], f"{side}_rate") if match else 0.0)
            ax.bar([i + number * width for i in range(len(sizes))], values, width, label=system)
        ax.set_xticks(
            [i + width * (len(systems) - 1) / 2 for i in range(len(sizes))], [size_name(s) for s in sizes]
        )
        ax.set_yscale("log")
        ax.set_title(f"{side} side", fontsize=10)
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("messages/s (log scale)")
    # Below the axes: inside, the legend hid the bars of the larger sizes.
    fig.legend(
        *axes[0].get_legend_handles_labels(), fontsize=8, loc="lower center", ncol=min(4, len(systems))
    )
    unacknowledged = [s for s in systems if s.endswith("-noack")]
    acks = "every message acknowledged" + (f"; {', '.join(unacknowledged)}: none" if unacknowledged else "")
    fig.suptitle(f"Commit-log throughput (publisher: {acks})", fontsize=10)
    return _save(fig, path, rect=(0, 0.08 * ((len(systems) + 3) // 4), 1, 1))
