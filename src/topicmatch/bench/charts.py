"""Charts shared by the experiments (matplotlib, Agg backend, imported only when drawing)."""

from __future__ import annotations

import math
import textwrap
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
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    title: str,
    blanks: Mapping[tuple[int, int], str] | None = None,
) -> Any:
    """A table of ratios drawn as colours with each value written in its cell.

    The colour scale is the data's: it spans the smallest to the largest ratio, on a log scale
    with 1 the middle colour (yellow), green above and red below, each factor of ten the same
    change of colour either way (the whole map spanning at least 0.1 to 10), so cells from 0.1
    to 2 get a scale from 0.1 to 2, on which 2 is a pale green. A cell without a
    value (None) is blank and says why in small grey text, ``blanks[(row, column)]`` ("not run"
    when not given); a row without any value says it once across the row. O(cells).
    """
    plt = _pyplot()
    from matplotlib.colors import ListedColormap, Normalize  # noqa: PLC0415 - with matplotlib

    reasons = blanks or {}
    logs = [math.log10(v) for line in values for v in line if v]
    low, high = min([0.0, *logs]), max([0.0, *logs])
    if low == high:  # every ratio 1 (or none): a scale a little either side
        low, high = -0.1, 0.1
    # The part that the data spans of the full map, 1/spread .. spread with 1 in the middle.
    spread = max(-low, high, 1.0)
    full = plt.get_cmap("RdYlGn")
    part = ListedColormap([full(0.5 + (low + (high - low) * k / 255) / (2 * spread)) for k in range(256)])
    shown = [[math.log10(v) if v else float("nan") for v in line] for line in values]
    fig, ax = plt.subplots(figsize=(1.2 * len(columns) + 2.5, 0.5 * len(rows) + 1.8))
    image = ax.imshow(shown, cmap=part, norm=Normalize(low, high), aspect="auto")
    ax.set_xticks(range(len(columns)), columns, rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), rows)
    grey = {"ha": "center", "va": "center", "color": "0.35", "style": "italic"}
    for i, line in enumerate(values):
        why = [reasons.get((i, j), "not run") for j, v in enumerate(line) if not v]
        if len(why) == len(line) and len(set(why)) == 1:
            ax.text((len(line) - 1) / 2, i, why[0], fontsize=8, **grey)
            continue
        for j, v in enumerate(line):
            if v:
                ax.text(j, i, _ratio_label(v), ha="center", va="center", fontsize=8)
            else:
                ax.text(j, i, textwrap.fill(reasons.get((i, j), "not run"), 22), fontsize=5.5, **grey)
    ticks = _ratio_ticks(10**low, 10**high)
    bar = fig.colorbar(image, ax=ax, shrink=0.8, label="ratio (log scale, 1 yellow)")
    bar.set_ticks([math.log10(t) for t in ticks], labels=[_ratio_label(t) for t in ticks])
    bar.minorticks_off()
    ax.set_title(title, fontsize="medium")
    fig.tight_layout()
    return fig


def _ratio_ticks(low: float, high: float) -> list[float]:
    """Round ratios from ``low`` to ``high`` (1 always among them): 1, 2 and 5 times the powers
    of ten between, or only the powers of ten where those would be more than nine.

    >>> _ratio_ticks(0.1, 2.0), _ratio_ticks(1e-4, 1.3)
    ([0.1, 0.2, 0.5, 1.0, 2.0], [0.0001, 0.001, 0.01, 0.1, 1.0])
    """
    low, high = min(low, 1.0), max(high, 1.0)
    decades = range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
    fine = [m * 10.0**d for d in decades for m in (1, 2, 5)]
    ticks = [t for t in fine if low * 0.999 <= t <= high * 1.001]
    if len(ticks) > 9:
        ticks = [t for t in ticks if math.log10(t).is_integer()]
    return [float(f"{t:.6g}") for t in ticks]


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
