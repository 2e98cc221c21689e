"""What each part of the default engine earns: the default against itself without one part.

    .venv/bin/python benchmarks/default_parts.py [ROUNDS] [ROWS] [--variants V[,V...]]

Variants, each a fresh matcher per round in a process of its own (so that no variant inherits
another's memory layout or warm caches), alternating in order round by round:

* ``default``: as shipped;
* ``no governor``: admission never judged (its window made longer than the run), so every miss
  records or stores: what the governor saves where nothing repeats;
* ``no memo``: the trie's walk unites with ``union_of``, never the memo;
* ``no cache``: ``Matcher(cache_size=0)`` (the memo stays);
* ``trie``: the plain trie;
* ``naive``: the naive scan, asked for by name (``--variants naive``), on small tables only.

Rows: ``topicmatch.bench.shapes`` at the workload matrix's sizes (``distinct`` 10,000 MQTT
filters with topics seen once, ``unmatched-once`` the unmatched row's filters with topics seen
once that match nobody, ``study``, ``zipf``, ``unmatched``, ``churn`` with its writes paced
among the lookups, ``fanout`` 100,000 subscribers on 10 filters). Printed per row: the median
lookups/s of each variant over the first 10,000 and the first 100,000 lookups of a fresh
matcher, and its ratio to the default (median of the rounds' ratios), then each variant's build
(ms) and its first lookup alone (µs): what a matcher builds lazily, its first lookup pays. A row
not in the default list is run when named: ``distinct-100k`` (the matrix's 100,000 filters,
topics seen once), ``subs-1M`` (its million AMQP subscriptions, topics seen once) and
``fanout-20k`` (20,000 subscribers on one filter, the matrix's row). ``--variants`` runs some
variants only (``default`` always: the ratios are to it), e.g. ``--variants trie`` for the
default against the trie alone. Thread CPU time, not wall time: another process on the machine
does not count against a variant.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from topicmatch import Matcher
from topicmatch._walk import union_of
from topicmatch.bench import shapes

VARIANTS = ("default", "no governor", "no memo", "no cache", "trie", "naive")
ROWS = ("distinct", "unmatched-once", "study", "zipf", "unmatched", "churn", "fanout")
WINDOWS = (10_000, 100_000)
WRITE_EVERY = 8  # churn: a subscribe or unsubscribe every this many lookups


def _shape(row: str) -> shapes.Shape:
    if row == "distinct":
        return shapes.distinct(10_000, 400_000)
    if row == "distinct-100k":  # asked for by name only
        return shapes.distinct(100_000, 400_000)
    if row == "unmatched-once":
        base = shapes.unmatched(20_000, 10)
        topics = [
            f"u{i}/{'/'.join(t.split('/')[1:])}" for i, t in enumerate(shapes.distinct(10, 400_000).topics)
        ]
        return shapes.Shape(row, "mqtt", base.pairs, topics, once=True)
    if row == "study":
        return shapes.study(200_000)
    if row == "zipf":
        return shapes.zipf(20_000, 200_000)
    if row == "unmatched":
        return shapes.unmatched(20_000, 200_000)
    if row == "churn":
        return shapes.churn(300_000, 200_000, 200_000 // WRITE_EVERY + 2)
    if row == "fanout":
        return shapes.fanout(100_000, 10, 200_000)
    if row == "fanout-20k":  # asked for by name only
        return shapes.fanout(20_000, 1, 200_000)
    if row == "subs-1M":  # asked for by name only: a build of a million takes 10-20 s a variant
        return shapes.million(1_000_000, 400_000)
    raise SystemExit(f"unknown row {row!r}")


def _matcher(variant: str, shape: shapes.Shape) -> Matcher[Any]:
    if variant in ("trie", "naive"):
        m: Matcher[Any] = Matcher(variant, shape.dialect)
    else:
        m = Matcher("default", shape.dialect, cache_size=0 if variant == "no cache" else None)
    m.subscribe_many(shape.pairs)
    index: Any = m._index
    if variant == "no memo":
        index._union = union_of
    if variant == "no governor":
        assert m._cache is not None
        m._cache.admission.left = 10**9  # never a window's end: never judged, never off
    return m


def forked(work: Callable[[], str]) -> str:
    """What ``work()`` returns, run in a child forked from this process: it shares the data made
    so far (a row's shape) and nothing it makes after, as each contender of the workload matrix.
    A child that fails prints its traceback, and this raises SystemExit."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code = 1
        try:
            os.write(write, work().encode())
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read) as out:
        text = out.read()
    _, status = os.waitpid(pid, 0)
    if status:
        raise SystemExit(f"a forked child failed (wait status {status})")
    return text


def _child(row: str, variant: str, round_: int) -> None:
    """One variant's run, in this process: prints its rates as JSON."""
    shape = _shape(row)
    start = time.thread_time()
    m = _matcher(variant, shape)
    built = time.thread_time() - start
    last = max(WINDOWS)
    if shape.once:
        start = (round_ * last) % (len(shape.topics) - last)
        topics = shape.topics[start : start + last]
    else:
        topics = shape.topics[:last]
    writes = iter(shape.writes)
    lookup = m.lookup
    gc.collect()
    out: dict[int, float] = {0: built}  # the build's time, not a rate
    began = time.thread_time()
    lookup(topics[0])
    out[1] = time.thread_time() - began  # the first lookup's time, not a rate
    for i, topic in enumerate(topics[1:], 2):
        lookup(topic)
        if shape.writes and not i % WRITE_EVERY:
            adding, pattern, subscriber = next(writes)
            (m.subscribe if adding else m.unsubscribe)(pattern, subscriber)
        if i in WINDOWS:
            out[i] = i / (time.thread_time() - began)
    print(json.dumps(out))


def main(rounds: int, rows: list[str], variants: tuple[str, ...]) -> None:
    for row in rows:
        rates: dict[str, dict[int, list[float]]] = {v: {w: [] for w in (0, 1, *WINDOWS)} for v in variants}
        for r in range(rounds):
            for variant in variants if r % 2 == 0 else variants[::-1]:
                run = subprocess.run(
                    [sys.executable, __file__, "--child", row, variant, str(r)],
                    capture_output=True,
                    text=True,
                    check=True,
                    env=os.environ,
                )
                for w, rate in json.loads(run.stdout).items():
                    rates[variant][int(w)].append(rate)
        for w in WINDOWS:
            base = rates["default"][w]
            cells = []
            for variant in variants:
                ratio = statistics.median(a / b for a, b in zip(rates[variant][w], base, strict=True))
                cells.append(f"{variant} {statistics.median(rates[variant][w]):,.0f}/s ({ratio:.2f})")
            print(f"{row}, first {w:,}: " + "; ".join(cells), flush=True)
        firsts = "; ".join(
            f"{v} {statistics.median(rates[v][0]) * 1e3:,.1f} / {statistics.median(rates[v][1]) * 1e6:,.0f}"
            for v in variants
        )
        print(f"{row}, the build, ms / the first lookup alone, µs: {firsts}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
        parser.add_argument("rounds", type=int, nargs="?", default=5, help="rounds (default 5)")
        parser.add_argument(
            "rows", nargs="?", default=",".join(ROWS), help="ROW[,ROW...] (default: " + ",".join(ROWS) + ")"
        )
        parser.add_argument(
            "--variants",
            default=",".join(VARIANTS[1:-1]),
            help="V[,V...] beside the default (default: all but naive)",
        )
        options = parser.parse_args()
        chosen = options.variants.split(",")
        if unknown := set(chosen) - set(VARIANTS):
            parser.error(f"unknown variants {sorted(unknown)}; choose among {', '.join(VARIANTS)}")
        main(
            options.rounds,
            options.rows.split(","),
            tuple(v for v in VARIANTS if v == "default" or v in chosen),
        )
