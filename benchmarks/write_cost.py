"""What one write costs on a broker's table, with the cyclic collector on and off.

    .venv/bin/python benchmarks/write_cost.py [ROUNDS]
    PYTHONPATH=OTHER/src .venv/bin/python benchmarks/write_cost.py [ROUNDS]   # another version

The 100,000 subscriptions of ``broker_api.py`` (``_common.broker_pairs``: 5,000 MQTT clients of
20 filters), built with ``subscribe``; then, per round, 20,000 new device literals subscribed and
unsubscribed again (two new trie nodes each, pruned again): the mean time per write, for the
default and the trie, the collector on (as a program runs) and off (the structure's own cost).
Medians of ROUNDS (default 5). Public API only, so that the same script measures an older
checkout.

Figures: ``topicmatch._versions`` (what the write discipline costs a write); no run is
committed (docs/performance.md, "Other experiments").
"""

from __future__ import annotations

import gc
import statistics
import sys
import time

from _common import broker_pairs

from topicmatch import Matcher


def main(rounds: int) -> None:
    pairs = broker_pairs(100_000)
    extra = [(f"devices/x{i}/cmd", f"c{i}") for i in range(20_000)]
    for algorithm in ("default", "trie"):
        m = Matcher(algorithm, "mqtt")
        for pattern, client in pairs:
            m.subscribe(pattern, client)
        for collector in ("on", "off"):
            runs = []
            for _ in range(rounds):
                gc.collect()
                if collector == "off":
                    gc.disable()
                start = time.perf_counter()
                for pattern, client in extra:
                    m.subscribe(pattern, client)
                for pattern, client in extra:
                    m.unsubscribe(pattern, client)
                runs.append((time.perf_counter() - start) / (2 * len(extra)))
                gc.enable()
            print(
                f"{algorithm:8s} collector {collector:3s} {statistics.median(runs) * 1e6:6.2f} us per write"
            )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
