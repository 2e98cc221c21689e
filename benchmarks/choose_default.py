"""Which algorithm should ``default`` be? Throughput and write cost of each, in one run.

Usage: ``.venv/bin/python benchmarks/choose_default.py [--messages N] [--repeat R]``

Workload: the study's throughput workload (topicmatch.bench.shapes.study_throughput). For each
algorithm: lookups per second through ``Matcher.lookup`` with the cache off (and, last, the
default with its cache), and the time to subscribe the 1,000 patterns; median of ``--repeat``
runs after one warm-up run. The machine, the Python version and the load average are printed
with the table, and every figure is also given as a ratio to the trie measured in the same run,
because the machines are shared and noisy.

Figures: none committed (docs/performance.md, "Other experiments"); the algorithms' rates
of the current run are the workload matrix's.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

from topicmatch import DEFAULT_CACHE_SIZE, Matcher
from topicmatch.bench.shapes import study_throughput


def measure(
    algorithm: str, patterns: list[str], topics: list[str], repeat: int, cache_size: int = 0
) -> tuple[float, float]:
    rates, builds = [], []
    for run in range(repeat + 1):
        extra = {"topics": sorted(set(topics))} if algorithm == "inverted_bitmap" else {}
        start = time.perf_counter()
        m = Matcher(algorithm, cache_size=cache_size, **extra)  # type: ignore[type-var]
        for i, p in enumerate(patterns):
            m.subscribe(p, i)
        built = time.perf_counter() - start
        lookup = m.lookup
        start = time.perf_counter()
        for t in topics:
            lookup(t)
        elapsed = time.perf_counter() - start
        if run:  # run 0 is the warm-up
            rates.append(len(topics) / elapsed)
            builds.append(built / len(patterns))
    return statistics.median(rates), statistics.median(builds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    patterns, topics = study_throughput(args.messages)
    print(
        f"# {platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; median of {args.repeat}"
    )
    results = {}
    for algorithm in ("inverted_bitmap", "optimized_bitmap", "trie", "cstrie"):
        results[algorithm] = measure(algorithm, patterns, topics, args.repeat)
    results["default (trie + cache)"] = measure("default", patterns, topics, args.repeat, DEFAULT_CACHE_SIZE)
    base_rate, base_build = results["trie"]
    print("| algorithm | lookups/s | vs trie | subscribe (us) | vs trie |")
    print("|---|---:|---:|---:|---:|")
    for algorithm, (rate, build) in results.items():
        ratios = f"{rate / base_rate:.2f} | {build * 1e6:.1f} | {build / base_build:.2f}"
        print(f"| {algorithm} | {rate:,.0f} | {ratios} |")


if __name__ == "__main__":
    main()
