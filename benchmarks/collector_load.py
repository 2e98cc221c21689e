"""What a matcher of N subscriptions costs CPython's cyclic collector, and what it costs to use.

    .venv/bin/python benchmarks/collector_load.py [ALGORITHM] [N] [--str] [--types] [--freeze]
    TOPICMATCH_PURE=1 .venv/bin/python benchmarks/collector_load.py default 1000000

ALGORITHM defaults to ``default``, N to 200,000. The table is the NATS server's mix of
``topicmatch.bench.shapes.burst`` (``svc<a>.<device>.<metric>``: 95 % literal, 5 % ending in
``*``, 1 in 10,000 ``svc<a>.>``), its subscribers ints (``--str``: the same as strings). One
process, in this order:

1. the process as it is (the shape's pairs and topics made, no matcher): one ``gc.collect()``,
   then the CPU time of a full ``gc.collect()``, median of 5: the control;
2. a matcher built with ``subscribe_many`` of all pairs but the last 10,000, which are then
   subscribed one by one: the first 5,000 with the collector paused, the last 5,000 with it on,
   as an application runs (*subscribe ns*, CPU time per pair, off / on: the difference is what
   the collections that ran meanwhile cost);
3. one ``gc.collect()``, then the objects the collector tracks that the matcher added
   (``len(gc.get_objects())`` against step 1: per subscription), and the CPU time of a full
   ``gc.collect()``, median of 5, against the control (*collect +ms*);
4. the resident set size the matcher added (``/proc/self/statm``; Linux only, else ``-``);
5. lookups of the shape's 50,000 subjects, all different and none seen before (first pass),
   then the same again (second pass: the default's cache may answer), CPU time;
6. the calls that make a container per subscription, CPU time, the collector on as an
   application runs it: ``subscriptions()``, ``patterns()`` and ``unsubscribe_many`` of the
   one-by-one pairs, then the same three with the caller's ``gc.disable()`` around them
   (*whole-state s*, on / off: equal where the library's own pause, ``collector_paused``,
   keeps the collections out).

``--freeze``: ``gc.collect()`` and ``gc.freeze()`` right after the bulk build, as an
application may do once it has loaded its subscriptions: the collector then leaves the objects
made so far alone (what steps 2, 3 and 6 then cost).

``--types`` prints the types of the tracked objects added, most common first (step 2 of what
to change: which objects the collector walks). Public API only.

Figures: docs/performance.md, "What the cyclic collector walks"; raw output in
docs/results/collector/.
"""

from __future__ import annotations

import gc
import os
import statistics
import sys
import time
from collections import Counter

from topicmatch import BUILD, Matcher
from topicmatch.bench import shapes

ONE_BY_ONE = 10_000
LOOKUPS = 50_000


def collect_ms() -> float:
    """The CPU time of one full collection, median of 5, in ms."""
    times = []
    for _ in range(5):
        start = time.process_time()
        gc.collect()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1e3


def rss() -> int | None:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return None


def main(argv: list[str]) -> None:
    words = [a for a in argv if not a.startswith("--")]
    algorithm = words[0] if words else "default"
    n = int(words[1]) if len(words) > 1 else 200_000
    shape = shapes.burst(n, 1000, LOOKUPS)
    pairs: list[tuple[str, object]] = list(shape.pairs)
    if "--str" in argv:
        pairs = [(pattern, f"c{subscriber}") for pattern, subscriber in pairs]
    topics = shape.topics
    gc.collect()
    before = gc.get_objects()
    tracked_before = {id(o) for o in before}
    control = collect_ms()
    rss_before = rss()

    matcher: Matcher[object] = Matcher(algorithm, dialect="nats")
    bulk, single = pairs[:-ONE_BY_ONE], pairs[-ONE_BY_ONE:]
    matcher.subscribe_many(bulk)
    if "--freeze" in argv:
        gc.collect()
        gc.freeze()
    subscribe_ns = []
    for half, collector in ((single[: ONE_BY_ONE // 2], False), (single[ONE_BY_ONE // 2 :], True)):
        if not collector:
            gc.disable()
        start = time.process_time()
        for pattern, subscriber in half:
            matcher.subscribe(pattern, subscriber)
        subscribe_ns.append((time.process_time() - start) / len(half) * 1e9)
        gc.enable()

    gc.collect()
    after = gc.get_objects()
    added = len(after) - len(before) - 1  # `before` itself is tracked now
    if "--types" in argv:
        counts = Counter(type(o).__qualname__ for o in after if id(o) not in tracked_before)
        for name, count in counts.most_common(12):
            print(f"  {name:<24} {count:>10,}  {count / n:.3f} per subscription")
    del after
    collect = collect_ms()
    rss_after = rss()
    memory = "-" if rss_before is None or rss_after is None else f"{(rss_after - rss_before) / n:.0f} B"

    rates = []
    for _ in range(2):
        start = time.process_time()
        for topic in topics:
            matcher.lookup(topic)
        rates.append(len(topics) / (time.process_time() - start))
    whole = []
    for collector in (True, False):
        if not collector:
            gc.disable()
        start = time.process_time()
        matcher.subscriptions()
        matcher.patterns()
        matcher.unsubscribe_many(single)
        whole.append(time.process_time() - start)
        gc.enable()
        matcher.subscribe_many(single)
    print(
        f"{BUILD} {algorithm} n={n:,} ({'str' if '--str' in argv else 'int'} subscribers"
        f"{', frozen after the bulk build' if '--freeze' in argv else ''}): "
        f"{added / n:.3f} tracked objects per subscription "
        f"({added:,}); full gc.collect() {collect:.1f} ms (control {control:.1f} ms, "
        f"+{collect - control:.1f}); RSS {memory} per subscription; "
        f"subscribe {subscribe_ns[0]:,.0f} / {subscribe_ns[1]:,.0f} ns (collector off / on); "
        f"lookups/s {rates[0]:,.0f} first, {rates[1]:,.0f} second; "
        f"whole-state {whole[0]:.2f} / {whole[1]:.2f} s (collector on / off); "
        f"load average {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
