"""What the dialects' parsers cost per pattern and per topic off the lookup's fast path.

    .venv/bin/python benchmarks/parse_cost.py
    PYTHONPATH=OTHER/src .venv/bin/python benchmarks/parse_cost.py   # another version

Per dialect, three patterns (a literal, one with a one-word wildcard, one with the tail
wildcard) through ``parse_pattern`` (what every subscribe pays), and the literal through
``parse_topic`` (the full validation, which the lookup's ``topic_parser`` skips for ordinary
topics): nanoseconds per call, the best of 7 repeats. Public API only (``make_dialect``), so the
same script measures an older checkout.

Figures: none committed (docs/performance.md, "Other experiments").
"""

from __future__ import annotations

import functools
import timeit
from collections.abc import Callable

from topicmatch import make_dialect

CASES = {
    "amqp": ["stock.nasdaq.aapl", "stock.*.aapl", "stock.#"],
    "mqtt": ["sensors/k7/temp", "sensors/+/temp", "$share/g/a/#"],
    "nats": ["orders.eu.new", "orders.*.new", "orders.>"],
}


def best(call: Callable[[], object], number: int) -> float:
    """Seconds per call of ``call``, the best of 7 repeats of ``number`` calls."""
    return min(timeit.repeat(call, number=number, repeat=7)) / number


def main() -> None:
    for name, patterns in CASES.items():
        dialect = make_dialect(name)
        per_pattern = best(functools.partial(_all, dialect.parse_pattern, patterns), 20_000) / len(patterns)
        per_topic = best(functools.partial(dialect.parse_topic, patterns[0]), 60_000)
        print(f"{name}  parse_pattern {per_pattern * 1e9:5.0f} ns  parse_topic {per_topic * 1e9:5.0f} ns")


def _all(parse: Callable[[str], object], texts: list[str]) -> None:
    for text in texts:
        parse(text)


if __name__ == "__main__":
    main()
