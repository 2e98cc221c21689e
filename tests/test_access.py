"""AccessRules without a broker: the rules of Mosquitto's default ACL check, one at a time
(tests/brokers/test_access_mosquitto.py compares them with a real Mosquitto)."""

from __future__ import annotations

import pytest

from topicmatch import AccessRules, InvalidPatternError, InvalidTopicError

RULES = AccessRules(
    """
# anonymous clients
topic read public/#
user alice
topic readwrite alice/#
topic deny alice/secret/#
user bob
topic write +/in
pattern read users/%u/#
pattern readwrite devices/%c/#
"""
)


def test_user_rules_with_deny_first() -> None:
    assert RULES.may_publish("alice/x", username="alice", client_id="c")
    assert not RULES.may_receive("alice/secret/k", username="alice", client_id="c")
    assert not RULES.may_receive("public/x", username="alice", client_id="c")  # anonymous only
    assert RULES.may_receive("public/x", username=None, client_id="c")
    assert RULES.may_publish("x/in", username="bob", client_id="c")
    assert not RULES.may_receive("x/in", username="bob", client_id="c")  # write, not read


def test_patterns_substitute_the_names() -> None:
    assert RULES.may_receive("users/bob/inbox", username="bob", client_id="c")
    assert not RULES.may_receive("users/bob/inbox", username="alice", client_id="c")
    assert not RULES.may_receive("users//inbox", username=None, client_id="c")  # %u: not anonymous
    assert RULES.may_publish("devices/d7/state", username=None, client_id="d7")


def test_a_name_with_a_wildcard_gets_no_pattern_rule() -> None:
    assert not RULES.may_receive("devices/x/state", username=None, client_id="+")
    assert not RULES.may_publish("devices/x/state", username="a#", client_id="x")
    assert RULES.may_publish("alice/x", username="alice", client_id="#")  # its own rules still apply


def test_subscribe_needs_one_covering_rule_and_no_overlapping_deny() -> None:
    assert RULES.may_subscribe("alice/x/+", username="alice", client_id="c")
    assert not RULES.may_subscribe("alice/+/x", username="alice", client_id="c")  # alice/secret/x
    assert not RULES.may_subscribe("alice/#", username="alice", client_id="c")  # alice/secret is denied
    assert not RULES.may_subscribe("#", username="alice", client_id="c")
    assert RULES.may_subscribe("$share/g/devices/c/#", username=None, client_id="c")
    assert not RULES.may_subscribe("devices/+/#", username=None, client_id="c")


def test_dollar_topics_need_a_dollar_rule() -> None:
    rules = AccessRules("topic read #\ntopic read $SYS/broker/#\n")
    assert not rules.may_receive("$SYS/load", username=None, client_id="c")
    assert rules.may_receive("$SYS/broker/uptime", username=None, client_id="c")
    assert not rules.may_subscribe("$SYS/#", username=None, client_id="c")


def test_bad_questions_are_the_dialects_errors() -> None:
    with pytest.raises(InvalidTopicError):
        RULES.may_publish("a/+", username=None, client_id="c")
    with pytest.raises(InvalidPatternError):
        RULES.may_subscribe("a/#/b", username=None, client_id="c")
