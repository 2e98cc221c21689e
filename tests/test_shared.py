"""SharedGroups without a broker: the three policies, leaving, errors
(tests/brokers/test_shared_mosquitto.py compares round-robin with Mosquitto)."""

from __future__ import annotations

from collections import Counter

import pytest

from topicmatch import ConfigurationError, InvalidPatternError, Matcher, SharedGroups, ShareGroup

SHARED = "$share/g/jobs/+"
KEY = ShareGroup("g", "jobs/+")


def _groups(policy: str, members: int = 3, seed: int | None = None) -> SharedGroups[str]:
    groups = SharedGroups[str](policy, seed=seed)
    for n in range(members):
        assert groups.join(SHARED, f"m{n}") == KEY
    return groups


def test_round_robin_takes_turns_and_survives_a_leave() -> None:
    groups = _groups("round_robin")
    assert [groups.choose(KEY, "jobs/1") for _ in range(4)] == ["m0", "m1", "m2", "m0"]
    assert groups.leave(SHARED, "m1") is False  # m1 was next
    assert [groups.choose(KEY, "jobs/1") for _ in range(3)] == ["m2", "m0", "m2"]
    assert groups.leave(SHARED, "m0") is False
    assert groups.leave(SHARED, "m2") is True  # the group is empty: unsubscribe its key
    assert groups.choose(KEY, "jobs/1") is None
    assert len(groups) == 0


def test_hash_keeps_one_topic_on_one_member() -> None:
    groups = _groups("hash")
    for topic in ("jobs/1", "jobs/2", "jobs/3"):
        assert len({groups.choose(KEY, topic) for _ in range(20)}) == 1
    assert len({groups.choose(KEY, f"jobs/{n}") for n in range(60)}) == 3


def test_random_is_seeded_and_uses_every_member() -> None:
    picks = [_groups("random", seed=7).choose(KEY, "jobs/1") for _ in range(3)]
    assert len(set(picks)) == 1  # the same seed, the same first choice
    groups = _groups("random", seed=7)
    counts = Counter(groups.choose(KEY, "jobs/1") for _ in range(3000))
    assert set(counts) == {"m0", "m1", "m2"}
    assert min(counts.values()) > 800


def test_exactly_one_member_of_each_group_per_message() -> None:
    m, groups = Matcher[object](dialect="mqtt"), SharedGroups[str]()
    for filter_, client in [(SHARED, "a"), (SHARED, "b"), ("$share/g/jobs/#", "c"), ("$share/h/jobs/+", "d")]:
        m.subscribe(filter_, groups.join(filter_, client))
    m.subscribe("jobs/+", "plain")
    for n in range(10):
        got = groups.deliver(f"jobs/{n}", m.lookup(f"jobs/{n}"))
        assert got.count("plain") == 1
        assert len(got) == 4
        assert len({"a", "b"} & set(got)) == 1
        assert {"c", "d"} <= set(got)


def test_errors() -> None:
    with pytest.raises(ConfigurationError):
        SharedGroups("fastest")
    with pytest.raises(InvalidPatternError):
        SharedGroups[str]().join("jobs/+", "a")  # not shared
    with pytest.raises(InvalidPatternError):
        ShareGroup.of("$share/g/a/#/b")
