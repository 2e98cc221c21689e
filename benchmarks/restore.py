"""Restoring a broker's subscriptions: ``Matcher.load`` of a saved file against ``subscribe_many``
of the same pairs, and where the load's time goes.

    .venv/bin/python benchmarks/restore.py [SUBSCRIPTIONS] [--rounds R]

The table of ``broker_api.py`` (``_common.broker_pairs``: SUBSCRIPTIONS MQTT subscriptions,
default 1,000,000, from clients of 20 filters each), on the default matcher. Each contender runs
in a fresh process of its own and is timed in CPU time (``time.process_time``) around the one
call: ``subscribe_many`` of pairs already in memory (generated in the process before the clock
starts), or ``Matcher.load`` of the file (read, checked, built). R rounds (default 5), the
contenders alternated; the medians, their ratio, and the spread of an A/A pair (a second
``subscribe_many`` process per round against the first: the ratio of the two, lowest and
highest) beside it, which says how far apart two runs of the same thing fall here.

Then, in this process with the collector off, what reading and checking the file takes (its
SHA-256 and JSON, as ``Matcher.load`` reads it): the rest of a load builds the trie's nodes,
pattern tables and subscriber sets and the index of each subscriber's patterns, the objects
``subscribe_many`` makes too.

Figures: docs/performance.md, "Saving and loading".
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import broker_pairs

from topicmatch import Matcher

_CHILD = """
import sys, time
sys.path.insert(0, {benchmarks!r})
from _common import broker_pairs
from topicmatch import Matcher
how, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if how == "subscribe_many":
    pairs = broker_pairs(n)
    start = time.process_time()
    Matcher("default", "mqtt").subscribe_many(pairs)
else:
    start = time.process_time()
    Matcher.load(path)
print(time.process_time() - start)
"""


def _child(how: str, n: int, path: Path) -> float:
    code = _CHILD.format(benchmarks=str(Path(__file__).parent))
    done = subprocess.run(
        [sys.executable, "-c", code, how, str(n), str(path)], capture_output=True, text=True, check=True
    )
    return float(done.stdout)


def _reading(path: Path) -> float:
    """CPU seconds to read the file and check it as ``Matcher.load`` does: the SHA-256 of its
    header line and body, and the body's JSON (the file's format: topicmatch/_state_file.py)."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        with open(path, "rb") as file:
            file.readline()
            header = file.readline()
            file.readline()
            body = file.read()
        digest = hashlib.sha256(header)
        digest.update(body)
        digest.hexdigest()
        json.loads(body)
        return time.process_time() - start
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("subscriptions", nargs="?", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    n = args.subscriptions
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "subscriptions"
        matcher: Matcher[str] = Matcher("default", "mqtt")
        matcher.subscribe_many(broker_pairs(n))
        matcher.save(path)
        patterns = len(matcher.patterns())
        del matcher
        print(
            f"{n:,} subscriptions, {patterns:,} patterns; file {path.stat().st_size / 2**20:.1f} MiB",
            flush=True,
        )
        times: dict[str, list[float]] = {"subscribe_many": [], "subscribe_many (A/A)": [], "load": []}
        for r in range(args.rounds):
            order = list(times)
            for how in order[r % 3 :] + order[: r % 3]:
                times[how].append(_child(how.split()[0], n, path))
            print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
        many, load = statistics.median(times["subscribe_many"]), statistics.median(times["load"])
        aa = [a / b for a, b in zip(times["subscribe_many"], times["subscribe_many (A/A)"], strict=True)]
        print(
            f"subscribe_many {many:.2f} s, load {load:.2f} s (CPU, medians of {args.rounds}): "
            f"load {many / load:.2f}x faster; A/A spread {min(aa):.2f}-{max(aa):.2f}x"
        )
        print(f"of which reading and checking the file (this process, collector off): {_reading(path):.2f} s")


if __name__ == "__main__":
    main()
