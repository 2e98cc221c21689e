"""What the default's lookup costs beyond the walk where nothing repeats: its quiet path, timed.

    .venv/bin/python benchmarks/quiet_path.py            # the compiled build
    TOPICMATCH_PURE=1 .venv/bin/python benchmarks/quiet_path.py

Where admission waits and nothing is cached (``ResultCache.quiet``), ``Matcher.lookup`` adds to
the index's walk a load, a test, a decrement and a store on the cache, and a second test after the
walk. This times one lookup of a topic that matches nobody (the cheapest walk: its first word is
not in the trie) on the default held in that state, and on ``Matcher(cache_size=0)``, which has
the same index and no cache: the difference is the quiet path's cost (one lookup in
``QUIET_CHUNK`` takes the whole path and hands on the next chunk, as in a real wait). ``timeit``,
best of 7 runs of 100,000 lookups, three times in alternation; one process (both matchers hold the
unmatched row's 20,000 filters; the walk reads only the root's dict).
"""

from __future__ import annotations

import functools
import timeit

from topicmatch import BUILD, Matcher
from topicmatch._cache import ADMIT_WINDOW, QUIET_CHUNK
from topicmatch.bench import shapes


def main() -> None:
    pairs = shapes.unmatched(20_000, 10).pairs
    default: Matcher[int] = Matcher("default", "mqtt")
    default.subscribe_many(pairs)
    plain: Matcher[int] = Matcher("default", "mqtt", cache_size=0)
    plain.subscribe_many(pairs)
    cache = default._cache
    assert cache is not None
    # Admission waiting, nothing cached: the state this measures, reached as traffic reaches it (a
    # window of topics seen once), its wait then made longer than the run and counted as the cache
    # counts it (QUIET_CHUNK at a time, then one miss through the whole path).
    for i in range(ADMIT_WINDOW):
        default.lookup(f"u{i}/once")
    if cache.admission.on or cache.quiet != QUIET_CHUNK - 1:
        raise SystemExit("admission is not waiting: this measures nothing")
    cache._quiet_rest = 10**12
    topic = "u123/a/b/c"
    print(f"one lookup of a topic nobody matches, ns ({BUILD} build):")
    for _ in range(3):
        for name, matcher in (("default, quiet", default), ("no cache", plain)):
            best = min(timeit.repeat(functools.partial(matcher.lookup, topic), number=100_000, repeat=7))
            print(f"  {name}: {best / 100_000 * 1e9:.1f}")
    if cache.admission.on or cache.hot or cache.warm:
        raise SystemExit("the default left the state measured: the figures above are not its quiet path")


if __name__ == "__main__":
    main()
