"""The modules beside the matcher, compiled or not: access rules, captures, shared groups, TopicIndex.

    .venv/bin/python benchmarks/compiled_modules.py [ROUNDS]

Whether a module outside the lookup path gains from being compiled (docs/compiled.md, "Which
modules are compiled"). Child processes alternate, ROUNDS of each (default 3): one runs the
build installed here, one the pure build (``TOPICMATCH_PURE=1``); each reports the median of 5
repetitions of every operation, and the figure is the median over the rounds, in µs per call.
To see what compiling one module adds to a compiled core, remove it from pyproject.toml's
``[tool.topicmatch] compiled``, reinstall (``pip install -e .``), run this again and compare the
two runs' compiled columns (how the list was chosen).

Operations: ``AccessRules.may_publish`` / ``may_subscribe`` against 55 users' rules;
``capture`` of a ``+``/``#`` filter; ``Matcher.captures`` over 400 MQTT filters;
``SharedGroups.deliver`` of a lookup that finds a group; and ``TopicIndex`` over 100,000 stored
topics: ``set`` into a fresh index, ``get``, a narrow ``match`` (literal words first) and a
broad one (``+/+/s3/#``, answered by a scan).

Figures: docs/compiled.md ("Which modules are compiled").
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, time
from topicmatch import AccessRules, Matcher, SharedGroups, TopicIndex, capture, make_dialect, BUILD

rules = AccessRules(
    "user alice\ntopic readwrite home/#\ntopic deny home/secret/#\npattern read devices/%c/#\n"
    "pattern write devices/%u/%c/#\n" + "".join(f"user u{i}\ntopic read t{i}/+/x\n" for i in range(50))
)
topics = [f"home/room{i % 50}/lamp{i}" for i in range(2000)]
mqtt = make_dialect("mqtt")
m = Matcher(dialect="mqtt")
for i in range(200):
    m.subscribe(f"sensors/+/t{i}", f"s{i}")
    m.subscribe(f"sensors/r{i}/#", f"a{i}")
groups = SharedGroups()
for i in range(20):
    key = groups.join(f"$share/g{i}/jobs/+", "w1")
    groups.join(f"$share/g{i}/jobs/+", "w2")
    m.subscribe(f"$share/g{i}/jobs/+", key)
jobs = [f"jobs/{i}" for i in range(2000)]
stored = [f"dev/{i % 1000}/s{i % 7}/{i}" for i in range(100_000)]
index = TopicIndex("mqtt")
for t in stored:
    index.set(t, 1)


def per_call(calls):
    start = time.perf_counter()
    n = calls()
    return (time.perf_counter() - start) / n * 1e6


def fresh_sets():
    fresh = TopicIndex("mqtt")
    return sum(1 for t in stored if fresh.set(t, 1) or 1)


def each(items, call):
    return per_call(lambda: sum(1 for item in items if call(item) or 1))


names = {"username": "alice", "client_id": "c"}
out = {}
for _ in range(5):
    got = {
        "AccessRules.may_publish": each(topics, lambda t: rules.may_publish(t, **names)),
        "AccessRules.may_subscribe": each(topics[:500], lambda t: rules.may_subscribe(t, **names)),
        "capture": each(range(2000), lambda i: capture("sensors/+/#", f"sensors/r{i}/a/b", mqtt)),
        "Matcher.captures": each(range(500), lambda i: m.captures(f"sensors/r{i % 200}/t{i % 200}")),
        "SharedGroups.deliver": each(jobs, lambda t: groups.deliver(t, m.lookup(t))),
        "TopicIndex.set": per_call(fresh_sets),
        "TopicIndex.get": each(stored[:20000], index.get),
        "TopicIndex.match narrow": each(range(2000), lambda i: index.match(f"dev/{i % 1000}/s3/+")),
        "TopicIndex.match broad": each(range(5), lambda i: index.match(f"+/+/s{i}/#")),
    }
    for name, value in got.items():
        out.setdefault(name, []).append(value)
medians = {name: statistics.median(values) for name, values in out.items()}
ours = [module for name, module in list(sys.modules.items()) if name.startswith("topicmatch.")]
loaded = [getattr(module, "__file__", None) or "" for module in ours]
print(json.dumps({"build": BUILD, "compiled": sum(path.endswith(".so") for path in loaded)} | medians))
"""


def main(rounds: int) -> None:
    runs: dict[str, list[dict[str, float]]] = {}
    modules = 0
    for r in range(rounds):
        for pure in (True, False) if r % 2 else (False, True):
            env = {**os.environ, "TOPICMATCH_PURE": "1" if pure else ""}
            done = subprocess.run(
                [sys.executable, "-c", CHILD],
                env=env,
                capture_output=True,
                text=True,
                check=True,
                timeout=900,
            )
            got = json.loads(done.stdout)
            modules = max(modules, got.pop("compiled"))
            runs.setdefault(got.pop("build"), []).append(got)
    print(f"# µs per call, median of {rounds} rounds; load average {os.getloadavg()[0]:.2f} at the end")
    print(f"# installed build: {modules} of the modules this run loads compiled")
    builds = list(runs)
    for name in runs[builds[0]][0]:
        medians = {b: statistics.median(run[name] for run in runs[b]) for b in builds}
        ratio = medians["pure"] / medians["compiled"] if "compiled" in medians else float("nan")
        cells = "  ".join(f"{b} {medians[b]:10.2f}" for b in builds)
        print(f"  {name:26s} {cells}   pure ÷ compiled {ratio:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
