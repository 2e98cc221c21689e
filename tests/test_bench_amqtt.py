"""The amqtt experiment's pieces that its figures rest on: the mix of filters (each published
topic matches exactly one, checked with paho's own matcher) and the broker's CPU time read from
``/proc`` (checked against the kernel's answer through ``os.times``)."""

from __future__ import annotations

import os
import sys

import pytest

from topicmatch.bench import amqtt_routing
from topicmatch.bench.amqtt_routing import HASH_EVERY, broker_cpu_s, filters

paho_client = pytest.importorskip("paho.mqtt.client")


def test_each_published_topic_matches_exactly_its_own_filter() -> None:
    n = 2 * HASH_EVERY + 50  # two '#' filters among them
    wanted = filters(n)
    for j in range(n):
        topic = f"bench/d{j}/temp"
        matching = [i for i, f in enumerate(wanted) if paho_client.topic_matches_sub(f, topic)]
        assert matching == [j], topic


def test_the_filters_are_a_mix_of_literal_and_wildcard() -> None:
    wanted = filters(10_000)
    last = [f.rsplit("/", 1)[1] for f in wanted]
    assert last.count("temp") == 5_000
    assert last.count("#") == 10_000 // (2 * HASH_EVERY)
    assert last.count("+") == 5_000 - 10_000 // (2 * HASH_EVERY)
    assert len(set(wanted)) == len(wanted)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_cpu_time_is_the_kernels_user_plus_system_time() -> None:
    tick = 1 / os.sysconf("SC_CLK_TCK")
    total = 0
    for k in range(3_000_000):  # some CPU time of this process, so that a wrong field shows
        total += k % 7
    before = os.times()
    got = broker_cpu_s(os.getpid())
    after = os.times()
    assert total > 0
    assert before.user + before.system - tick <= got <= after.user + after.system + tick
    assert got > 5 * tick


def test_the_cpu_time_of_no_process_is_an_error() -> None:
    with pytest.raises(FileNotFoundError):
        broker_cpu_s(2**22 + 1)  # above the kernel's largest PID


def test_a_ratio_comes_with_the_range_its_rounds_allow() -> None:
    def rows(*values: float) -> dict[str, object]:
        return {"x": sorted(values)[len(values) // 2], "rounds": [{"x": v} for v in values]}

    assert amqtt_routing._ratio(rows(2.0, 3.0, 4.0), rows(1.0, 1.5, 2.0), "x") == "2.00x (1.00-4.00x)"
    assert amqtt_routing._ratio(rows(30.0), rows(1.0), "x") == "30.0x (30.0-30.0x)"
    assert amqtt_routing._ratio(rows(1.0), rows(0.0), "x") == "n/a"
