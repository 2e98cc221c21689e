"""Charts shared by the experiments (matplotlib, Agg backend, imported only when drawing)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["grouped_bars", "heatmap", "lines", "nines"]

NINES = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)


def _pyplot() -> Any:
    import matplotlib  # noqa: PLC0415 - charts are optional and slow to import

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def grouped_bars(
    groups: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    xlabel: str,
    title: str,
    log: bool = False,
) -> Any:
    """Horizontal bars: one group per entry of ``groups`` (labels on the y axis, where long names
    never collide), one bar per series in each group, a legend only when there are several
    series. A value of None or 0 draws no bar (nothing to show on a log axis)."""
    plt = _pyplot()
    count = max(1, len(series))
    fig, ax = plt.subplots(figsize=(8, 0.8 + 0.32 * len(groups) * count))
    height = 0.8 / count
    for k, (name, values) in enumerate(series.items()):
        bars = [(i, v) for i, v in enumerate(values) if v]
        ax.barh(
            [len(groups) - 1 - i + (count - 1 - k - (count - 1) / 2) * height for i, _ in bars],
            [v for _, v in bars],
            height,
            label=name,
        )
    ax.set_yticks(range(len(groups)), list(reversed(groups)))
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize="medium")
    if log:
        ax.set_xscale("log")
    if count > 1:
        ax.legend(fontsize="small")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def heatmap(
    rows: Sequence[str], columns: Sequence[str], values: Sequence[Sequence[float | None]], title: str
) -> Any:
    """A table of ratios drawn as colours (log scale around 1) with each value written in its cell.

    Green above 1, red below; None leaves the cell blank (not run).
    """
    plt = _pyplot()
    from matplotlib.colors import LogNorm  # noqa: PLC0415 - with the rest of matplotlib

    fig, ax = plt.subplots(figsize=(1.2 * len(columns) + 2.5, 0.45 * len(rows) + 1.8))
    shown = [[v if v else float("nan") for v in line] for line in values]
    finite = [v for line in values for v in line if v]
    spread = max([abs(v) for v in finite] + [1 / v for v in finite if v] + [10.0])
    image = ax.imshow(shown, cmap="RdYlGn", norm=LogNorm(1 / spread, spread), aspect="auto")
    ax.set_xticks(range(len(columns)), columns, rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    for i, line in enumerate(values):
        for j, v in enumerate(line):
            if v:
                ax.text(j, i, _ratio_label(v), ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax, shrink=0.8, label="ratio (log scale)")
    ax.set_title(title, fontsize="medium")
    fig.tight_layout()
    return fig


def _ratio_label(v: float) -> str:
    """0.75, 12, or 1/520 for a small ratio (0.00 would say nothing)."""
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 0.1:
        return f"{v:.2f}"
    return f"1/{1 / v:,.0f}"


def lines(
    x: Sequence[float],
    series: Mapping[str, Sequence[float | None]],
    xlabel: str,
    ylabel: str,
    title: str,
    logx: bool = False,
    logy: bool = False,
) -> Any:
    """One line per series over ``x``; ticks exactly at the values of ``x`` (thread counts, sizes),
    a legend only when there are several series. None, and 0 on a log axis, leave a gap rather
    than a line plunging off the chart."""
    plt = _pyplot()
    from matplotlib.ticker import NullLocator  # noqa: PLC0415 - with the rest of matplotlib

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, ys in series.items():
        points = [(a, b) for a, b in zip(x, ys, strict=True) if b is not None and (b > 0 or not logy)]
        ax.plot([a for a, _ in points], [b for _, b in points], marker="o", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xticks(list(x), [f"{v:,.0f}" if v == int(v) else f"{v:,g}" for v in x])  # 1,000,000, not 1e+06
    ax.xaxis.set_minor_locator(NullLocator())  # only the measured sizes, never 1.5 threads
    if len(series) > 1:
        ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def nines(series: Mapping[str, Mapping[float, float]], ylabel: str, title: str) -> Any:
    """Latency by percentile on the usual "nines" axis (50%, 90%, 99%, ... evenly spaced)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, by_percentile in series.items():
        ps = sorted(by_percentile)
        ax.plot(
            [-math.log10(1 - p / 100) for p in ps], [by_percentile[p] for p in ps], marker=".", label=name
        )
    shown = [p for p in NINES if any(p in s for s in series.values())]
    ax.set_xticks([-math.log10(1 - p / 100) for p in shown], [f"{p:g}%" for p in shown])
    ax.set_yscale("log")
    ax.set_xlabel("percentile")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize="medium")
    if len(series) > 1:
        ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
    return fig
