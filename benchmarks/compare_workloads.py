"""Two runs of the workload matrix side by side: the default's rates, and its ratio to the peer.

    .venv/bin/python benchmarks/compare_workloads.py A/results.json B/results.json

For each row and phase (first 10,000 lookups, first 100,000, steady): the default's lookups per
second in run A and in run B, A ÷ B, and in each run the default's rate divided by the row's
Python peer's (paho-mqtt or kombu) in the same rounds. The peer is pure Python in both runs, so
its ratio compares two runs made on different machines or at different loads; the rates compare
only runs of one machine. A run in the matrix's earlier format counts as steady state only.
Prints a Markdown table (docs/compiled.md uses it for the compiled
and the pure build).

Figures: docs/compiled.md (the compiled and the pure build's whole runs side by side).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

PEERS = ("paho", "kombu")


def _load(path: str) -> dict[str, Any]:
    """A run's results; a run of the matrix's earlier format (steady state only, no paired
    ratios) as its steady phase, the peer's ratio then the ratio of the two medians."""
    data: dict[str, Any] = json.loads(Path(path).read_text())
    for row in data["results"].values():
        rates = row.get("rates", {})
        if rates and not any(isinstance(value, dict) for value in rates.values()):
            row["rates"] = {"steady": rates}
            default = rates.get("default")
            row["paired"] = {"steady": {p: default / rates[p] for p in PEERS if rates.get(p) and default}}
    return data


def _peer_ratio(row: dict[str, Any], phase: str) -> str:
    paired = row.get("paired", {}).get(phase, {})
    for peer in PEERS:
        if peer in paired:
            return f"{paired[peer]:,.2f}"
    return "-"


def _rate(row: dict[str, Any] | None, phase: str) -> float | None:
    if row is None:
        return None
    rate = row.get("rates", {}).get(phase, {}).get("default")
    return float(rate) if rate else None


def main(a_path: str, b_path: str) -> None:
    a, b = _load(a_path), _load(b_path)
    for name, run in (("A", a), ("B", b)):
        machine = run["machine"]
        print(f"{name}: {machine['cpu']}, {machine['cores']} cores, {machine['python']}, {machine['time']}")
    print()
    print("| row | phase | default, A | default, B | A ÷ B | default ÷ peer, A | default ÷ peer, B |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row_name, row_a in a["results"].items():
        row_b = b["results"].get(row_name)
        for phase in row_a.get("rates", {}):
            rate_a, rate_b = _rate(row_a, phase), _rate(row_b, phase)
            if rate_a is None:
                continue
            ratio = f"{rate_a / rate_b:.2f}" if rate_b else "-"
            shown_b = f"{rate_b:,.0f}" if rate_b else "-"
            peer_b = _peer_ratio(row_b, phase) if row_b else "-"
            print(
                f"| {row_name} | {phase} | {rate_a:,.0f} | {shown_b} | {ratio} | "
                f"{_peer_ratio(row_a, phase)} | {peer_b} |"
            )


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
