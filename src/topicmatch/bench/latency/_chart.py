"""The "nines" chart: latency by percentile, several runs overlaid (matplotlib, Agg backend).

The x axis is ``1 / (1 - percentile)`` on a log scale, labelled 0 %, 90 %, 99 %, ... 99.9999 %:
each decade is one more nine, so the tail gets as much room as the body (HdrHistogram's
plotter draws the same axis). The y axis is logarithmic, so a 0.1 ms body and a 100 ms tail are
both readable and runs of very different sizes can share one chart. Each curve stops where its
samples run out: a curve that ends at 99.9 % had about 1,000 samples, and the chart shows no
percentile it cannot support. Dashed curves are the uncorrected view of the same run.

PNGs are re-encoded with a 64-colour palette (Pillow, a matplotlib dependency): about 5x
smaller, so charts can live in the repository.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from hdrh.histogram import HdrHistogram

from ._hgrm import MS
from ._histograms import percentile_distribution

__all__ = ["NINES_LABELS", "nines_chart"]

NINES_LABELS = ("0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%")


def _curve(histogram: HdrHistogram) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    for row in percentile_distribution(histogram):
        if row.percentile < 1.0:
            xs.append(1.0 / (1.0 - row.percentile))
            ys.append(max(row.value, 1) / MS)
    return xs, ys


def nines_chart(
    series: Sequence[tuple[str, HdrHistogram, HdrHistogram | None]],
    path: Path,
    title: str,
    *,
    subtitle: str = "",
) -> Path:
    """Draw one curve per ``(label, corrected, uncorrected or None)`` and save a small PNG."""
    import matplotlib  # noqa: PLC0415 - slow to import; only when drawing

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415
    from matplotlib.lines import Line2D  # noqa: PLC0415
    from PIL import Image  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=90)
    palette = plt.get_cmap("tab10")
    for number, (label, corrected, uncorrected) in enumerate(series):
        colour = palette(number % 10)
        xs, ys = _curve(corrected)
        ax.plot(xs, ys, color=colour, linewidth=1.6, label=label)
        if uncorrected is not None and uncorrected.get_total_count():
            xs, ys = _curve(uncorrected)
            ax.plot(xs, ys, color=colour, linewidth=1.0, linestyle="--", alpha=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(1, 10**6)
    ax.set_xticks([10**i for i in range(len(NINES_LABELS))], NINES_LABELS)
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (ms, log scale)")
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", axis="y", alpha=0.15)
    ax.set_title(title + (f"\n{subtitle}" if subtitle else ""), fontsize=10)
    handles, labels = ax.get_legend_handles_labels()
    if any(u is not None for _, _, u in series):
        handles.append(Line2D([], [], color="grey", linestyle="--"))
        labels.append("(dashed: uncorrected, from actual send)")
    ax.legend(handles, labels, fontsize=8, loc="lower right")
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    buffer.seek(0)
    with Image.open(buffer) as image:
        image.convert("RGB").quantize(colors=64).save(path, format="PNG", optimize=True)
    return path
