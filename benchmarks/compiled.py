"""The compiled core against the pure one: the same source, both builds, one run.

    .venv/bin/python benchmarks/compiled.py [ROUNDS] [EXPERIMENT,...]

Two child processes run the same code: one on the compiled build, one with ``TOPICMATCH_PURE=1``
(docs/compiled.md). Each builds its matchers once, then the parent asks them for one round at a
time, alternately (which child goes first rotates with the round), so the machine's drift falls
on both; a figure is the median over ROUNDS (default 9) of the rounds' times, and a ratio the
median of the rounds' ratios (pure's time ÷ compiled's, or paho's ÷ topicmatch's in one child).
Every round uses topics neither child has looked up before. The experiments, on the workload
matrix's *distinct-10k* row (10,000 MQTT filters of 5 levels, every topic new) unless said:

* ``walk``: the trie: ``Matcher("trie").lookup`` (parse and walk), 2,000 topics a round;
* ``subscribe``: ``subscribe`` one pair at a time, 2,000 new filters a round into a fresh matcher
  that holds the row's 10,000 (trie and default); and ``unsubscribe`` of the same 2,000;
* ``dfa``: the DFA path of the Spark workers, ``Matcher.batch_walk()``: 2,000 topics a round
  walked level by level (``advance``) and their subscribers (``subscribers``), on the DFA the
  earlier rounds taught (*learnt*: the topics a child has walked before, again) and on a new one
  (*cold*: a write drops the DFA first); and *cold* again with the cyclic garbage collector
  paused, as the workers walk (a new DFA again; which of the two cold walks goes first
  alternates with the round). ``benchmarks/dfa_profile.py`` says where these walks spend their
  time;
* ``paho``: paho-mqtt's ``MQTTMatcher`` (a set of subscribers per filter, ``iter_match``) and
  the default: a *fresh* default (made this round; its first 2,000 lookups) and a *steady* one
  (made at the start, 200,000 lookups of distinct topics before the first round, and every
  round's since); 2,000 topics a round;
* ``memory``: bytes per subscription at 1,000,000 (``topicmatch bench memory``'s method: AMQP
  patterns of the ``realistic`` workload subscribed one by one under ``tracemalloc``), trie and
  default, once per build (not a timing: no rounds).

Figures: docs/compiled.md ("Measurements"); ``topicmatch._engine.walk`` cites its memory figure.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import topicmatch
from topicmatch import Matcher
from topicmatch.bench import shapes
from topicmatch.bench.contenders import build
from topicmatch.bench.shapes import realistic

PER_ROUND = 2_000
FILTERS = 10_000
STEADY = 200_000
EXPERIMENTS = ("walk", "subscribe", "dfa", "paho", "memory")


# -- the children ------------------------------------------------------------------------------
def _per_op(calls: Callable[[], int]) -> float:
    """Seconds per operation of ``calls`` (which makes them and says how many)."""
    start = time.perf_counter()
    n = calls()
    return (time.perf_counter() - start) / n


class _Child:
    """One build's side: matchers built once, a round measured on request."""

    def __init__(self, rounds: int) -> None:
        # Topics for the steady default's warm-up, then one slice per round, none repeated.
        self.shape = shapes.distinct(FILTERS, STEADY + PER_ROUND * (rounds + 1))
        self.spare = shapes.distinct(FILTERS + PER_ROUND * (rounds + 1), 0, seed=23).pairs[FILTERS:]
        self.made: dict[str, Any] = {}

    def topics(self, r: int) -> list[str]:
        start = STEADY + PER_ROUND * r
        return self.shape.topics[start : start + PER_ROUND]

    def round(self, experiment: str, r: int) -> dict[str, float]:
        gc.collect()
        result: dict[str, float] = getattr(self, experiment)(r)
        return result

    def walk(self, r: int) -> dict[str, float]:
        if "trie" not in self.made:
            self.made["trie"] = trie = Matcher("trie", "mqtt")
            trie.subscribe_many(self.shape.pairs)
        trie = self.made["trie"]
        lookup, looked = trie.lookup, self.topics(r)
        return {"trie lookup": _per_op(lambda: sum(1 for t in looked if lookup(t) is not None))}

    def subscribe(self, r: int) -> dict[str, float]:
        pairs = self.spare[r * PER_ROUND : (r + 1) * PER_ROUND]
        out = {}
        for algorithm in ("trie", "default"):
            m = Matcher(algorithm, "mqtt")
            m.subscribe_many(self.shape.pairs)
            gc.collect()  # the table is old, as a broker's is: the collector does not walk it again
            out[f"{algorithm} subscribe"] = _per_op(lambda: sum(1 for p, s in pairs if m.subscribe(p, s)))  # noqa: B023
            out[f"{algorithm} unsubscribe"] = _per_op(lambda: sum(1 for p, s in pairs if m.unsubscribe(p, s)))  # noqa: B023
        return out

    def dfa(self, r: int) -> dict[str, float]:
        if "dfa" not in self.made:
            self.made["dfa"] = m = Matcher(dialect="mqtt", cache_size=0)
            m.subscribe_many(self.shape.pairs)
            self.made["walked"] = []
        m, walked = self.made["dfa"], self.made["walked"]
        fresh = [[t.split("/")[level] for t in self.topics(r)] for level in range(5)]

        def batch(levels: list[list[str]]) -> int:
            # As a worker: advance every topic a level at a time, then each one's subscribers
            # (the words of each level are split beforehand, as Arrow does for the workers).
            walk = m.batch_walk()
            states = [walk.root] * len(levels[0])
            for words in levels:
                states = walk.advance(states, words)
            return len(list(map(walk.subscribers, states)))

        def drop() -> None:
            m.subscribe("drop/the/dfa", "x")  # a write: the next batch walk starts a new DFA
            m.unsubscribe("drop/the/dfa", "x")

        def paused() -> float:
            gc.disable()
            try:
                return _per_op(lambda: batch(fresh))
            finally:
                gc.enable()

        out = {"dfa learnt": _per_op(lambda: batch(walked or fresh))}
        for cold in ("collector", "paused") if r % 2 else ("paused", "collector"):
            drop()
            if cold == "collector":
                out["dfa cold"] = _per_op(lambda: batch(fresh))
            else:
                out["dfa cold, gc paused"] = paused()
        walked[:] = fresh
        return out

    def paho(self, r: int) -> dict[str, float]:
        if "paho" not in self.made:
            self.made["paho"] = build("paho", "mqtt", self.shape.pairs, lambda: (), float("inf"))
            self.made["steady"] = steady = Matcher(dialect="mqtt")
            steady.subscribe_many(self.shape.pairs)
            for topic in self.shape.topics[:STEADY]:
                steady.lookup(topic)
        fresh = Matcher(dialect="mqtt")
        fresh.subscribe_many(self.shape.pairs)
        gc.collect()
        topics = self.topics(r)
        out = {}
        for name, lookup in (
            ("paho", self.made["paho"].lookup),
            ("default fresh", fresh.lookup),
            ("default steady", self.made["steady"].lookup),
        ):
            out[name] = _per_op(lambda: sum(1 for t in topics if lookup(t) is not None))  # noqa: B023
        return out

    def memory(self, r: int) -> dict[str, float]:
        n = 1_000_000
        patterns, _ = realistic(n, 1000, seed=3)
        subscribers = list(range(10_000, 10_000 + n))
        out = {}
        for algorithm in ("trie", "default"):
            gc.collect()
            tracemalloc.start()
            m = Matcher(algorithm)
            for pattern, subscriber in zip(patterns, subscribers, strict=True):
                m.subscribe(pattern, subscriber)
            gc.collect()
            out[f"{algorithm} bytes per subscription"] = tracemalloc.get_traced_memory()[0] / n
            tracemalloc.stop()
            del m
        return out


def child(rounds: int) -> None:
    side = _Child(rounds)
    print(json.dumps({"build": topicmatch.BUILD}), flush=True)
    for line in sys.stdin:
        experiment, r = line.split()
        print(json.dumps(side.round(experiment, int(r))), flush=True)


# -- the parent --------------------------------------------------------------------------------
class _Side:
    def __init__(self, pure: bool, rounds: int) -> None:
        env = {**os.environ, "TOPICMATCH_PURE": "1" if pure else ""}
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--child", str(rounds)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.stdin, self.stdout = self.process.stdin, self.process.stdout
        self.build = json.loads(self.stdout.readline())["build"]

    def ask(self, experiment: str, r: int) -> dict[str, float]:
        self.stdin.write(f"{experiment} {r}\n")
        self.stdin.flush()
        result: dict[str, float] = json.loads(self.stdout.readline())
        return result

    def close(self) -> None:
        self.stdin.close()
        self.process.wait(timeout=60)


def main(rounds: int, experiments: list[str]) -> None:
    sides = [_Side(False, rounds), _Side(True, rounds)]
    assert [s.build for s in sides] == ["compiled", "pure"], [s.build for s in sides]
    load = os.getloadavg()[0]
    print(f"# compiled against pure, {rounds} rounds; load average {load:.2f} at the start")
    try:
        for experiment in experiments:
            if experiment == "memory":
                results = [side.ask("memory", 0) for side in sides]
                print("memory (bytes per subscription at 1,000,000):")
                for name in results[0]:
                    print(f"  {name:34s} compiled {results[0][name]:7.0f}   pure {results[1][name]:7.0f}")
                continue
            times: list[list[dict[str, float]]] = [[], []]
            for r in range(rounds + 1):
                order = [0, 1] if r % 2 else [1, 0]
                got = {i: sides[i].ask(experiment, r) for i in order}
                if r:  # round 0 warms up
                    for i in (0, 1):
                        times[i].append(got[i])
            print(f"{experiment}: µs per operation, compiled / pure (pure ÷ compiled)")
            for name in times[0][0]:
                compiled = [t[name] for t in times[0]]
                pure = [t[name] for t in times[1]]
                ratio = statistics.median(p / c for p, c in zip(pure, compiled, strict=True))
                print(
                    f"  {name:24s} {statistics.median(compiled) * 1e6:8.2f} / "
                    f"{statistics.median(pure) * 1e6:8.2f}   ({ratio:.2f}x)"
                )
            if experiment == "paho":
                for i, build in enumerate(("compiled", "pure")):
                    for name in ("default fresh", "default steady"):
                        ratio = statistics.median(t["paho"] / t[name] for t in times[i])
                        print(f"  {build}: paho's time ÷ {name}'s: {ratio:.2f}")
    finally:
        for side in sides:
            side.close()
    print(f"# load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(int(sys.argv[2]))
    else:
        main(
            int(sys.argv[1]) if len(sys.argv) > 1 else 9,
            sys.argv[2].split(",") if len(sys.argv) > 2 else list(EXPERIMENTS),
        )
