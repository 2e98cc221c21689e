"""The cost of the pattern algebra: one overlaps/covers call, and Matcher.overlapping at 100k.

    .venv/bin/python benchmarks/algebra.py [ROUNDS]

Per call (median of ROUNDS, default 5, of 2,000 calls each): ``Dialect.overlaps`` and
``Dialect.covers`` on typical pairs (MQTT ACL-style filters, AMQP patterns with several '#', a
NATS pair with '>'). Then ``Matcher.overlapping`` on the broker table of ``broker_api.py``
(``_common.broker_pairs``, 100,000 MQTT subscriptions): the default's walk of the trie against
the scan every other algorithm does (the naive one here), medians of 3; the answers are
compared.

Figures: README.md (``Matcher.overlapping`` at 100k subscriptions); no run is committed
(docs/performance.md, "Other experiments").
"""

from __future__ import annotations

import statistics
import sys
import time

from _common import broker_pairs

from topicmatch import Matcher, make_dialect

PAIRS = [
    ("mqtt", "a/+/c", "+/b/#"),
    ("mqtt", "sensors/#", "sensors/+/temp"),
    ("amqp", "#.a.#.b", "a.#.b.#"),
    ("amqp", "stock.*.nyse.#", "stock.#"),
    ("nats", "orders.>", "orders.*.eu"),
]


def main(rounds: int) -> None:
    for dialect, p, q in PAIRS:
        d = make_dialect(dialect)
        for name, call in (("overlaps", d.overlaps), ("covers", d.covers)):
            runs = []
            for _ in range(rounds):
                start = time.perf_counter()
                for _ in range(2_000):
                    call(p, q)
                runs.append((time.perf_counter() - start) / 2_000)
            micro = statistics.median(runs) * 1e6
            print(f"{dialect} {name:8s} {p!r:18s} {q!r:18s} {micro:8.1f} us  -> {call(p, q)}")
    pairs = broker_pairs(100_000)
    walked, scanned = Matcher[str](dialect="mqtt"), Matcher[str]("naive", "mqtt")
    walked.subscribe_many(pairs)
    scanned.subscribe_many(pairs)
    for pattern in ("devices/d42/cmd", "site/17/+/temp", "fleet/#", "+/+/+"):
        times = {}
        for name, m in (("walk (default)", walked), ("scan (naive)", scanned)):
            runs = []
            for _ in range(min(rounds, 3)):
                start = time.perf_counter()
                found = m.overlapping(pattern)
                runs.append(time.perf_counter() - start)
            times[name] = statistics.median(runs)
        assert walked.overlapping(pattern) == scanned.overlapping(pattern)
        walk, scan = times["walk (default)"], times["scan (naive)"]
        print(
            f"overlapping({pattern!r}) at 100k: {len(found):,} patterns; walk {walk * 1e3:,.2f} ms, "
            f"scan {scan * 1e3:,.0f} ms ({scan / walk:,.0f}x)"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
