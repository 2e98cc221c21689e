"""topicmatch.compat.paho against paho-mqtt's own MQTTMatcher, through the same interface.

    .venv/bin/python benchmarks/paho_adapter.py [ROUNDS]

The MQTT rows of the workload matrix (``topicmatch.bench.shapes``): 10,000 IoT filters with
distinct topics looked up once each (``distinct-10k``), and Zipf-repeated topics of which 90 %
match no filter (``unmatched``, 20,000 subscriptions, 100,000 lookups), each filter stored with
``m[filter] = value`` and every topic looked up with ``list(m.iter_match(topic))``, as a paho
user's code does. A fresh matcher per round for the distinct topics (so that each is new to
it); rounds alternate which library goes first; medians of ROUNDS (default 5). The answers
are compared.

Figures: README.md (the paho adapter against paho-mqtt), raw results in
docs/results/paho-adapter/results.txt; ``topicmatch.compat.paho`` cites it.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from paho.mqtt.matcher import MQTTMatcher as PahoMatcher

from topicmatch.bench import shapes
from topicmatch.compat.paho import MQTTMatcher


def _filled(kind: type[Any], filters: list[str]) -> Any:
    m = kind()
    for i, f in enumerate(filters):
        m[f] = i
    return m


def main(rounds: int) -> None:
    rows = {
        "distinct-10k": shapes.distinct(10_000, 10_000 * rounds),
        "unmatched": shapes.unmatched(20_000, 100_000),
    }
    for name, shape in rows.items():
        filters = list(dict.fromkeys(p for p, _ in shape.pairs))
        rates: dict[str, list[float]] = {"paho": [], "topicmatch.compat.paho": []}
        kinds = {"paho": PahoMatcher, "topicmatch.compat.paho": MQTTMatcher}
        answers: dict[str, list[list[Any]]] = {}
        for r in range(rounds):
            topics = shape.topics[r * 10_000 : (r + 1) * 10_000] if shape.once else shape.topics
            for label in list(kinds)[r % 2 :] + list(kinds)[: r % 2]:
                m = _filled(kinds[label], filters)
                start = time.perf_counter()
                found = [list(m.iter_match(t)) for t in topics]
                rates[label].append(len(topics) / (time.perf_counter() - start))
                answers[label] = [sorted(f) for f in found]
            assert answers["paho"] == answers["topicmatch.compat.paho"], name
        paho = statistics.median(rates["paho"])
        ours = statistics.median(rates["topicmatch.compat.paho"])
        print(
            f"{name:13s} paho {paho:>10,.0f}/s  topicmatch.compat.paho {ours:>10,.0f}/s  ({ours / paho:.2f}x)"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
