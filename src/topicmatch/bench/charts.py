"""Charts shared by the experiments (matplotlib, Agg backend, imported only when drawing)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["grouped_bars", "heatmap", "lines", "nines", "ratio_dots"]

NINES = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999, 99.9999)
#: The red and blue of matplotlib's default colours (its "tab:red", "tab:blue"), written out.
RED, BLUE = "#d62728", "#1f77b4"


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


#: Where :func:`ratio_dots` may put a tick, the first first: the powers of ten, then 2 and 5
#: times them, then finer steps, each kept where it is far enough from those kept before.
_RATIO_TICKS = (1.0, 0.1, 10.0, 100.0, 0.5, 2.0, 0.2, 5.0, 20.0, 50.0, 0.7, 1.5, 0.3, 3.0, 0.9, 1.25, 0.8)


def _spaced_ticks(low: float, high: float, count: int = 9) -> list[float]:
    """Ticks between ``low`` and ``high`` on a log axis: those of :data:`_RATIO_TICKS` in turn
    that lie at least a ``count``-th of the axis from every tick kept before.

    >>> _spaced_ticks(0.5, 3.0), _spaced_ticks(0.7, 1.4)
    ([0.5, 0.7, 1.0, 1.5, 2.0, 3.0], [0.7, 0.8, 0.9, 1.0, 1.25])
    """
    gap = (math.log10(high) - math.log10(low)) / count
    ticks: list[float] = []
    for t in _RATIO_TICKS:
        if low <= t <= high and all(abs(math.log10(t / k)) >= gap for k in ticks):
            ticks.append(t)
    return sorted(ticks)


def ratio_dots(
    labels: Sequence[str],
    panels: Mapping[str, Sequence[tuple[float, float, float, float | None] | None]],
    title: str,
    xlabel: str,
    marks: Sequence[float] = (),
) -> Any:
    """Ratios with their noise: one panel per entry of ``panels`` (a phase), one line per label
    (the first on top), each value ``(median, low, high, band)`` drawn as a dot at the median, a
    line from ``low`` to ``high`` (its rounds), over a grey band from ``1 - band`` to ``1 +
    band`` (how far an A/A control strayed from 1: a ratio inside it is noise). None leaves a
    line empty. One log axis for all panels, a line at 1 and a dashed one at each of ``marks``;
    a dot under the lowest mark and outside its band is red (a decided gap), and a legend says
    what each thing is. O(labels x panels)."""
    plt = _pyplot()
    from matplotlib.lines import Line2D  # noqa: PLC0415 - with the rest of matplotlib
    from matplotlib.patches import Patch  # noqa: PLC0415
    from matplotlib.ticker import FixedLocator, NullLocator  # noqa: PLC0415

    values = [v for column in panels.values() for v in column if v is not None]
    floor = min([*marks, *(v[1] for v in values), 1.0]) * 0.9
    top = max([*(v[2] for v in values), *(1 + (v[3] or 0.0) for v in values), 1.1]) * 1.1
    flag = min(marks) if marks else None
    height = 2.0 + 0.3 * len(labels)  # inches: the rows, and the title, axis and legend
    fig, axes = plt.subplots(
        1,
        len(panels),
        figsize=(2.5 + 3.2 * len(panels), height),
        sharey=True,
        squeeze=False,
    )
    y = [len(labels) - 1 - i for i in range(len(labels))]
    for ax, (name, column) in zip(axes[0], panels.items(), strict=True):
        for at, value in zip(y, column, strict=True):
            if value is None:
                continue
            mid, low, high, band = value
            if band is not None:
                ax.barh(at, 2 * band, left=max(1 - band, floor), height=0.7, color="0.85", zorder=1)
            decided = flag is not None and mid < flag and (band is None or 1 - mid > band)
            colour = RED if decided else BLUE
            ax.plot([low, high], [at, at], color=colour, linewidth=1.2, zorder=2)
            ax.plot([mid], [at], "o", color=colour, markersize=4.5, zorder=3)
        ax.axvline(1.0, color="0.2", linewidth=0.8, zorder=0)
        for mark in marks:
            ax.axvline(mark, color="0.4", linewidth=0.8, linestyle="--", zorder=0)
        ax.set_xscale("log")
        ax.set_xlim(floor, top)
        ticks = _spaced_ticks(floor, top)
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.set_xticklabels([f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_title(name, fontsize="medium")
        ax.set_xlabel(xlabel, fontsize="small")
        ax.grid(axis="x", alpha=0.3)
        ax.set_ylim(-0.7, len(labels) - 0.3)
    axes[0][0].set_yticks(y, labels, fontsize="small")
    legend = [
        Line2D([], [], marker="o", color=BLUE, label="median of the rounds, line: their range"),
        Patch(color="0.85", label="A/A band: 1 ± |default ÷ default again - 1| (noise)"),
    ]
    if flag is not None:
        legend += [
            Line2D([], [], color="0.4", linestyle="--", label=f"{flag:g}: a shape under it is listed"),
            Line2D([], [], marker="o", color=RED, label=f"under {flag:g} by more than the A/A band"),
        ]
    fig.legend(handles=legend, loc="lower center", ncol=2, fontsize="small", bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout(rect=(0, 0.5 / height, 1, 1))  # the legend's two lines below the panels
    return fig


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
