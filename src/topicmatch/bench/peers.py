"""Experiment 7: the same lookups through the Python libraries people use today.

* paho-mqtt's ``MQTTMatcher`` (a trie of dicts walked by recursive generators), MQTT dialect;
* amqtt's broker matching (``Broker._matches`` over every subscription, as its broker does on
  each publish), MQTT dialect;
* kombu's topic exchange (``TopicExchange``: one compiled regular expression per binding, tested
  in turn), AMQP dialect.

Patterns and topics come from ``topicmatch.bench.shapes.realistic`` (Zipf words, ~13 % wildcards,
``#`` only last so every peer can express them), translated to each dialect. Every peer's answer
is compared with topicmatch's on every topic it looked up; disagreements are counted and shown,
never skipped. Rates: lookups per second through each library's own call, median of runs, each
run bounded in time; topicmatch runs with its default matcher, with and without the result cache.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

from .. import Matcher
from . import charts
from .report import Progress, Report, fmt_int
from .shapes import realistic
from .timing import median

__all__ = ["run"]


def _to_mqtt(amqp: str) -> str:
    return "/".join("+" if w == "*" else w for w in amqp.split("."))


def _paho(patterns: list[str]) -> Callable[[str], set[Hashable]]:
    from paho.mqtt.matcher import MQTTMatcher  # noqa: PLC0415 - optional peer

    m = MQTTMatcher()  # type: ignore[no-untyped-call]
    for i, p in enumerate(patterns):
        try:
            m[p].add(i)
        except KeyError:
            m[p] = {i}

    def lookup(topic: str) -> set[Hashable]:
        out: set[Hashable] = set()
        for subs in m.iter_match(topic):  # type: ignore[no-untyped-call]
            out |= subs
        return out

    return lookup


def _amqtt(patterns: list[str]) -> Callable[[str], set[Hashable]]:
    from amqtt.broker import Broker  # noqa: PLC0415 - optional peer

    class _Host:  # what Broker._matches needs of its instance: a logger
        logger = logging.getLogger("amqtt.bench")

    host, matches = _Host(), Broker._matches
    table: dict[str, set[int]] = {}
    for i, p in enumerate(patterns):
        table.setdefault(p, set()).add(i)
    items = list(table.items())

    def lookup(topic: str) -> set[Hashable]:
        out: set[Hashable] = set()
        for a_filter, subs in items:
            if matches(host, topic, a_filter):
                out |= subs
        return out

    return lookup


def _kombu(patterns: list[str]) -> Callable[[str], set[Hashable]]:
    from kombu.transport.virtual.exchange import TopicExchange  # noqa: PLC0415 - optional peer

    exchange = TopicExchange(None)  # type: ignore[no-untyped-call]
    table = [exchange.prepare_bind(i, "bench", p, None) for i, p in enumerate(patterns)]  # type: ignore[no-untyped-call]

    def lookup(topic: str) -> set[Hashable]:
        return set(exchange.lookup(table, "bench", topic, None))  # type: ignore[no-untyped-call]

    return lookup


def _measure(
    lookup: Callable[[str], Any], topics: list[str], budget: float, repeat: int
) -> tuple[float, int]:
    rates, done = [], len(topics)
    for _ in range(repeat):
        start = time.perf_counter()
        n = 0
        for topic in topics:
            lookup(topic)
            n += 1
            if n % 64 == 0 and time.perf_counter() - start > budget:
                break
        rates.append(n / (time.perf_counter() - start))
        done = min(done, n)
    return median(rates), done


def run(out: Path, repeat: int, quick: bool, progress: Progress) -> Path:
    sizes = (1_000,) if quick else (1_000, 10_000)
    lookups = 2_000 if quick else 20_000
    budget = 0.5 if quick else 3.0
    patterns, topics = realistic(sizes[-1], lookups, seed=13)
    report = Report(
        "peers",
        out,
        "topicmatch and the Python libraries people use",
        {"sizes": sizes, "lookups": lookups, "repeat": repeat, "budget_s": budget},
    )
    report.text(__doc__ or "")
    rows, disagreements, chart_series = [], [], {}
    for n in sizes:
        amqp = patterns[:n]
        mqtt = [_to_mqtt(p) for p in amqp]
        mqtt_topics = [t.replace(".", "/") for t in topics]
        contenders: dict[str, tuple[str, Callable[[str], Any], list[str]]] = {}
        for cache, label in ((None, "topicmatch default"), (0, "topicmatch default, no cache")):
            for dialect, pats, tops in (("mqtt", mqtt, mqtt_topics), ("amqp", amqp, topics)):
                m = Matcher(dialect=dialect, cache_size=cache)
                for i, p in enumerate(pats):
                    m.subscribe(p, i)
                contenders[f"{label} ({dialect})"] = (dialect, m.lookup, tops)
        contenders["paho-mqtt MQTTMatcher (mqtt)"] = ("mqtt", _paho(mqtt), mqtt_topics)
        contenders["amqtt broker (mqtt)"] = ("mqtt", _amqtt(mqtt), mqtt_topics)
        contenders["kombu TopicExchange (amqp)"] = ("amqp", _kombu(amqp), topics)
        # The answers are checked against matchers of their own, never measured: checking them
        # with a measured one ran a run's worth of lookups through it before its own runs, and
        # the uncached default's DFA then started them one run ahead of the cached default's.
        truth: dict[str, Callable[[str], Any]] = {}
        for dialect, pats in (("mqtt", mqtt), ("amqp", amqp)):
            checker = Matcher("trie", dialect=dialect, cache_size=0)
            checker.subscribe_many((p, i) for i, p in enumerate(pats))
            truth[dialect] = checker.lookup
        rates: dict[str, float] = {}
        for name, (dialect, lookup, tops) in contenders.items():
            progress(f"{n:,} subscriptions: {name}")
            rate, done = _measure(lookup, tops, budget, repeat)
            wrong = [
                (t, lookup(t), truth[dialect](t))
                for t in tops[:done]
                if set(lookup(t)) != set(truth[dialect](t))
            ]
            rates[name] = rate
            reference = rates.get(f"topicmatch default ({dialect})", rate)
            rows.append(
                [
                    fmt_int(n),
                    name,
                    fmt_int(rate),
                    f"{reference / rate:,.1f}",
                    fmt_int(done),
                    fmt_int(len(wrong)),
                ]
            )
            report.result(
                f"{n}/{name}", {"lookups_per_s": rate, "looked_up": done, "disagreements": len(wrong)}
            )
            source = mqtt if dialect == "mqtt" else amqp
            shown: dict[str, tuple[Any, Any]] = {}
            for topic, theirs, ours in wrong:
                if topic not in shown and len(shown) < 3:
                    shown[topic] = (theirs, ours)
            for topic, (theirs, ours) in shown.items():
                missing = sorted({source[i] for i in set(ours) - set(theirs)})[:3]
                extra = sorted({source[i] for i in set(theirs) - set(ours)})[:3]
                where = f"{name}, {n:,} subscriptions, topic `{topic}`"
                disagreements.append(f"- {where}: misses {missing}, wrongly matches {extra}")
        chart_series[f"{n:,} subscriptions"] = list(rates.values())
        names = list(rates)
    report.table(
        [
            "subscriptions",
            "matcher",
            "lookups/s",
            "topicmatch default is x faster",
            "looked up",
            "disagreements",
        ],
        rows,
    )
    report.text(
        "### Where a peer disagrees with topicmatch (first examples)\n\n"
        + ("\n".join(disagreements) or "No disagreement.")
    )
    fig = charts.grouped_bars(
        names,
        chart_series,
        "lookups / s (log)",
        "topicmatch and its Python peers: lookups per second",
        log=True,
    )
    report.chart("peers", fig, "Lookups per second, topicmatch and its Python peers (log scale)")
    return report.write()
