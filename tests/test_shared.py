"""SharedGroups without a broker: the five policies, members that are away, leaving, errors
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


def test_hash_clientid_keeps_one_publisher_on_one_member() -> None:
    groups = _groups("hash_clientid")
    for publisher in ("p1", "p2", None):
        assert len({groups.choose(KEY, f"jobs/{n}", publisher) for n in range(20)}) == 1
    assert len({groups.choose(KEY, "jobs/1", f"p{n}") for n in range(60)}) == 3
    plan = groups.deliver("jobs/1", [KEY], "p1")
    assert plan == [groups.choose(KEY, "jobs/9", "p1")]


def test_sticky_keeps_its_member_until_it_leaves_and_forgets_it() -> None:
    groups = _groups("sticky", seed=3)
    first = groups.choose(KEY, "jobs/1")
    assert {groups.choose(KEY, f"jobs/{n}") for n in range(30)} == {first}
    assert first is not None
    assert groups.leave(SHARED, first) is False
    second = groups.choose(KEY, "jobs/1")
    assert second not in (None, first)
    assert {groups.choose(KEY, f"jobs/{n}") for n in range(30)} == {second}
    for member in ("m0", "m1", "m2"):
        groups.leave(SHARED, member)
    assert groups._sticky == {}  # nothing kept of a group that emptied
    groups.join(SHARED, first)  # a member rejoining starts no old choice
    assert groups.choose(KEY, "jobs/1") == first


@pytest.mark.parametrize("policy", ["round_robin", "random", "sticky"])
def test_members_that_are_away_are_passed_over_unless_all_are(policy: str) -> None:
    groups = _groups(policy, members=4, seed=5)
    away = {"m1", "m2"}
    picks = [groups.choose(KEY, "jobs/1", None, away.__contains__) for _ in range(40)]
    assert set(picks) <= {"m0", "m3"}
    if policy != "sticky":
        assert set(picks) == {"m0", "m3"}
    every = {"m0", "m1", "m2", "m3"}
    assert groups.choose(KEY, "jobs/1", None, every.__contains__) in every  # all away: a choice still


def test_round_robin_passes_over_in_its_queue_order() -> None:
    groups = _groups("round_robin", members=4)
    away = {"m1"}.__contains__
    assert [groups.choose(KEY, "j", None, away) for _ in range(5)] == ["m0", "m2", "m3", "m0", "m2"]
    everyone = {"m0", "m1", "m2", "m3"}.__contains__
    assert groups.members(KEY)[0] == "m3"
    assert groups.choose(KEY, "j", None, everyone) == "m3"  # all away: the queue's head, as if none were
    assert groups.members(KEY)[0] == "m0"


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
    with pytest.raises(ConfigurationError, match="publisher"):
        _groups("hash_clientid").choose(KEY, "jobs/1", 7)  # type: ignore[type-var]
    with pytest.raises(ConfigurationError, match="away"):
        _groups("round_robin").choose(KEY, "jobs/1", None, "m1")  # type: ignore[arg-type]
    with pytest.raises(InvalidPatternError):
        SharedGroups[str]().join("jobs/+", "a")  # not shared
    with pytest.raises(InvalidPatternError):
        ShareGroup.of("$share/g/a/#/b")
