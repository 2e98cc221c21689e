"""What several scripts of benchmarks/ share: a broker's table and the workload matrix's rows.

Not a benchmark: the scripts import it (``from _common import ...``, run from anywhere: Python
puts a script's folder first on ``sys.path``), so that no script imports another. Public names
of topicmatch only, as every script (tests/test_architecture.py).

* :func:`broker_pairs`, :func:`broker_topics`: the MQTT table of a broker or gateway written in
  Python (``broker_api.py``, ``write_cost.py``, ``algebra.py``): ``n / 20`` clients of 20
  filters each, 60 % a device's own literal (``devices/d123/cmd``), 30 % one level wild
  (``site/17/+/temp``), 10 % a fleet's subtree (``fleet/3/#``), and the topics published to it.
* :func:`matrix_shape`: a row of the workload matrix (``topicmatch bench workloads``) at its
  sizes, for the scripts that measure one row outside the matrix's harness (``instructions.py``).
"""

from __future__ import annotations

import random

from topicmatch.bench import shapes

CLIENT_FILTERS = 20

#: The rows :func:`matrix_shape` builds, under the workload matrix's names (``unmatched-once``:
#: the unmatched row's 20,000 filters with topics seen once that match nobody).
MATRIX_ROWS = ("distinct-10k", "distinct-100k", "unmatched-once", "unmatched", "zipf", "study")


def broker_pairs(n: int, seed: int = 5) -> list[tuple[str, str]]:
    """``n`` (filter, client) pairs: ``n / 20`` clients of 20 filters each (module docstring)."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        client = f"client-{i // CLIENT_FILTERS}"
        kind = rng.random()
        if kind < 0.6:
            pattern = f"devices/d{rng.randrange(n)}/cmd"
        elif kind < 0.9:
            pattern = f"site/{rng.randrange(500)}/+/{rng.choice(('temp', 'hum', 'co2'))}"
        else:
            pattern = f"fleet/{rng.randrange(100)}/#"
        pairs.append((pattern, client))
    return pairs


def broker_topics(n: int, count: int, seed: int = 6) -> list[str]:
    """``count`` topics published to the table of :func:`broker_pairs` ``(n)``."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.5:
            out.append(f"devices/d{rng.randrange(n)}/cmd")
        elif kind < 0.9:
            out.append(f"site/{rng.randrange(500)}/room{rng.randrange(50)}/{rng.choice(('temp', 'hum'))}")
        else:
            out.append(f"fleet/{rng.randrange(100)}/truck{rng.randrange(1000)}/gps")
    return out


def matrix_shape(row: str) -> shapes.Shape:
    """The workload matrix's ``row`` (one of :data:`MATRIX_ROWS`) at the matrix's sizes."""
    if row == "distinct-10k":
        return shapes.distinct(10_000, 400_000)
    if row == "distinct-100k":
        return shapes.distinct(100_000, 400_000)
    if row == "unmatched-once":
        base = shapes.unmatched(20_000, 10)
        topics = [
            f"u{i}/{'/'.join(t.split('/')[1:])}" for i, t in enumerate(shapes.distinct(10, 400_000).topics)
        ]
        return shapes.Shape(row, "mqtt", base.pairs, topics, once=True)
    if row == "unmatched":
        return shapes.unmatched(20_000, 200_000)
    if row == "zipf":
        return shapes.zipf(20_000, 200_000)
    if row == "study":
        return shapes.study(200_000)
    raise SystemExit(f"unknown row {row!r}; choose from {', '.join(MATRIX_ROWS)}")
